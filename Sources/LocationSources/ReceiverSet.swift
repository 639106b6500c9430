#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationPosix

/// All configured receivers, merged into one published fix stream by priority (`FixSelector`).
///
/// Each receiver's events come on that receiver's own queue and are handled on the spot: the
/// selector's state is behind a lock (`Locked`), and the owner's handler is called after it is released — one
/// hop from a receiver to the owner, no queue in between. The published fix comes from the
/// highest-priority receiver with a live valid fix, switching within 2 s when it loses its fix or
/// disappears and switching back when it returns. One clock thread (`SelectorClock`) drives the
/// selector when the selected fix would go stale without any event.
///
/// What STATUS and systemd read (`statuses`, `latestFix`) is a snapshot the set publishes from the
/// events, never a question to the receivers.
///
/// Locks: `state`, then `published` (taken inside `state`, never the other way round); neither is held
/// while a receiver is started or stopped or the owner's handler runs.
public final class ReceiverSet: Sendable {
    /// What the set tells its owner.
    public enum Event: Sendable {
        /// The fix to publish (from the selected receiver; a no-fix when none has one).
        case fix(Fix)
        /// A receiver's status changed.
        case status(ReceiverStatus)
        /// A plausibility rule kept the receiver's fix from being published, for another reason than its
        /// previous fix (the first rejection, one by another rule, or one after fixes were published again):
        /// once per change of reason, for the log.
        case rejected(receiver: String, FixRejection)
    }

    /// The owner's handler, in a struct: a bare closure handed out of `withLock` (generic over its result)
    /// is converted to the generic calling convention through a thunk allocated at every fix.
    private struct Owner: Sendable {
        let handle: @Sendable (Event) -> Void
    }

    private struct State {
        /// In configuration order.
        var receivers: [any Receiver]
        var selector: FixSelector
        var handler: Owner?
        /// One per running receiver: the token of its current start (events of a receiver that was
        /// replaced or removed carry an old token and are dropped) and its plausibility rules and history
        /// (docs/RECEIVERS.md), made at its first fix and forgotten when it disconnects or is replaced.
        /// A handful: found by a linear search on the token, without hashing the receiver's name.
        var slots: [Slot] = []
        var nextToken = 0
        /// Ticks the selector when the selected fix would go stale; made on first use, gone after `stop`.
        var clock: SelectorClock?
        /// The deadline `clock` waits for (`ContinuousClock.Instant.sinceOrigin`); nil when it waits for nothing.
        var clockDeadline: Duration?

        /// The slot of the receiver start that issued `token`, if it is still current.
        func slot(token: Int) -> Int? { slots.firstIndex { $0.token == token } }

        /// Forgets the receiver `name`'s start (its token and plausibility history).
        mutating func retire(_ name: String) { slots.removeAll { $0.name == name } }
    }

    /// A running receiver's start (see `State.slots`).
    private struct Slot {
        var name: String
        var token: Int
        var plausibility: FixPlausibility?
        /// The rule that rejected its last fix with a position; nil after one was published.
        var lastRule: String?
    }

    /// What the set publishes for readers.
    private struct Snapshot {
        /// By receiver, in configuration order.
        var statuses: [ReceiverStatus]
        var latestFix: Fix?
    }

    private let state: Locked<State>
    private let published: Locked<Snapshot>
    /// The system's UTC time, Unix seconds: the plausibility rules judge dates by it.
    private let wallClock: @Sendable () -> Double

    /// - Parameters:
    ///   - receivers: in configuration order (it breaks priority ties); names unique.
    ///   - minimumFreshness: the least time a valid fix stays fresh for failover (`FixSelector`).
    ///   - wallClock: the system's UTC time, Unix seconds (tests set it; default `CLOCK_REALTIME`).
    public init(_ receivers: [any Receiver], minimumFreshness: Duration = FixSelector.defaultMinimumFreshness,
                wallClock: @escaping @Sendable () -> Double = { wallClockSeconds() }) {
        self.wallClock = wallClock
        let selector = FixSelector(receivers: receivers.map { ($0.name, $0.priority) }, staleAfter: Self.staleAfter(receivers),
                                   minimumFreshness: minimumFreshness)
        state = Locked(State(receivers: receivers, selector: selector))
        published = Locked(Snapshot(statuses: receivers.map(\.status), latestFix: nil))
    }

