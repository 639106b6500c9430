import Dispatch
import LocationCore
import Synchronization

/// All configured receivers, merged into one published fix stream by priority (`FixSelector`).
///
/// Events from every receiver are funnelled onto one queue; the published fix comes from the
/// highest-priority receiver with a valid fix, switching within 2 s when it loses its fix or disappears
/// and switching back when it returns.
public final class ReceiverSet: @unchecked Sendable {
    /// What the set tells its owner.
    public enum Event: Sendable {
        /// The fix to publish (from the selected receiver; a no-fix when none has one).
        case fix(Fix)
        /// A receiver's status changed.
        case status(ReceiverStatus)
    }

    /// The receivers, in configuration order (replaced as a whole by `replaceReceivers(_:)`).
    public var receivers: [any Receiver] { list.withLock { $0 } }
    private let list: Mutex<[any Receiver]>
    private let queue = DispatchQueue(label: "locationd.receivers")
    private var selector: FixSelector
    private var handler: (@Sendable (Event) -> Void)?
    private var timer: DispatchSourceTimer?
    private let current = Mutex<Fix?>(nil)
    /// The token of each receiver's current start, by name (on `queue`): events of a receiver that was
    /// replaced or removed carry an old token and are dropped.
    private var tokens: [String: Int] = [:]
    private var nextToken = 0

    /// - Parameters:
    ///   - receivers: in configuration order (it breaks priority ties); names unique.
    ///   - minimumFreshness: seconds a valid fix stays fresh at least (`FixSelector`).
    public init(_ receivers: [any Receiver], minimumFreshness: Double = 1.5) {
        list = Mutex(receivers)
        selector = FixSelector(receivers: receivers.map { ($0.name, $0.priority) }, minimumFreshness: minimumFreshness)
    }

    /// The statuses of all receivers, in configuration order.
    public var statuses: [ReceiverStatus] { receivers.map(\.status) }

    /// The last published fix.
    public var latestFix: Fix? { current.withLock { $0 } }

    /// Name of the receiver whose fixes are published now.
    public var selectedReceiver: String? { queue.sync { selector.selected } }

    /// Starts every receiver; `handler` gets the fixes to publish and the receivers' status changes, on
    /// the set's queue, in order, on the thread of the receiver that had the event. It must not wait for
    /// a receiver or the set.
    public func start(_ handler: @escaping @Sendable (Event) -> Void) {
        let started = queue.sync {
            self.handler = handler
            return receivers.map { (receiver: $0, token: issueToken(for: $0.name)) }
        }
        for (receiver, token) in started { startReceiver(receiver, token: token) }
    }

    /// Stops every receiver; no event is delivered after it returns.
    public func stop() {
        for receiver in receivers { receiver.stop() }
        queue.sync {
            timer?.cancel()
            timer = nil
            handler = nil
            tokens.removeAll()
        }
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
        // Swap the list and retire the old tokens on the queue, so that late events of the old
        // receivers are dropped; stop and start outside it.
        let (change, toStop, started) = queue.sync { () -> (Change, [any Receiver], [(receiver: any Receiver, token: Int)]) in
            let old = list.withLock { $0 }
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
            list.withLock { $0 = newReceivers }
            for name in change.removed { tokens[name] = nil }
            let running = handler != nil
            for receiver in toStart { tokens[receiver.name] = nil }
            let started = running ? toStart.map { (receiver: $0, token: issueToken(for: $0.name)) } : []
            perform(selector.replaceReceivers(newReceivers.map { ($0.name, $0.priority) },
                                              reset: Set(change.replaced + change.added), now: monotonicSeconds()))
            armTimer()
            return (change, toStop, started)
        }
        for receiver in toStop { receiver.stop() }
        for (receiver, token) in started { startReceiver(receiver, token: token) }
        return change
    }

    /// A fresh token for the receiver `name` (on `queue`).
    private func issueToken(for name: String) -> Int {
        nextToken += 1
        tokens[name] = nextToken
        return nextToken
    }

    private func startReceiver(_ receiver: any Receiver, token: Int) {
        let name = receiver.name
        receiver.start { [weak self] event in
            guard let self else { return }
            // Synchronously: on the receiver's thread when the set is idle (nearly always), so a fix
            // reaches the owner without a thread hand-off. Lock order: receiver queue, then the set's
            // queue, then whatever the handler takes; nothing holding the set's queue waits for a
            // receiver's (stop and start run outside it).
            self.queue.sync {
                guard self.tokens[name] == token else { return }
                self.handle(event, from: name)
            }
        }
    }

    private func handle(_ event: ReceiverEvent, from name: String) {
        let now = monotonicSeconds()
        let action: FixSelector.Action
        switch event {
        case .fix(let fix):
            action = selector.fix(fix, from: name, now: now)
        case .status(let status):
            handler?(.status(status))
            action = selector.connection(name, connected: status.isConnected, now: now)
        }
        perform(action)
        armTimer()
    }

    private func perform(_ action: FixSelector.Action) {
        guard case .publish(let fix) = action else { return }
        current.withLock { $0 = fix }
        handler?(.fix(fix))
    }

    /// Wakes up when the selected receiver's fix would go stale, to fail over without waiting for events.
    private func armTimer() {
        timer?.cancel()
        timer = nil
        guard list.withLock({ $0.count }) > 1, let deadline = selector.nextDeadline() else { return }
        let t = DispatchSource.makeTimerSource(queue: queue)
        t.schedule(deadline: .now() + max(0, deadline - monotonicSeconds()) + 0.01)
        t.setEventHandler { [weak self] in
            guard let self else { return }
            self.perform(self.selector.tick(now: monotonicSeconds()))
            self.armTimer()
        }
        timer = t
        t.resume()
    }
}
