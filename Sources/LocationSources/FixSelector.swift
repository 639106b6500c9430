import LocationCore

/// Chooses which receiver's fixes are published: the highest-priority receiver that is connected and
/// has a live valid fix. The one judge of liveness: receivers only report events (fix, no-fix,
/// connected, unavailable). Pure state machine over those events and `ContinuousClock` instants, so the
/// failover and staleness rules are testable without timers.
///
/// A receiver stops qualifying the moment it reports no-fix or becomes unavailable, and
/// - when no valid fix came from it for its `stale-after` (configured; otherwise 3 reporting cycles):
///   its fix is stale, whatever else there is;
/// - when there is more than one receiver, already when no valid fix came from it for `freshness`
///   (2.5 cycles, at least 2.5 s, capped by its `stale-after`): failover does not wait for staleness,
///   but one missed epoch (a gap of 2 cycles) is not a failure — switching for it published the other
///   receiver's fix for that one second and then switched back.
///
/// It qualifies again with its next valid fix, and, having the higher priority, takes over at once.
/// The cycle is measured between a receiver's valid fixes (50 ms to 10 s).
///
/// While none qualifies, one no-fix is published when the last one stops qualifying, and then every no-fix epoch
/// of the connected receiver that would be chosen first (its time, satellites and DOPs, no position).
public struct FixSelector: Sendable {
    /// What to do after an event.
    public enum Action: Equatable, Sendable {
        /// Publish this fix.
        case publish(Fix)
        /// Nothing to publish.
        case none
    }

    struct Entry: Sendable {
        var name: String
        var priority: Int
        var order: Int
        var staleAfter: Duration?
        var connected = false
        var lastValid: Fix?
        /// When `lastValid` came (`ContinuousClock.Instant.sinceOrigin`: fixed layout).
        var lastValidAt: Duration?
        var cycle = Duration.seconds(1)
        /// `cycle` × 3, worked out when `cycle` changes: `Duration`'s own `*` is generic over the factor's
        /// type and ran unspecialized through the runtime, in every `qualifies` of every fix
        /// (Benchmarks/README.md, epoch-path.sh).
        var threeCycles = Duration.seconds(3)

        mutating func measure(cycle newCycle: Duration) {
            cycle = newCycle
            threeCycles = newCycle + newCycle + newCycle
        }

        /// `cycle` × `failoverCycles` (only asked when there is another receiver to fail over to).
        var failoverSpan: Duration { Self.scale(cycle, by: FixSelector.failoverCycles) }

        /// `d` × `factor`, through the duration's components.
        static func scale(_ d: Duration, by factor: Double) -> Duration {
            let (seconds, attoseconds) = d.components
            return .nanoseconds((Double(seconds) * 1e9 + Double(attoseconds) / 1e9) * factor)
        }
    }

    /// The shortest and longest cycle measured, and the least gap measured as one.
    private static let shortestCycle = Duration.milliseconds(50)
    private static let longestCycle = Duration.seconds(10)
    private static let leastGap = Duration.milliseconds(10)

    /// One entry per receiver, in no particular order (`order` breaks ties). A handful at most, so a
    /// linear search by name beats hashing, and a fix updates its entry in place.
    private var entries: [Entry] = []
    /// The receiver whose fixes are being published.
    public private(set) var selected: String?
    private var announcedNoFix = false
    /// The least time a valid fix stays fresh for failover.
    public let minimumFreshness: Duration
    /// How many of a receiver's cycles its valid fix stays fresh for failover: more than the 2 that one
    /// missed epoch leaves between fixes.
    public static let failoverCycles = 2.5
    /// The default `minimumFreshness`: 2.5 s, so that a 1 Hz receiver missing one epoch stays selected.
    public static let defaultMinimumFreshness: Duration = .milliseconds(2500)

    /// - Parameters:
    ///   - receivers: names and priorities, in configuration order (it breaks priority ties).
    ///   - staleAfter: configured `stale-after` by receiver name; absent: 3 cycles.
    ///   - minimumFreshness: the least time a valid fix counts as fresh for failover.
    public init(receivers: [(name: String, priority: Int)], staleAfter: [String: Duration] = [:],
                minimumFreshness: Duration = FixSelector.defaultMinimumFreshness) {
        for (i, r) in receivers.enumerated() {
            Self.put(Entry(name: r.name, priority: r.priority, order: i, staleAfter: staleAfter[r.name]), in: &entries)
        }
        self.minimumFreshness = minimumFreshness
    }

    private func index(of name: String) -> Int? { entries.firstIndex { $0.name == name } }

    /// Adds `entry`, replacing one of the same name (the later of two same-named receivers counts).
    private static func put(_ entry: Entry, in entries: inout [Entry]) {
        if let i = entries.firstIndex(where: { $0.name == entry.name }) { entries[i] = entry } else { entries.append(entry) }
    }

    /// How long entry `i`'s valid fix stays live at all. (Entries are read in place, by index: a copy of
    /// one copies its fix.)
    func liveness(_ i: Int) -> Duration { entries[i].staleAfter ?? entries[i].threeCycles }

    /// How long entry `i`'s valid fix keeps it selected: its liveness alone, or with an alternative
    /// receiver the failover freshness (capped by its liveness).
    func freshness(_ i: Int) -> Duration {
        guard entries.count > 1 else { return liveness(i) }
        return min(max(minimumFreshness, entries[i].failoverSpan), liveness(i))
    }

    /// The moment the currently selected receiver's fix stops qualifying, for a timer; nil when none is
    /// selected.
    public func nextDeadline() -> ContinuousClock.Instant? {
        nextDeadlineSinceOrigin.map { ContinuousClock.Instant(sinceOrigin: $0) }
    }