    /// The receivers, in configuration order (replaced as a whole by `replaceReceivers(_:)`).
    public var receivers: [any Receiver] { state.withLock { $0.receivers } }

    /// The statuses of all receivers, in configuration order, as their events last reported them.
    public var statuses: [ReceiverStatus] { published.withLock { $0.statuses } }

    /// The last published fix.
    public var latestFix: Fix? { published.withLock { $0.latestFix } }

    /// Name of the receiver whose fixes are published now.
    public var selectedReceiver: String? { state.withLock { $0.selector.selected } }

    /// Starts every receiver; `handler` gets the fixes to publish and the receivers' status changes, in
    /// order for each receiver, on the thread of the receiver that had the event (or the set's clock thread).
    /// It must not wait for a receiver or call back into the set.
    public func start(_ handler: @escaping @Sendable (Event) -> Void) {
        let started = state.withLock { s in
            s.handler = Owner(handle: handler)
            return s.receivers.map { (receiver: $0, token: Self.issueToken(for: $0.name, in: &s)) }
        }
        for (receiver, token) in started { startReceiver(receiver, token: token) }
    }

    /// Stops every receiver; no event is delivered after it returns.
    public func stop() {
        // A receiver's stop waits for its queue, where its events reach the handler.
        for receiver in receivers { receiver.stop() }
        let clock = state.withLock { s -> SelectorClock? in
            s.handler = nil
            s.slots.removeAll()
            s.clockDeadline = nil
            defer { s.clock = nil }
            return s.clock
        }
        // Waits for a tick in flight, which may have taken the handler before it was dropped.
        clock?.stop()
    }

    /// What `replaceReceivers(_:)` did, by receiver name.
    public struct Change: Hashable, Sendable {
        /// New names: started.
        public var added: [String] = []
        /// Names whose receiver object changed: the old one stopped, the new one started.
        public var replaced: [String] = []
        /// Names no longer present: stopped.
        public var removed: [String] = []
        /// The same receiver object as before: left running, untouched.
        public var kept: [String] = []

        /// A change; every list empty by default.
        public init(added: [String] = [], replaced: [String] = [], removed: [String] = [], kept: [String] = []) {
            self.added = added
            self.replaced = replaced
            self.removed = removed
            self.kept = kept
        }
    }

