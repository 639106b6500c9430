/// Pacing of reduced-accuracy reports: one report per `interval` for each user (ARCHITECTURE.md "Pacing
/// and quotas") — never per connection, unit or program, so that reconnecting, connecting many times, a
/// fresh systemd unit or a renamed copy of a program gets no more reports; the same report goes to each
/// of the user's reduced clients.
///
/// Core Location sends approximate locations a few times an hour; a report a second would show when the
/// client crosses a grid line of the reduced position (`LocationFudger`). Pure value: the caller keeps
/// the clock.
///
/// After a client is told the fix was lost (at its due time), the fix's return must not show either: its next
/// report is due only on a grid from that notice — whole intervals after it, for `window` each — not at the first
/// fix after the interval, which went out within milliseconds of the receiver regaining its fix (found by a helper
/// attacking the daemon as uid 1). A report puts the cadence back to "an interval after the last report".
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
    /// Per key: its last report (or, `afterNotice`, the fix-loss notice since, whose grid it is on) and when.
    private var last: [Key: (at: ContinuousClock.Instant, report: UInt64, afterNotice: Bool)] = [:]

    /// How long after each instant of the grid after a notice a report may still go: two and a half cycles of a 1 Hz
    /// receiver, so that one missed epoch does not skip the instant.
    public static let window = Duration.milliseconds(2500)

    /// - Parameter capacity: how many clients to remember before pruning (4096 by default).
    public init(capacity: Int = 4096) {
        self.capacity = capacity
    }

    /// Whether report number `report` may go to `key` at `now`: the same report it already had (another of
    /// its connections), or the first after `interval` since its last.
    public func allows(_ key: Key, report: UInt64, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        guard let entry = last[key] else { return true }
        return entry.report == report || Self.due(entry, now: now, interval: interval)
    }

    /// Whether report number `report` going to `key` at `now` would start a new interval: it is due, and it
    /// is not the report `key` last had (that one's interval started when it was first given).
    public func startsInterval(_ key: Key, report: UInt64, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        guard let entry = last[key] else { return true }
        return entry.report != report && Self.due(entry, now: now, interval: interval)
    }

    /// Whether `key`'s next report is due at `now`: none yet, or `interval` since its last.
    public func isDue(_ key: Key, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        timeUntilDue(key, now: now, interval: interval) == .zero
    }

    /// How long from `now` until `key`'s next report is due: zero when it is (none yet, `interval` since its last,
    /// or after a notice in a window of its grid), else what is left of `interval` (after a notice, the time to the
    /// grid's next instant). It depends only on when `key` last got a report or notice — never on the fix — so
    /// telling it to the client tells nothing its messages did not.
    public func timeUntilDue(_ key: Key, now: ContinuousClock.Instant, interval: Duration) -> Duration {
        guard let entry = last[key] else { return .zero }
        let elapsed = now - entry.at
        if elapsed < interval { return interval - elapsed }
        if Self.due(entry, now: now, interval: interval) { return .zero }
        return interval - Self.sinceInstant(elapsed, interval: interval)
    }

    /// Records that report number `report` went to `key` at `now` (a second connection getting the same
    /// report does not restart the interval).
    public mutating func record(_ key: Key, report: UInt64, now: ContinuousClock.Instant, interval: Duration) {
        if last[key]?.report == report { return }
        if last.count >= capacity { last = last.filter { now - $0.value.at < interval } }
        last[key] = (now, report, false)
    }

    /// Records that `key` was told at `now` that the fix was lost: its next report is due on the grid from now. A key
    /// that never had a report keeps none (its first report comes with the first fix, whose time it tells anyway).
    public mutating func recordNotice(_ key: Key, now: ContinuousClock.Instant) {
        guard let entry = last[key] else { return }
        last[key] = (now, entry.report, true)
    }

    /// Whether `entry`'s next report is due at `now`: `interval` after it; after a notice, in a window of its grid.
    private static func due(_ entry: (at: ContinuousClock.Instant, report: UInt64, afterNotice: Bool), now: ContinuousClock.Instant,
                            interval: Duration) -> Bool {
        let elapsed = now - entry.at
        guard elapsed >= interval else { return false }
        return !entry.afterNotice || interval <= window || sinceInstant(elapsed, interval: interval) <= window
    }

    /// How long after the grid's latest instant (whole intervals after its start) `elapsed` since its start is.
    static func sinceInstant(_ elapsed: Duration, interval: Duration) -> Duration {
        let (es, ea) = elapsed.components, (is_, ia) = interval.components
        // In nanoseconds: an Int64 holds 292 years of them.
        let e = es * 1_000_000_000 + ea / 1_000_000_000, i = is_ * 1_000_000_000 + ia / 1_000_000_000
        return .nanoseconds(i > 0 ? e % i : 0)
    }
}