    /// `nextDeadline()` as `ContinuousClock.Instant.sinceOrigin`.
    var nextDeadlineSinceOrigin: Duration? {
        guard let s = selected, let i = index(of: s), let at = entries[i].lastValidAt else { return nil }
        return at + freshness(i)
    }

    /// A receiver connected or became unavailable.
    public mutating func connection(_ name: String, connected: Bool, now: ContinuousClock.Instant) -> Action {
        connection(name, connected: connected, now: now.sinceOrigin)
    }

    /// `connection(_:connected:now:)` with `now` as `ContinuousClock.Instant.sinceOrigin`.
    mutating func connection(_ name: String, connected: Bool, now: Duration) -> Action {
        guard let i = index(of: name) else { return .none }
        entries[i].connected = connected
        if !connected {
            entries[i].lastValid = nil
            entries[i].lastValidAt = nil
        }
        return reselect(now: now)
    }

    /// A fix (or no-fix) from a receiver.
    public mutating func fix(_ fix: Fix, from name: String, now: ContinuousClock.Instant) -> Action {
        self.fix(fix, from: name, now: now.sinceOrigin)
    }

    /// `fix(_:from:now:)` with `now` as `ContinuousClock.Instant.sinceOrigin`.
    mutating func fix(_ fix: Fix, from name: String, now: Duration) -> Action {
        guard let i = index(of: name) else { return .none }
        entries[i].connected = true
        if fix.hasPosition {
            if let at = entries[i].lastValidAt, now - at > Self.leastGap {
                entries[i].measure(cycle: min(max(now - at, Self.shortestCycle), Self.longestCycle))
            }
            entries[i].lastValid = fix
            entries[i].lastValidAt = now
        } else {
            entries[i].lastValid = nil
            entries[i].lastValidAt = nil
        }
        let previous = selected
        let action = reselect(now: now)
        if selected == name && previous == name && fix.hasPosition { return .publish(fix) }
        // None qualifies: the no-fix epochs of the receiver that would be chosen first go out, each with its time,
        // where one no-fix was announced before — gpsd reports every no-fix epoch (a `mode` 1 TPV with `time`), and
        // its clients show the receiver's clock running and take silence for a dead link (gpsd 3.22, `.chk` files).
        if selected == nil, !fix.hasPosition, speaksForNoFix(i) {
            announcedNoFix = true
            return .publish(fix)
        }
        return action
    }

    /// Whether entry `i`'s no-fix epochs are published while no receiver qualifies: no other connected receiver
    /// would be chosen before it (a higher priority, or the same and earlier in the configuration).
    private func speaksForNoFix(_ i: Int) -> Bool {
        !entries.indices.contains { j in
            j != i && entries[j].connected
                && (entries[j].priority > entries[i].priority
                    || (entries[j].priority == entries[i].priority && entries[j].order < entries[i].order))
        }
    }

    /// Time passed: the selected receiver's fix may have gone stale.
    public mutating func tick(now: ContinuousClock.Instant) -> Action { reselect(now: now.sinceOrigin) }

    /// `tick(now:)` with `now` as `ContinuousClock.Instant.sinceOrigin`.
    mutating func tick(now: Duration) -> Action { reselect(now: now) }

    /// The receivers changed (a configuration reload): from now on choose among `receivers`, in this
    /// order (it breaks priority ties). A receiver that stays and is not in `reset` keeps its state
    /// (connection, latest fix, cycle) and takes its new priority and `stale-after`; one in `reset`
    /// (replaced by a new receiver of the same name) or new starts disconnected; the others are forgotten.
    /// - Returns: what to publish when the choice changed (the new choice's fix, or one no-fix).
    public mutating func replaceReceivers(_ receivers: [(name: String, priority: Int)], staleAfter: [String: Duration] = [:],
                                          reset: Set<String>, now: ContinuousClock.Instant) -> Action {
        var updated: [Entry] = []
        for (i, r) in receivers.enumerated() {
            var kept = (reset.contains(r.name) ? nil : index(of: r.name).map { entries[$0] })
                ?? Entry(name: r.name, priority: r.priority, order: i)
            kept.priority = r.priority
            kept.order = i
            kept.staleAfter = staleAfter[r.name]
            Self.put(kept, in: &updated)
        }
        entries = updated
        return reselect(now: now.sinceOrigin)
    }

    private func qualifies(_ i: Int, now: Duration) -> Bool {
        // (`lastValidAt` is set and cleared with `lastValid`: the fix itself is not looked at, nor copied.)
        guard entries[i].connected, let at = entries[i].lastValidAt else { return false }
        return now - at <= freshness(i)
    }

    private mutating func reselect(now: Duration) -> Action {
        var best: Int? = nil
        for i in entries.indices where qualifies(i, now: now) {
            // Higher priority wins; on a tie, the earlier in configuration order.
            if let b = best, entries[i].priority < entries[b].priority
                || (entries[i].priority == entries[b].priority && entries[i].order >= entries[b].order) { continue }
            best = i
        }
        let previous = selected
        selected = best.map { entries[$0].name }
        if let best, entries[best].name != previous, let fix = entries[best].lastValid {
            announcedNoFix = false
            // Switching: publish the new receiver's latest fix now rather than at its next one.
            return .publish(fix)
        }
        if best == nil && !announcedNoFix {
            announcedNoFix = true
            return .publish(Fix(device: previous, mode: .noFix))
        }
        return .none
    }
}