    /// Makes the set consist of `newReceivers`, in that order (a configuration reload). Receivers are
    /// matched by name: one given as the very object the set already holds keeps running untouched (its
    /// priority and order may change); a different object under a known name replaces the old one,
    /// which is stopped; an unknown name is added; a name not given is stopped and removed. New
    /// receivers are started when the set is running. The published fix switches, as on any failover,
    /// when the selected receiver was replaced or removed.
    /// - Parameter newReceivers: receivers with unique names.
    /// - Returns: which names were added, replaced, removed and kept.
    @discardableResult
    public func replaceReceivers(_ newReceivers: [any Receiver]) -> Change {
        let now = ContinuousClock.now
        // Swap the list and retire the old tokens under the lock, so that late events of the old
        // receivers are dropped; stop, start and publish outside it.
        let (change, toStop, started, action, handler) = state.withLock { s in
            let old = s.receivers
            let oldByName = Dictionary(old.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            let newNames = Set(newReceivers.map(\.name))
            var change = Change()
            var toStart: [any Receiver] = []
            for receiver in newReceivers {
                if let previous = oldByName[receiver.name] {
                    if previous === receiver {
                        change.kept.append(receiver.name)
                    } else {
                        change.replaced.append(receiver.name)
                        toStart.append(receiver)
                    }
                } else {
                    change.added.append(receiver.name)
                    toStart.append(receiver)
                }
            }
            change.removed = old.map(\.name).filter { !newNames.contains($0) }
            let toStop = old.filter { !newNames.contains($0.name) || change.replaced.contains($0.name) }
            s.receivers = newReceivers
            for name in change.removed {
                s.retire(name)
            }
            // A receiver started anew (added, or replaced with new settings such as check-date) starts its
            // plausibility history and rules afresh: the old receiver's disconnect status is never seen
            // (its token is retired), so it would not be cleared otherwise.
            for receiver in toStart {
                s.retire(receiver.name)
            }
            let running = s.handler != nil
            let started = running ? toStart.map { (receiver: $0, token: Self.issueToken(for: $0.name, in: &s)) } : []
            let action = s.selector.replaceReceivers(newReceivers.map { ($0.name, $0.priority) }, staleAfter: Self.staleAfter(newReceivers),
                                                     reset: Set(change.replaced + change.added), now: now)
            let restarted = Set(toStart.map(\.name))
            published.withLock { p in
                let previous = Dictionary(p.statuses.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
                p.statuses = newReceivers.map { restarted.contains($0.name) ? $0.status : previous[$0.name] ?? $0.status }
                if case .publish(let fix) = action { p.latestFix = fix }
            }
            armTimer(&s)
            return (change, toStop, started, action, s.handler)
        }
        for receiver in toStop { receiver.stop() }
        for (receiver, token) in started { startReceiver(receiver, token: token) }
        if case .publish(let fix) = action { handler?.handle(.fix(fix)) }
        return change
    }

    private static func staleAfter(_ receivers: [any Receiver]) -> [String: Duration] {
        var byName: [String: Duration] = [:]
        for receiver in receivers { byName[receiver.name] = receiver.staleAfter }
        return byName
    }

    /// A fresh token for the receiver `name`.
    private static func issueToken(for name: String, in s: inout State) -> Int {
        s.nextToken += 1
        s.retire(name)
        s.slots.append(Slot(name: name, token: s.nextToken))
        return s.nextToken
    }

    private func startReceiver(_ receiver: any Receiver, token: Int) {
        let name = receiver.name
        receiver.start { [weak self] event in self?.receive(event, from: name, token: token) }
    }

    /// One event of a receiver, on that receiver's thread: the selector decides under the lock, the
    /// owner hears of it after.
    private func receive(_ event: ReceiverEvent, from name: String, token: Int) {
        if case .counts(let sentences, let errors) = event {
            // At every read, after its fixes: only the snapshot changes.
            state.withLock { s in
                guard s.slot(token: token) != nil else { return }
                publish(.none, updating: name) {
                    $0.sentences = sentences
                    $0.errors = errors
                }
            }
            return
        }
        let now = ContinuousClock.now.sinceOrigin
        let (action, status, rejected, handler) = state.withLock { s -> (FixSelector.Action, ReceiverStatus?, FixRejection?, Owner?) in
            guard let slot = s.slot(token: token) else { return (.none, nil, nil, nil) }
            let action: FixSelector.Action
            var status: ReceiverStatus? = nil
            var rejected: FixRejection? = nil
            switch event {
            case .fix(let received):
                let (vetted, findings) = vet(received, from: name, slot: slot, now: now, in: &s)
                // A no-fix epoch rejected is no fix lost: only positions count, and only they change the reason.
                let rejection = received.hasPosition ? findings.lazy.compactMap(\.rejection).first : nil
                if received.hasPosition {
                    if let rejection, rejection.rule != s.slots[slot].lastRule { rejected = rejection }
                    s.slots[slot].lastRule = rejection?.rule
                }
                guard let fix = vetted else {
                    publish(.none, updating: name) {
                        $0.implausibleFixes += 1
                        $0.reject(rejection)
                        if received.hasPosition { $0.rejecting = rejection }
                    }
                    return (.none, nil, rejected, rejected == nil ? nil : s.handler)
                }
                action = s.selector.fix(fix, from: name, now: now)
                publish(action, updating: name) {
                    if !findings.isEmpty { $0.implausibleFixes += 1 }
                    $0.reject(rejection)
                    if received.hasPosition { $0.rejecting = rejection }
                    guard fix.hasPosition else { return }
                    $0.fixes += 1
                    $0.lastFixTime = fix.time
                }
            case .status(let changed):
                status = changed
                if !changed.isConnected {
                    s.slots[slot].plausibility = nil
                    s.slots[slot].lastRule = nil
                }
                action = s.selector.connection(name, connected: changed.isConnected, now: now)
                publish(action, updating: name) {
                    $0.state = changed.state
                    if !changed.isConnected { $0.rejecting = nil }
                    $0.speed = changed.speed
                    $0.connectedSince = changed.connectedSince
                    $0.device = changed.device
                }
            case .counts:
                return (.none, nil, nil, nil)
            }
            return (action, status, rejected, s.handler)
        }
        guard let handler else { return }
        if let status { handler.handle(.status(status)) }
        if let rejected { handler.handle(.rejected(receiver: name, rejected)) }
        if case .publish(let fix) = action { handler.handle(.fix(fix)) }
        // After the owner has the fix: setting the clock (a system call at every other fix) adds nothing to
        // the time from the read to the clients. `armTimer` reads the selector's deadline as it is now.
        state.withLock { armTimer(&$0) }
    }

    /// The receiver's fix as its plausibility rules leave it (nil: dropped), and what they found.
    private func vet(_ fix: Fix, from name: String, slot: Int, now: Duration, in s: inout State) -> (Fix?, [FixPlausibility.Finding]) {
        if s.slots[slot].plausibility == nil {
            s.slots[slot].plausibility = FixPlausibility(configuration: s.receivers.first { $0.name == name }?.plausibility ?? .init())
        }
        let wall = wallClock()
        // In place: the rules are not copied out and back.
        let result = s.slots[slot].plausibility?.vet(fix, wallClock: wall, now: now) ?? (fix, [])
        return result
    }

    /// Updates the published snapshot: the receiver's status, and the fix when there is one to publish.
    private func publish(_ action: FixSelector.Action, updating name: String, _ change: (inout ReceiverStatus) -> Void) {
        published.withLock { p in
            if let i = p.statuses.firstIndex(where: { $0.name == name }) { change(&p.statuses[i]) }
            if case .publish(let fix) = action { p.latestFix = fix }
        }
    }

    /// Sets the clock to the moment the selected receiver's fix would stop qualifying (just after it: a
    /// fix exactly `freshness` old still qualifies). A fix moves that moment later: one timerfd_settime(2)
    /// on the receiver's thread, and the clock's thread sleeps on (`SelectorClock`). Under `state`'s lock,
    /// so settings are made in the order of the deadlines they come from.
    ///
    /// A later moment is left for the clock to find while the one set is at least halfway to it: if the
    /// timer expires first, `clockTick` finds nothing stale and sets it again. So set, it never expires
    /// while fixes come at a steady cadence, and is set at every other fix, not at each.
    private func armTimer(_ s: inout State, now: Duration = ContinuousClock.now.sinceOrigin) {
        guard let deadline = s.selector.nextDeadlineSinceOrigin, s.handler != nil else { return }
        if s.clockDeadline == deadline { return }
        // Duration + Duration, not * 2: Duration's integer product is generic, unspecialized in the stdlib.
        if let armed = s.clockDeadline, armed < deadline, (armed - now) + (armed - now) >= deadline - now { return }
        if s.clock == nil {
            s.clock = try? SelectorClock { [weak self] in self?.clockTick() }
        }
        s.clockDeadline = deadline
        s.clock?.arm(after: max(.zero, deadline - now) + .milliseconds(10))
    }

    /// On the clock's thread: ticks the selector, publishes what changed, and sets the clock for the next
    /// deadline.
    private func clockTick() {
        let now = ContinuousClock.now.sinceOrigin
        let (action, handler) = state.withLock { s -> (FixSelector.Action, Owner?) in
            guard s.handler != nil else { return (.none, nil) }
            let action = s.selector.tick(now: now)
            if case .publish(let fix) = action { published.withLock { $0.latestFix = fix } }
            s.clockDeadline = nil
            armTimer(&s, now: now)
            return (action, s.handler)
        }
        if case .publish(let fix) = action { handler?.handle(.fix(fix)) }
    }
}

extension ReceiverStatus {
    /// Counts a fix a plausibility rule rejected (nothing for nil) and keeps it as the last rejection.
    mutating func reject(_ rejection: FixRejection?) {
        guard let rejection else { return }
        rejectedFixes[rejection.rule, default: 0] += 1
        lastRejection = rejection
    }
}
