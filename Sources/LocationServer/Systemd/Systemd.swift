#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import LocationCore
import LocationPosix

/// Why the socket systemd passed cannot be used.
public enum SocketActivationError: Error, Sendable, CustomStringConvertible {
    /// The passed descriptors could not be taken (a malformed `LISTEN_PID`, `LISTEN_FDS` or `LISTEN_FDNAMES`).
    case listenFDs(errno: Errno)
    /// Descriptors were passed, but none is a listening `AF_UNIX` `SOCK_STREAM` socket.
    case noUnixStreamSocket(count: Int)

    /// What went wrong, for the daemon's exit message.
    public var description: String {
        switch self {
        case .listenFDs(let e):
            return "cannot take the sockets systemd passed (LISTEN_FDS): \(e)"
        case .noUnixStreamSocket(let n):
            return "systemd passed \(n) descriptor(s) (LISTEN_FDS), none a listening AF_UNIX SOCK_STREAM socket; "
                + "the socket unit needs ListenStream=/path"
        }
    }
}

/// Socket activation (sd_listen_fds(3)): the listening socket systemd, or `systemd-socket-activate`,
/// opened for the daemon and passed as descriptor 3 onwards with `LISTEN_FDS` and `LISTEN_PID`.
public enum SocketActivation {
    /// The sockets systemd passed: the Unix socket, and the gpsd front's TCP listeners.
    public struct Inherited: Sendable {
        public var unix: ListeningSocket
        /// Listening TCP sockets named `gpsd` (`FileDescriptorName=gpsd`, systemd/locationd-gpsd.socket).
        public var gpsd: [TCPListener]
        /// The listening Unix socket named `nmea` (`FileDescriptorName=nmea`): the NMEA socket for GeoClue.
        public var nmea: ListeningSocket?
    }

    /// Takes the listening sockets passed by systemd, when the daemon was started that way.
    ///
    /// The first passed descriptor that is a listening `AF_UNIX` `SOCK_STREAM` socket is the client socket
    /// — unless named `nmea`, which is the NMEA socket; listening TCP sockets named `gpsd`
    /// (`FileDescriptorName=`) are the gpsd front's; any other is closed, with a warning
    /// (`SystemdProtocol.takePassedDescriptors`, as sd_listen_fds_with_names(3)). `LISTEN_*` are removed
    /// from the environment, and the descriptors are close-on-exec, so no child inherits them.
    /// - Parameters:
    ///   - configuredPath: the config's `socket`, to warn when the passed socket is bound elsewhere.
    ///   - log: where warnings go.
    /// - Returns: the sockets, or nil when no descriptor was passed (`LISTEN_FDS` unset, or meant for
    ///   another process). The Unix socket's path is from getsockname(2) (nil for an abstract or unnamed one).
    /// - Throws: `SocketActivationError` when descriptors were passed but no Unix socket among them.
    public static func inheritedListeners(configuredPath: String, log: Log) throws(SocketActivationError) -> Inherited? {
        let passed: [(fd: Int32, name: String)]
        do {
            guard let descriptors = try SystemdProtocol.takePassedDescriptors() else { return nil }
            passed = descriptors
        } catch {
            throw .listenFDs(errno: error)
        }
        var chosen: ListeningSocket? = nil
        var gpsd: [TCPListener] = []
        var nmea: ListeningSocket?
        for (fd, name) in passed {
            let unix = SystemdProtocol.isListeningStreamSocket(fd, family: AF_UNIX)
            if name == "nmea", nmea == nil, unix {
                nmea = ListeningSocket(inherited: fd, path: boundPath(fd))
            } else if chosen == nil, unix {
                let path = boundPath(fd)
                if path != configuredPath {
                    log.warning("the socket systemd passed is not the configured one; serving on it",
                                ["socket": path ?? "(abstract or unnamed)", "config.socket": configuredPath])
                }
                chosen = ListeningSocket(inherited: fd, path: path)
            } else if name == "gpsd", SystemdProtocol.isListeningStreamSocket(fd, family: AF_INET) {
                gpsd.append(TCPListener(inherited: fd))
            } else {
                log.warning("closing a descriptor systemd passed: not a listening AF_UNIX SOCK_STREAM socket (the first), nor a TCP one named gpsd, nor a Unix one named nmea",
                            ["fd": String(fd), "name": name])
                FileDescriptorOps.close(fd)
            }
        }
        guard let chosen else {
            gpsd.forEach { $0.close() }
            nmea?.close(unlinking: false)
            throw .noUnixStreamSocket(count: passed.count)
        }
        return Inherited(unix: chosen, gpsd: gpsd, nmea: nmea)
    }

    /// The filesystem path a Unix socket is bound to (getsockname(2)); nil for an abstract or unnamed one.
    static func boundPath(_ fd: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let r = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard r == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let offset = MemoryLayout.offset(of: \sockaddr_un.sun_path)!
        let pathLength = Int(length) - offset
        guard pathLength > 0 else { return nil }
        let path: [UInt8] = withUnsafeBytes(of: &address.sun_path) { Array($0.prefix(pathLength)) }
        guard let first = path.first, first != 0 else { return nil }  // abstract namespace
        return String(decoding: path.prefix(while: { $0 != 0 }), as: UTF8.self)
    }
}

