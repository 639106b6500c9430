import LocationCore
import LocationPolicy

/// What the Publisher tells of the reduced cadence and the fix without changing anything: when a reduced
/// client's next report is due (POLL's `nextReportIn`, STATE's), and the fix's mode as a client may know it.
extension Publisher {
    /// How long until the reduced cadence lets client `id` have its next report (zero: due now): the same for every
    /// client — the next slot of the one grid (`ReducedPacing.timeUntilDue`); no fix state, no fix timing.
    func reducedReportDue(of id: Int, at now: Moment) -> Duration {
        guard subscribers[id] != nil else { return .zero }
        return pacing.timeUntilDue(now: now.monotonic, interval: reducedInterval)
    }

    /// How long a reduced client's POLL waits, whatever timeout it asked for (at least the time until its report is
    /// due, or it is refused): until `ReducedPacing.window` after that. Answered by the first epoch with a fix then,
    /// or told "no fix" at that moment of the cadence — never at the moment the fix came back or went.
    func reducedPollWait(of id: Int, at now: Moment) -> Duration {
        reducedReportDue(of: id, at: now) + ReducedPacing.window
    }

    /// The `.silence` of a reduced watcher between paced reports: the next is due in `ReducedPacing.timeUntilDue`
    /// (the same for every client: it tells nothing of the fix), with the fix as it was last told.
    func pacedSilence(_ index: Int, at now: Moment) -> Delivery {
        .silence(to: subscribers.entries[index].id, .paced(nextReportIn: pacing.timeUntilDue(now: now.monotonic, interval: reducedInterval),
                                                          fix: subscribers.entries[index].toldFix == true))
    }

    /// What a client may know of the fix's mode (STATUS): all of it at full accuracy; at reduced, what its
    /// paced messages told it — 2D with a fix, none without, nothing before any.
    func modeShown(to id: Int, accuracy: AccuracyAuthorization) -> FixMode? {
        guard accuracy == .reduced else { return latest?.mode ?? .noFix }
        return subscribers[id]?.toldFix.map { $0 ? .twoDimensional : .noFix }
    }
}
