#if canImport(Glibc)
import Glibc
#endif
import CSystemdLogin
import Dispatch
import LocationPosix

/// Whether a user is at the machine, as systemd-logind tells it through libsystemd (sd-login(3)): "in
/// use", for When In Use, means the user has an active session — one in the foreground of a seat.
/// libsystemd is loaded on the first call (CSystemdLogin): the front asks only once its policy depends
/// on login sessions (`PolicyState.dependsOnLoginSessions`).
///
/// `state(of:)` is the one funnel to logind: tests put their session state there by substituting
/// libsystemd's own `sd_uid_get_state` and `sd_login_monitor_*` (an `LD_PRELOAD` library, which the
/// loader resolves first, as for a linked library), not anything of ours.
enum LoginSessions {
    /// The login state of `uid`, one of logind's words: `active` (logged in, with at least one session
    /// in the foreground), `online` (logged in, none in the foreground), `lingering`, `offline`,
    /// `closing` — or a word a newer logind adds. Nil when logind cannot tell (not running, the call
    /// failed, libsystemd cannot be loaded). The corresponding C call is `sd_uid_get_state`.
    static func state(of uid: UInt32) -> String? {
        var raw: UnsafeMutablePointer<CChar>? = nil
        guard locationd_sd_uid_get_state(uid_t(uid), &raw) >= 0, let raw else { return nil }
        defer { free(raw) }
        return String(cString: raw)
    }

    /// True when `uid`'s user has an active session (state `active`); false for every other state, an
    /// unknown one, or no answer: fail closed, a When-In-Use client then gets nothing.
    static func isInUse(_ uid: UInt32) -> Bool { state(of: uid) == "active" }

    /// Why libsystemd cannot be loaded (dlerror(3)'s text), or nil when it is; loads it if not yet tried.
    static var libraryFailure: String? { locationd_sd_login_load().map { String(cString: $0) } }
}

/// Tells when users' login states change, without polling: logind's monitor for the `uid` category
/// (sd_login_monitor_new(3)) is a file descriptor that becomes readable on a change.
final class LoginMonitor: @unchecked Sendable {
    private let source: DispatchSourceRead

    /// Starts watching; `changed` runs on `queue` after each change. Nil when logind cannot be watched
    /// (the call failed: no logind, no /run/systemd, libsystemd cannot be loaded).
    init?(queue: DispatchQueue, changed: @escaping @Sendable () -> Void) {
        var made: OpaquePointer? = nil
        guard locationd_sd_login_monitor_new("uid", &made) >= 0, let monitor = made else { return nil }
        let fd = locationd_sd_login_monitor_get_fd(monitor)
        guard fd >= 0 else {
            locationd_sd_login_monitor_unref(monitor)
            return nil
        }
        let handle = UInt(bitPattern: monitor)
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler {
            // Flushing re-arms the descriptor; the states are asked afresh by `changed`.
            _ = OpaquePointer(bitPattern: handle).map { locationd_sd_login_monitor_flush($0) }
            changed()
        }
        source.setCancelHandler { _ = OpaquePointer(bitPattern: handle).map { locationd_sd_login_monitor_unref($0) } }
        source.resume()
    }

    deinit { source.cancel() }
}

/// Whether logind is asked about users' login states, and its monitor of them: one owner for both. Until
/// `watch`, nobody is in use and nothing is asked (nor libsystemd loaded).
final class LoginWatch: Sendable {
    private let state = Locked<(asked: Bool, monitor: LoginMonitor?)>((false, nil))

    /// From now on users' states are asked; `changed` runs on `queue` after each change logind tells.
    /// - Returns: false when logind cannot be watched (states are then asked, never told of changes).
    func watch(queue: DispatchQueue, changed: @escaping @Sendable () -> Void) -> Bool {
        let monitor = LoginMonitor(queue: queue, changed: changed)
        state.withLock { $0 = (true, monitor) }
        return monitor != nil
    }

    /// Whether `uid`'s user has an active login session; false, without asking, before `watch`.
    func isInUse(_ uid: UInt32) -> Bool {
        state.withLock { $0.asked } && LoginSessions.isInUse(uid)
    }
}