/// Tells the service manager how the daemon is doing over `$NOTIFY_SOCKET` (sd_notify(3)): readiness,
/// a status line, watchdog keep-alives, reloading and stopping. Without `NOTIFY_SOCKET` (not run by
/// systemd with `Type=notify`) every call does nothing.
///
/// The periodic part — `STATUS=` when the fix mode or the client count changes, at most once a second,
/// and `WATCHDOG=1` at half of `WatchdogSec=` — runs on the main queue and asks the status closure,
/// which goes through the socket server's queue, each time: a keep-alive thus proves that both the main
/// queue (signals, reload) and the server answer, and a stuck daemon is restarted by systemd.
///
/// Sound as `@unchecked Sendable`: its mutable state (`lastStatus`, `timers`) is touched only on the main
/// queue, where its timers fire and where `start` is called; the rest is immutable.
public final class SystemdNotifier: @unchecked Sendable {
    /// True when `NOTIFY_SOCKET` is set.
    public let isEnabled: Bool
    /// Half of `WatchdogSec=` in seconds (sd_watchdog_enabled(3)), or nil when no watchdog is wanted.
    public let watchdogInterval: Double?
    /// The least time between two `STATUS=` updates, seconds.
    public let statusInterval: Double
    let log: Log
    // Main queue only.
    private var lastStatus: String?
    private var timers: [DispatchSourceTimer] = []

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` (which, when set, must be this process).
    /// - Parameters:
    ///   - statusInterval: seconds between checks for a changed status line.
    ///   - log: for a failing notification socket (logged once, at debug level after that).
    public init(statusInterval: Double = 1, log: Log) {
        isEnabled = getenv("NOTIFY_SOCKET") != nil
        // A malformed WATCHDOG_USEC or WATCHDOG_PID asks for no keep-alives, as sd_watchdog_enabled's error does.
        watchdogInterval = ((try? SystemdProtocol.watchdogMicroseconds()) ?? nil).map { Double($0) / 2e6 }
        self.statusInterval = statusInterval
        self.log = log
    }

    /// Sends `assignments` (newline-separated `KEY=value`; `SystemdProtocol.notify`, as sd_notify(3)).
    /// - Returns: true when it was sent; false when not run under systemd or the send failed.
    @discardableResult
    public func notify(_ assignments: String) -> Bool {
        guard isEnabled else { return false }
        do {
            return try SystemdProtocol.notify(assignments)
        } catch {
            log.debug("sd_notify failed", ["errno": error.description])
            return false
        }
    }

    /// `READY=1` with the current status: the receivers are opened and the socket listens. Also ends a
    /// reload. Call on the main queue.
    public func ready(status: String) {
        lastStatus = status
        notify("READY=1\nSTATUS=\(status)")
    }

    /// `RELOADING=1` (with `MONOTONIC_USEC`, as systemd 253's `Type=notify-reload` wants it); the
    /// reload ends with `ready(status:)`.
    public func reloading() {
        // sd_notify(3) wants CLOCK_MONOTONIC itself, which on Linux is not the clock ContinuousClock
        // reads (CLOCK_BOOTTIME counts suspended time too).
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let usec = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        notify("RELOADING=1\nSTATUS=Reloading the configuration\nMONOTONIC_USEC=\(usec)")
    }

    /// `STOPPING=1`: the daemon is shutting down.
    public func stopping() {
        notify("STOPPING=1\nSTATUS=Stopping")
    }

    /// Starts the status updates and the watchdog keep-alives on the main queue.
    /// - Parameter status: the current status line (fix mode, clients); must answer promptly.
    public func startPeriodicUpdates(status: @escaping @Sendable () -> String) {
        guard isEnabled else { return }
        let statusTimer = DispatchSource.makeTimerSource(queue: .main)
        statusTimer.schedule(deadline: .now() + statusInterval, repeating: statusInterval, leeway: .milliseconds(100))
        statusTimer.setEventHandler { [weak self] in
            guard let self else { return }
            let text = status()
            if text != self.lastStatus {
                self.lastStatus = text
                self.notify("STATUS=\(text)")
            }
        }
        statusTimer.resume()
        timers.append(statusTimer)
        if let interval = watchdogInterval {
            let watchdog = DispatchSource.makeTimerSource(queue: .main)
            watchdog.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(Int(interval * 50)))
            watchdog.setEventHandler { [weak self] in
                _ = status()  // the server's queue answers
                self?.notify("WATCHDOG=1")
            }
            watchdog.resume()
            timers.append(watchdog)
            log.debug("watchdog keep-alives", ["interval": "\(interval)s"])
        }
    }

    /// Stops the periodic updates.
    public func stopPeriodicUpdates() {
        for timer in timers { timer.cancel() }
        timers.removeAll()
    }

    /// The status line: fix mode, the receiver it comes from, and the number of clients.
    /// - Parameters:
    ///   - fix: the last published fix (nil before the first).
    ///   - receivers: how many receivers are configured.
    ///   - clients: connected clients.
    public static func statusText(fix: Fix?, receivers: Int, clients: Int) -> String {
        let mode: String
        switch fix?.mode {
        case .threeDimensional?: mode = "3D fix"
        case .twoDimensional?: mode = "2D fix"
        case .noFix?, nil: mode = receivers == 0 ? "No receiver configured" : "No fix"
        }
        let device = fix.flatMap { $0.mode.hasPosition ? $0.device : nil }.map { " from \($0)" } ?? ""
        return "\(mode)\(device); \(clients) client\(clients == 1 ? "" : "s")"
    }
}
