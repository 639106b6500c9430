/// How many audit records of one kind a user may cause per minute; the rest are counted, and the next
/// recorded event says how many were left out.
///
/// The audit file is bounded, so a user repeating a refused request could otherwise push every earlier
/// record — who saw the location — out of it. Pure value: the caller keeps the clock.
public struct AuditBudget: Sendable {
    /// What the caller should do with one event.
    public enum Admission: Equatable, Sendable {
        /// Record it; `omittedBefore` events of this user were left out in the window before.
        case record(omittedBefore: Int)
        /// Leave it out (counted).
        case omit
    }

    /// Records per user and window.
    public let perWindow: Int
    /// The window's length.
    public let window: Duration
    private var users: [UInt32: (start: ContinuousClock.Instant, recorded: Int, omitted: Int)] = [:]

    /// - Parameters:
    ///   - perWindow: records per user in each window (20 by default).
    ///   - window: the window (one minute by default).
    public init(perWindow: Int = 20, window: Duration = .seconds(60)) {
        self.perWindow = perWindow
        self.window = window
    }

    /// Whether an event caused by `uid` at `now` is recorded.
    public mutating func admit(uid: UInt32, now: ContinuousClock.Instant) -> Admission {
        var entry = users[uid] ?? (start: now, recorded: 0, omitted: 0)
        var omittedBefore = 0
        if now - entry.start >= window {
            omittedBefore = entry.omitted
            entry = (start: now, recorded: 0, omitted: 0)
        }
        defer {
            if users.count >= 4096 { users = users.filter { now - $0.value.start < window } }
            users[uid] = entry
        }
        guard entry.recorded < perWindow else {
            entry.omitted += 1
            return .omit
        }
        entry.recorded += 1
        return .record(omittedBefore: omittedBefore)
    }
}
