/// Pacing of reduced-accuracy reports: one report per `interval` for each user (ARCHITECTURE.md "Pacing
/// and quotas") — never per connection, unit or program, so that reconnecting, connecting many times, a
/// fresh systemd unit or a renamed copy of a program gets no more reports; the same report goes to each
/// of the user's reduced clients.
///
/// Core Location sends approximate locations a few times an hour; a report a second would show when the
/// client crosses a grid line of the reduced position (`LocationFudger`). Pure value: the caller keeps
/// the clock.
///
/// The cadence is a fixed grid: reports are due at the first report's time plus whole intervals, each for
/// `window` after its instant, and a due moment missed (no fix then) waits for the next instant. When reports
/// were simply due from `interval` after the last one on, the first fix after a loss went out at once, and a
/// reduced client learnt when the receiver regained its fix to the millisecond (found by a helper attacking the
/// daemon as uid 1). Now the fix's return shows only if it falls in a window, and then no more precisely than a
/// report's time always tells (the fix's epoch).
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
    /// For each key, its grid's latest instant that had a report (the first report's time plus whole intervals),
    /// and that report.
    private var last: [Key: (at: ContinuousClock.Instant, report: UInt64)] = [:]

    /// How long after each instant of the grid a report may still go: two and a half cycles of a 1 Hz receiver,
    /// so that one missed epoch does not skip the instant (a receiver slower than that skips some).
    public static let window = Duration.milliseconds(2500)

    /// - Parameter capacity: how many clients to remember before pruning (4096 by default).
    public init(capacity: Int = 4096) {
        self.capacity = capacity
    }

    /// Whether report number `report` may go to `key` at `now`: the same report it already had (another of
    /// its connections), or the first in a window of its grid after its last.
    public func allows(_ key: Key, report: UInt64, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        guard let entry = last[key] else { return true }
        return entry.report == report || Self.inWindow(now - entry.at, interval: interval)
    }

    /// Whether report number `report` going to `key` at `now` would start a new interval: it is due, and it
    /// is not the report `key` last had (that one's interval started when it was first given).
    public func startsInterval(_ key: Key, report: UInt64, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        guard let entry = last[key] else { return true }
        return entry.report != report && Self.inWindow(now - entry.at, interval: interval)
    }

    /// Whether `key`'s next report is due at `now`: none yet, or in a window of its grid after its last.
    public func isDue(_ key: Key, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        timeUntilDue(key, now: now, interval: interval) == .zero
    }

    /// How long from `now` until `key`'s next report is due: zero when it is (none yet, or in a window of its grid
    /// after its last), else the time to the grid's next instant. It depends only on when `key` last got a report
    /// — never on the fix — so telling it to the client tells nothing its reports did not.
    public func timeUntilDue(_ key: Key, now: ContinuousClock.Instant, interval: Duration) -> Duration {
        guard let entry = last[key] else { return .zero }
        let elapsed = now - entry.at
        if elapsed < interval { return interval - elapsed }
        if Self.inWindow(elapsed, interval: interval) { return .zero }
        return interval - Self.sinceInstant(elapsed, interval: interval)
    }

    /// Records that report number `report` went to `key` at `now` (a second connection getting the same
    /// report does not restart the interval): the grid's instant it was due at becomes the last.
    public mutating func record(_ key: Key, report: UInt64, now: ContinuousClock.Instant, interval: Duration) {
        if last[key]?.report == report { return }
        if last.count >= capacity { last = last.filter { now - $0.value.at < interval } }
        var at = now
        if let entry = last[key] {
            let elapsed = now - entry.at
            at = elapsed >= interval ? now - Self.sinceInstant(elapsed, interval: interval) : entry.at
        }
        last[key] = (at, report)
    }

    /// Whether `elapsed` since a grid instant falls in a window of a later instant.
    static func inWindow(_ elapsed: Duration, interval: Duration) -> Bool {
        elapsed >= interval && (interval <= window || sinceInstant(elapsed, interval: interval) <= window)
    }

    /// How long after the grid's latest instant `elapsed` since an earlier one is.
    static func sinceInstant(_ elapsed: Duration, interval: Duration) -> Duration {
        guard interval > .zero else { return .zero }
        let (es, ea) = elapsed.components, (is_, ia) = interval.components
        // Nanoseconds: intervals of days fit an Int64 many times over.
        let e = es * 1_000_000_000 + ea / 1_000_000_000, i = is_ * 1_000_000_000 + ia / 1_000_000_000
        return .nanoseconds(i > 0 ? e % i : 0)
    }
}
