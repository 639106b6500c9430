import Dispatch
import LocationCore
import LocationPosix

/// The parts every receiver shares: its serial queue, the event handler, the status snapshot and the
/// reconnect backoff. All methods except `status` run on `queue`.
///
/// It judges nothing: a receiver reports what its input said (fixes, no-fixes, connection changes) and
/// `FixSelector` decides whether a fix is still live.
///
/// `@unchecked Sendable`: `handler`, `backoff` and `generation` are only touched on `queue`; the
/// snapshot is behind its own lock (`Locked`); the rest never changes.
final class ReceiverCore: @unchecked Sendable {
    let name: String
    let priority: Int
    let queue: DispatchQueue
    private let snapshot: Locked<ReceiverStatus>
    private var handler: (@Sendable (ReceiverEvent) -> Void)?
    var backoff = Backoff()
    /// Bumped on every stop/reconnect so that late timers of an old connection do nothing.
    private(set) var generation = 0

    init(configuration: ReceiverConfiguration, type: String, path: String) {
        name = configuration.name
        priority = configuration.priority
        queue = DispatchQueue(label: "locationd.receiver.\(configuration.name)")
        snapshot = Locked(ReceiverStatus(name: configuration.name, type: type, path: path, priority: configuration.priority))
    }

    var status: ReceiverStatus { snapshot.withLock { $0 } }

    /// The common start: on the queue, install the handler, begin a new generation, run `begin`.
    func start(_ handler: @escaping @Sendable (ReceiverEvent) -> Void, _ begin: @escaping @Sendable () -> Void) {
        queue.async {
            self.handler = handler
            _ = self.newGeneration()
            begin()
        }
    }

    /// The common stop: on the queue (waiting for it), end the generation, run `end` (close what the
    /// receiver opened), report `stopped` and drop the handler.
    func stop(_ end: () -> Void) {
        queue.sync {
            _ = newGeneration()
            end()
            setState(.stopped)
            handler = nil
        }
    }

    func newGeneration() -> Int {
        generation += 1
        return generation
    }

    /// Updates the input counters and tells the owner (`ReceiverEvent.counts`) when they changed.
    func count(sentences: Int, errors: Int) {
        let changed = snapshot.withLock { s -> Bool in
            guard s.sentences != sentences || s.errors != errors else { return false }
            s.sentences = sentences
            s.errors = errors
            return true
        }
        if changed { handler?(.counts(sentences: sentences, errors: errors)) }
    }

    /// Records a state change and tells the owner.
    func setState(_ state: ReceiverStatus.State, speed: Int? = nil) {
        let now = wallClockSeconds()
        update { s in
            if s.state == state && (speed == nil || s.speed == speed) { return false }
            if state == .connected && s.state != .connected { s.connectedSince = now }
            if state != .connected { s.connectedSince = nil }
            s.state = state
            if let speed { s.speed = speed }
            return true
        }
    }

    /// Records the device the fixes come from (a gpsd receiver's upstream device) and tells the owner when
    /// it changed.
    func setDevice(_ device: String) {
        update { s in
            guard s.device != device else { return false }
            s.device = device
            return true
        }
    }

    /// Applies `change` to the snapshot under its lock; when it says it changed something, tells the owner the
    /// new snapshot (`ReceiverEvent.status`), outside the lock.
    private func update(_ change: (inout ReceiverStatus) -> Bool) {
        let current = snapshot.withLock { s -> ReceiverStatus? in change(&s) ? s : nil }
        if let current { handler?(.status(current)) }
    }

    /// Delivers a fix: names it after the receiver and counts it when it has a position.
    func deliver(_ fix: Fix) {
        var fix = fix
        fix.device = name
        if fix.hasPosition {
            snapshot.withLock {
                $0.fixes += 1
                $0.lastFixTime = fix.time
            }
        }
        handler?(.fix(fix))
    }

    /// Runs `action` after the next backoff delay, unless the receiver was stopped or restarted meanwhile.
    func retryLater(_ action: @escaping @Sendable () -> Void) {
        let delay = backoff.nextDelay()
        let expected = generation
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay.inSeconds * 1e9))) { [weak self] in
            guard let self, self.generation == expected else { return }
            action()
        }
    }
}
