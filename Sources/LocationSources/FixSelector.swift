import LocationCore

/// Chooses which receiver's fixes are published: the highest-priority receiver that is connected and
/// has a fresh valid fix. Pure state machine over events and a monotonic clock (seconds), so the
/// failover rules are testable without timers.
///
/// A receiver stops qualifying the moment it reports no-fix or becomes unavailable, and when no valid
/// fix came from it for `freshness` (1.5 s, or 1.5 cycles for slower receivers). It qualifies again with
/// its next valid fix, and, having the higher priority, takes over at once.
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
        var connected = false
        var lastValid: Fix?
        var lastValidAt: Double?
        var cycle = 1.0
    }

    private var entries: [String: Entry] = [:]
    /// The receiver whose fixes are being published.
    public private(set) var selected: String?
    private var announcedNoFix = false
    /// Minimum seconds a valid fix stays fresh.
    public let minimumFreshness: Double

    public init(receivers: [(name: String, priority: Int)], minimumFreshness: Double = 1.5) {
        for (i, r) in receivers.enumerated() {
            entries[r.name] = Entry(name: r.name, priority: r.priority, order: i)
        }
        self.minimumFreshness = minimumFreshness
    }

    func freshness(_ e: Entry) -> Double { max(minimumFreshness, 1.5 * e.cycle) }

    /// The moment the currently selected receiver's fix goes stale, for a timer; nil when none selected.
    public func nextDeadline() -> Double? {
        guard let s = selected, let e = entries[s], let at = e.lastValidAt else { return nil }
        return at + freshness(e)
    }

    /// A receiver connected or became unavailable.
    public mutating func connection(_ name: String, connected: Bool, now: Double) -> Action {
        guard entries[name] != nil else { return .none }
        entries[name]!.connected = connected
        if !connected {
            entries[name]!.lastValid = nil
            entries[name]!.lastValidAt = nil
        }
        return reselect(now: now)
    }

    /// A fix (or no-fix) from a receiver.
    public mutating func fix(_ fix: Fix, from name: String, now: Double) -> Action {
        guard var e = entries[name] else { return .none }
        e.connected = true
        if fix.hasPosition {
            if let at = e.lastValidAt, now - at > 0.01 { e.cycle = min(max(now - at, 0.05), 10) }
            e.lastValid = fix
            e.lastValidAt = now
        } else {
            e.lastValid = nil
            e.lastValidAt = nil
        }
        entries[name] = e
        let previous = selected
        let action = reselect(now: now)
        if selected == name && previous == name && fix.hasPosition { return .publish(fix) }
        return action
    }

    /// Time passed: a selected receiver may have gone stale.
    public mutating func tick(now: Double) -> Action { reselect(now: now) }

    /// The receivers changed (a configuration reload): from now on choose among `receivers`, in this
    /// order (it breaks priority ties). A receiver that stays and is not in `reset` keeps its state
    /// (connection, latest fix, cycle) and takes its new priority; one in `reset` (replaced by a new
    /// receiver of the same name) or new starts disconnected; the others are forgotten.
    /// - Returns: what to publish when the choice changed (the new choice's fix, or one no-fix).
    public mutating func replaceReceivers(_ receivers: [(name: String, priority: Int)], reset: Set<String>, now: Double) -> Action {
        var updated: [String: Entry] = [:]
        for (i, r) in receivers.enumerated() {
            var kept = (reset.contains(r.name) ? nil : entries[r.name]) ?? Entry(name: r.name, priority: r.priority, order: i)
            kept.priority = r.priority
            kept.order = i
            updated[r.name] = kept
        }
        entries = updated
        return reselect(now: now)
    }

    private func qualifies(_ e: Entry, now: Double) -> Bool {
        guard e.connected, e.lastValid != nil, let at = e.lastValidAt else { return false }
        return now - at <= freshness(e)
    }

    private mutating func reselect(now: Double) -> Action {
        let best = entries.values
            .filter { qualifies($0, now: now) }
            .max { ($0.priority, -$0.order) < ($1.priority, -$1.order) }
        let previous = selected
        selected = best?.name
        if let best, best.name != previous {
            announcedNoFix = false
            // Switching: publish the new receiver's latest fix now rather than at its next one.
            return .publish(best.lastValid!)
        }
        if best == nil && !announcedNoFix {
            announcedNoFix = true
            return .publish(Fix(device: previous, mode: .noFix))
        }
        return .none
    }
}
