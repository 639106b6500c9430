import Dispatch
import LocationCore
import LocationPosix
import Synchronization

/// The parts every receiver shares: its serial queue, the event handler, the status snapshot, the
/// staleness watch and the reconnect backoff. All methods except `status` run on `queue`.
final class ReceiverCore: @unchecked Sendable {
    let name: String
    let priority: Int
    let queue: DispatchQueue
    private let snapshot: Mutex<ReceiverStatus>
    private var handler: (@Sendable (ReceiverEvent) -> Void)?
    private let configuredStaleAfter: Double?
    private var staleTimer: DispatchSourceTimer?
    private var lastFixArrival: Double?
    private var cycle = 1.0
    private var stale = true
    /// False when the receiver calls `checkStaleness()` itself at `secondsUntilStale()` (a serial
    /// receiver's reader thread does, as its poll timeout) instead of the core's dispatch timer.
    var staleTimerEnabled = true
    var backoff = Backoff()
    /// Bumped on every stop/reconnect so that late timers of an old connection do nothing.
    private(set) var generation = 0

    init(configuration: ReceiverConfiguration, type: String, path: String) {
        name = configuration.name
        priority = configuration.priority
        configuredStaleAfter = configuration.staleAfter
        queue = DispatchQueue(label: "locationd.receiver.\(configuration.name)")
        snapshot = Mutex(ReceiverStatus(name: configuration.name, type: type, path: path, priority: configuration.priority))
    }

    var status: ReceiverStatus { snapshot.withLock { $0 } }

    func setHandler(_ handler: (@Sendable (ReceiverEvent) -> Void)?) { self.handler = handler }

    /// The common start: on the queue, install the handler, begin a new generation, run `begin`.
    func start(_ handler: @escaping @Sendable (ReceiverEvent) -> Void, _ begin: @escaping @Sendable () -> Void) {
        queue.async {
            self.setHandler(handler)
            _ = self.newGeneration()
            begin()
        }
    }

    /// The common stop: on the queue (waiting for it), end the generation, run `end` (close what the
    /// receiver opened), cancel timers, report `stopped` and drop the handler.
    func stop(_ end: () -> Void) {
        queue.sync {
            _ = newGeneration()
            end()
            cancelTimers()
            setState(.stopped)
            setHandler(nil)
        }
    }

    func newGeneration() -> Int {
        generation += 1
        return generation
    }

    func updateStatus(_ change: (inout ReceiverStatus) -> Void) {
        snapshot.withLock { change(&$0) }
    }

    /// Records a state change and tells the owner.
    func setState(_ state: ReceiverStatus.State, speed: Int? = nil) {
        let now = wallClockSeconds()
        let unchanged = snapshot.withLock { $0.state == state && (speed == nil || $0.speed == speed) }
        if unchanged { return }
        let current = snapshot.withLock { s -> ReceiverStatus in
            if state == .connected && s.state != .connected { s.connectedSince = now }
            if state != .connected { s.connectedSince = nil }
            s.state = state
            if let speed { s.speed = speed }
            return s
        }
        handler?(.status(current))
        if state != .connected { markStale() }
    }

    /// Delivers a fix: counts it, restarts the staleness watch when it has a position.
    func deliver(_ fix: Fix) {
        var fix = fix
        fix.device = name
        if fix.hasPosition {
            let now = monotonicSeconds()
            if let last = lastFixArrival {
                let interval = now - last
                if interval > 0.01 { cycle = min(max(interval, 0.05), 10) }
            }
            lastFixArrival = now
            stale = false
            snapshot.withLock {
                $0.fixes += 1
                $0.lastFixTime = fix.time
            }
            if staleTimerEnabled { armStaleTimer() }
        }
        handler?(.fix(fix))
    }

    /// Seconds without a valid fix before the receiver reports no-fix.
    var staleAfter: Double { configuredStaleAfter ?? 3 * cycle }

    /// Seconds until the fix goes stale (0 when due), or nil when there is nothing to watch.
    func secondsUntilStale() -> Double? {
        guard !stale, let last = lastFixArrival else { return nil }
        return max(0, last + staleAfter - monotonicSeconds())
    }

    /// Reports the no-fix if the last fix is `staleAfter` old.
    func checkStaleness() {
        if let remaining = secondsUntilStale(), remaining <= 0.001 { markStale() }
    }

    /// Starts the staleness watch unless it runs: one timer, not one per fix — when it fires it either
    /// reports the no-fix or sets itself for `staleAfter` after the latest fix (rescheduling a dispatch
    /// timer on every fix would cost a wake-up of libdispatch's timer thread per fix).
    private func armStaleTimer() {
        guard staleTimer == nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + staleAfter)
        timer.setEventHandler { [weak self] in self?.staleTimerFired() }
        staleTimer = timer
        timer.resume()
    }

    private func staleTimerFired() {
        if let remaining = secondsUntilStale(), remaining > 0.001 {
            staleTimer?.schedule(deadline: .now() + remaining)
        } else {
            markStale()
        }
    }

    /// Reports a no-fix once, instead of letting the last position stand.
    func markStale() {
        staleTimer?.cancel()
        staleTimer = nil
        guard !stale else { return }
        stale = true
        handler?(.fix(Fix(device: name, mode: .noFix)))
    }

    /// Runs `action` after the next backoff delay, unless the receiver was stopped or restarted meanwhile.
    func retryLater(_ action: @escaping @Sendable () -> Void) {
        let delay = backoff.nextDelay()
        let expected = generation
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, self.generation == expected else { return }
            action()
        }
    }

    func cancelTimers() {
        staleTimer?.cancel()
        staleTimer = nil
    }
}

/// CLOCK_MONOTONIC in seconds.
func monotonicSeconds() -> Double {
    Double(DispatchTime.now().uptimeNanoseconds) / 1e9
}
