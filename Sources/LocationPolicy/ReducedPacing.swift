/// Pacing of reduced-accuracy reports: one report per `interval` for each user (ARCHITECTURE.md "Pacing
/// and quotas") — never per connection, unit or program, so that reconnecting, connecting many times, a
/// fresh systemd unit or a renamed copy of a program gets no more reports; the same report goes to each
/// of the user's reduced clients.
///
/// Core Location sends approximate locations a few times an hour; a report a second would show when the
/// client crosses a grid line of the reduced position (`LocationFudger`). Pure value: the caller keeps
/// the clock.
public struct ReducedPacing: Sendable {
    /// Whom pacing counts for: the kernel-verified uid alone. The systemd unit is named freely
    /// (`systemd-run --user --scope` makes a new one each time), and so, in effect, is the executable: a
    /// user can copy a program under any name (a security review reset the pacing with renamed copies of
    /// python), so all of a user's programs share one cadence.
    public struct Key: Hashable, Sendable {
        public var uid: UInt32

        public init(uid: UInt32) {
            self.uid = uid
        }

        /// The key of a client identity.
        public init(_ identity: ClientIdentity) {
            self.init(uid: identity.uid)
        }
    }

    /// The most clients remembered; beyond it, entries whose interval has passed are forgotten.
    public let capacity: Int
    private var last: [Key: (at: ContinuousClock.Instant, report: UInt64)] = [:]

    /// - Parameter capacity: how many clients to remember before pruning (4096 by default).
    public init(capacity: Int = 4096) {
        self.capacity = capacity
    }

    /// Whether report number `report` may go to `key` at `now`: the same report it already had (another of
    /// its connections), or the first after `interval` since its last.
    public func allows(_ key: Key, report: UInt64, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        guard let entry = last[key] else { return true }
        return entry.report == report || now - entry.at >= interval
    }

    /// Whether report number `report` going to `key` at `now` would start a new interval: it is due, and it
    /// is not the report `key` last had (that one's interval started when it was first given).
    public func startsInterval(_ key: Key, report: UInt64, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        guard let entry = last[key] else { return true }
        return entry.report != report && now - entry.at >= interval
    }

    /// Whether `key`'s next report is due at `now`: none yet, or `interval` since its last.
    public func isDue(_ key: Key, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        timeUntilDue(key, now: now, interval: interval) == .zero
    }

    /// How long from `now` until `key`'s next report is due: zero when it is (none yet, or `interval`
    /// since its last), else what is left of `interval`. It depends only on when `key` last got a
    /// report — never on the fix — so telling it to the client tells nothing its reports did not.
    public func timeUntilDue(_ key: Key, now: ContinuousClock.Instant, interval: Duration) -> Duration {
        guard let entry = last[key] else { return .zero }
        return max(.zero, interval - (now - entry.at))
    }

    /// Records that report number `report` went to `key` at `now` (a second connection getting the same
    /// report does not restart the interval).
    public mutating func record(_ key: Key, report: UInt64, now: ContinuousClock.Instant, interval: Duration) {
        if last[key]?.report == report { return }
        if last.count >= capacity { last = last.filter { now - $0.value.at < interval } }
        last[key] = (now, report)
    }
}
