/// Pacing of reduced-accuracy reports: one cadence for the whole daemon (issue 32, finding 4) — every reduced
/// client of every user, on every front, and the uplinks share it, so adding users, connections, units or renamed
/// copies of a program adds no report. Before, pacing was per uid: three uids started 10 s apart with
/// `reduced-interval = 30s` got a fresh reduced report every 10 s between them.
///
/// The cadence is a grid of slots, whole multiples of `interval` after `epoch` (the daemon's monotonic origin,
/// `ContinuousClock.Instant.origin`: a wall-clock grid would repeat or skip a slot when the clock is set, and two
/// reports would then come closer than `interval`). At most one distinct report goes in a slot, to every reduced
/// client that wants one at that moment; one that connects later in the slot waits for the next. A slot is used by
/// its report, or by a fix-loss notice (a reduced client wanted a report, and there was no fix): after either,
/// nothing more in that slot, so the moment the fix came back or went shows only to the slot. A slot no reduced
/// client wanted anything in stays free: the first that asks gets the report at once (the first after the daemon
/// starts, say), and the next slots wait until `interval − slack` has passed since — no two distinct reports are
/// ever closer than that, whoever asks, on how many connections.
///
/// Core Location sends approximate locations a few times an hour; a report a second would show when the
/// client crosses a grid line of the reduced position (`LocationFudger`). Pure value: the caller keeps
/// the clock.
public struct ReducedPacing: Sendable {
    /// Where the grid of slots starts; slot `n` begins `n × interval` after it.
    public let epoch: ContinuousClock.Instant
    /// The last slot used (by a report or a notice), as a whole number of intervals since `epoch`.
    private var usedSlot: Int64?
    /// The report that went in `usedSlot` (the Publisher's report serial); nil when it was a notice.
    private var slotReport: UInt64?
    /// When the last distinct report went, since `epoch`.
    private var lastReportAt: Duration?

    /// How long after a report is due a POLL waiting for it may still be answered: two and a half cycles of a
    /// 1 Hz receiver, so that one missed epoch does not turn the slot into a "no fix".
    public static let window = Duration.milliseconds(2500)
    /// How much less than `interval` two distinct reports may be apart: a 1 Hz receiver's epoch, so that a slot's
    /// report a little earlier in its slot than the last one was in its own is not put off by a whole epoch.
    public static let slack = Duration.seconds(1)

    /// - Parameter epoch: the grid's start; the daemon passes the monotonic origin it counts all its times from.
    public init(epoch: ContinuousClock.Instant) {
        self.epoch = epoch
    }

    /// The slot `now` falls in: whole `interval`s since `epoch`.
    public func slot(at now: ContinuousClock.Instant, interval: Duration) -> Int64 {
        let i = Self.nanoseconds(interval)
        return i > 0 ? Self.nanoseconds(now - epoch) / i : 0
    }

    /// Whether a new report may go at `now`: nothing went in `now`'s slot, and the last report is at least
    /// `interval − slack` ago.
    public func isDue(now: ContinuousClock.Instant, interval: Duration) -> Bool {
        timeUntilDue(now: now, interval: interval) == .zero
    }

    /// Whether report number `report` may go at `now`: a new one is due, or it is the report that went in this slot
    /// (another client of the same fan-out, or a connection made before the next fix).
    public func allows(report: UInt64, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        (usedSlot == slot(at: now, interval: interval) && slotReport == report) || isDue(now: now, interval: interval)
    }

    /// How long from `now` until the next report is due: zero when it is; else until the next slot, or until
    /// `interval − slack` after the last report, whichever is later. It depends on the clock and on when the slots
    /// were used — never on the fix — so telling it to a client tells nothing its messages did not.
    public func timeUntilDue(now: ContinuousClock.Instant, interval: Duration) -> Duration {
        let since = now - epoch
        let current = slot(at: now, interval: interval)
        var due = usedSlot.map { $0 >= current } == true ? Self.start(of: current + 1, interval: interval) : since
        if let lastReportAt, interval > Self.slack { due = max(due, lastReportAt + interval - Self.slack) }
        return due > since ? due - since : .zero
    }

    /// Records that report number `report` went at `now` (to one client or many: the same report again changes nothing).
    public mutating func record(report: UInt64, now: ContinuousClock.Instant, interval: Duration) {
        let current = slot(at: now, interval: interval)
        if usedSlot == current, slotReport == report { return }
        usedSlot = current
        slotReport = report
        lastReportAt = now - epoch
    }

    /// Records that reduced clients were due a report at `now` and there was no fix (they are told so): `now`'s slot is
    /// used, and the fix's return shows no sooner than the next slot. Before the daemon's first reduced report none is
    /// kept: that report comes with the first fix, whose time it tells anyway (once per daemon, not per user).
    public mutating func recordNotice(now: ContinuousClock.Instant, interval: Duration) {
        let current = slot(at: now, interval: interval)
        guard lastReportAt != nil, usedSlot != current else { return }
        usedSlot = current
        slotReport = nil
    }

    /// Where slot `slot` starts, since `epoch`.
    private static func start(of slot: Int64, interval: Duration) -> Duration {
        .nanoseconds(slot * nanoseconds(interval))
    }

    /// `duration` in nanoseconds: an Int64 holds 292 years of them.
    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
