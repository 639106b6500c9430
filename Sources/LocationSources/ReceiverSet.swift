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

    public let receivers: [any Receiver]
    private let queue = DispatchQueue(label: "locationd.receivers")
    private var selector: FixSelector
    private var handler: (@Sendable (Event) -> Void)?
    private var timer: DispatchSourceTimer?
    private let current = Mutex<Fix?>(nil)

    public init(_ receivers: [any Receiver], minimumFreshness: Double = 1.5) {
        self.receivers = receivers
        selector = FixSelector(receivers: receivers.map { ($0.name, $0.priority) }, minimumFreshness: minimumFreshness)
    }

    /// The statuses of all receivers, in configuration order.
    public var statuses: [ReceiverStatus] { receivers.map(\.status) }

    /// The last published fix.
    public var latestFix: Fix? { current.withLock { $0 } }

    /// Name of the receiver whose fixes are published now.
    public var selectedReceiver: String? { queue.sync { selector.selected } }

    public func start(_ handler: @escaping @Sendable (Event) -> Void) {
        queue.sync { self.handler = handler }
        for receiver in receivers {
            let name = receiver.name
            receiver.start { [weak self] event in
                guard let self else { return }
                self.queue.async { self.handle(event, from: name) }
            }
        }
    }

    public func stop() {
        for receiver in receivers { receiver.stop() }
        queue.sync {
            timer?.cancel()
            timer = nil
            handler = nil
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
        guard receivers.count > 1, let deadline = selector.nextDeadline() else { return }
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
