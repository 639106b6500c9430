/// Pacing of reduced-accuracy reports: one cadence for the whole daemon (issue 32, finding 4) — every reduced
/// client of every user, on every front, and the uplinks share it, so adding users, connections, units or renamed
/// copies of a program adds no report. Before, pacing was per uid: three uids started 10 s apart with
/// `reduced-interval = 30s` got a fresh reduced report every 10 s between them.
///
/// The cadence is a grid of slots, whole multiples of `interval` after `epoch` (the daemon's monotonic origin,
/// `ContinuousClock.Instant.origin`: a wall-clock grid would repeat or skip a slot when the clock is set, and two
/// reports would then come closer than `interval`). At most one distinct report goes in a slot, to every reduced
/// client that wants one at that moment; one that connects later in the slot gets that report only while no newer fix
/// came (it tells nothing new), else waits for the next slot. A slot is used by
/// its report, or by a fix-loss notice (a reduced client wanted a report, and there was no fix): after either,
/// nothing more in that slot, so the moment the fix came back or went shows only to the slot. A slot no reduced
/// client wanted anything in stays free: the first that asks gets the report at once (the first after the daemon
/// starts, say), and the next slots wait until `interval − slack` has passed since — no two distinct reports are
/// ever closer than that, whoever asks, on how many connections.
///
/// The slack (`slack(for:)`: a tenth of the interval, at most one second) is what keeps the reports on the grid: each
/// goes with the first epoch after its slot starts, and that epoch's offset in the slot jitters by milliseconds.
/// Without it, one epoch a millisecond earlier in its slot than the last report was in its own would be held a whole
/// epoch, the offset would only ever grow, and in time a slot would be skipped. After a report late in a free slot,
/// it also brings the next ones back to their slots' starts, by up to the slack each. The cost: two distinct reports
/// may be `interval − slack` apart (1 s at 15 min, 0.3 s at 3 s); never two in one slot, so over any span of N
/// intervals there are at most N + 1 reports, as with a strict `interval` between them, and any report and the next
/// but one are more than `interval` apart. Accepted (docs/SECURITY.md "Timing"): a report up to a tenth of an
/// interval early tells nothing more of a 2 km position. With less than an epoch of slack (a 1 Hz receiver and an
/// interval under 10 s) reports may stay late in their slots, or a slot go without one: fewer reports, never more.
///
/// Core Location sends approximate locations a few times an hour; a report a second would show when the
/// client crosses a grid line of the reduced position (`LocationFudger`). Pure value: the caller keeps
/// the clock.
public struct ReducedPacing: Sendable {
    /// Where the grid of slots starts; slot `n` begins `n × interval` after it.
    public let epoch: ContinuousClock.Instant
    /// When a slot was last used (by a report or a notice), since `epoch`: the slot `now` falls in is used when this
    /// is at or after its start. A time, not a slot number, so that a new `interval` (a config reload) reads it right.
    private var usedAt: Duration?
    /// The last distinct report (the Publisher's report serial) and when it went, since `epoch`.
    private var lastReport: (serial: UInt64, at: Duration)?

    /// How long after a report is due a POLL waiting for it may still be answered: two and a half cycles of a
    /// 1 Hz receiver, so that one missed epoch does not turn the slot into a "no fix".
    public static let window = Duration.milliseconds(2500)
    /// How much less than `interval` two distinct reports may be apart, at most (`slack(for:)`): a 1 Hz receiver's
    /// epoch, so that a slot's report a little earlier in its slot than the last one was in its own is not put off
    /// by a whole epoch.
    public static let slack = Duration.seconds(1)
    /// The part of `interval` the slack is at most (`slack(for:)`).
    public static let slackShare = 10

    /// - Parameter epoch: the grid's start; the daemon passes the monotonic origin it counts all its times from.
    public init(epoch: ContinuousClock.Instant) {
        self.epoch = epoch
    }

    /// The slack at `interval`: `slack` (1 s), or a tenth of the interval when that is less (two reports of a 3 s
    /// cadence are never closer than 2.7 s).
    public static func slack(for interval: Duration) -> Duration {
        min(slack, interval / slackShare)
    }

    /// The slot `now` falls in: whole `interval`s since `epoch`.
    public func slot(at now: ContinuousClock.Instant, interval: Duration) -> Int64 {
        let i = Self.nanoseconds(interval)
        return i > 0 ? Self.nanoseconds(now - epoch) / i : 0
    }

    /// Whether a new report may go at `now`: nothing went in `now`'s slot, and the last report is at least
    /// `interval − slack(for: interval)` ago.
    public func isDue(now: ContinuousClock.Instant, interval: Duration) -> Bool {
        timeUntilDue(now: now, interval: interval) == .zero
    }

    /// Whether report number `report` may go at `now`: a new one is due, or it is the last report again (another
    /// client of the same fan-out, or a connection made before the next fix: no fix with a position came since, so
    /// it tells nothing new).
    public func allows(report: UInt64, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        lastReport?.serial == report || isDue(now: now, interval: interval)
    }

    /// Whether report number `report` going at `now` uses a new slot: it is due, and not the last report again. The
    /// Publisher then gives it to every reduced client, as a fix's report.
    public func startsSlot(report: UInt64, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        lastReport?.serial != report && isDue(now: now, interval: interval)
    }

    /// How long from `now` until the next report is due: zero when it is; else until the next slot, or until
    /// `interval − slack(for: interval)` after the last report, whichever is later. It depends on the clock and on
    /// when the slots were used — never on the fix — so telling it to a client tells nothing its messages did not.
    public func timeUntilDue(now: ContinuousClock.Instant, interval: Duration) -> Duration {
        let since = now - epoch
        let slotStart = Self.start(of: slot(at: now, interval: interval), interval: interval)
        var due = usedAt.map { $0 >= slotStart } == true ? slotStart + interval : since
        if let lastReport { due = max(due, lastReport.at + interval - Self.slack(for: interval)) }
        return due > since ? due - since : .zero
    }

    /// Records that report number `report` went at `now` (to one client or many: the last report again changes nothing).
    public mutating func record(report: UInt64, now: ContinuousClock.Instant, interval: Duration) {
        guard lastReport?.serial != report else { return }
        usedAt = now - epoch
        lastReport = (report, now - epoch)
    }

    /// Records that reduced clients were due a report at `now` and there was no fix (they are told so): `now`'s slot is
    /// used, and the fix's return shows no sooner than the next slot. Before the daemon's first reduced report none is
    /// kept: that report comes with the first fix, whose time it tells anyway (once per daemon, not per user).
    public mutating func recordNotice(now: ContinuousClock.Instant, interval: Duration) {
        guard lastReport != nil, isDue(now: now, interval: interval) else { return }
        usedAt = now - epoch
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
