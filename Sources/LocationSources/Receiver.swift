import LocationCore

/// What a receiver tells its owner: events only. Whether a fix is still live is not the receiver's to
/// judge — `FixSelector` does, from these events and the time.
public enum ReceiverEvent: Sendable {
    /// A fix (one per epoch), its `device` set to the receiver's name; a no-fix when the receiver's
    /// input said it has none (RMC status V, GGA quality 0, TPV mode 1).
    case fix(Fix)
    /// The receiver's state changed (connected, unavailable with a reason, autobaud result).
    case status(ReceiverStatus)
    /// The input counted so far changed: `sentences` framed (serial, replay) or JSON reports read
    /// (gpsd), and `errors` (rejected input: bad checksums, truncated or malformed sentences, read errors).
    case counts(sentences: Int, errors: Int)
}

/// A snapshot of one receiver, for `locationctl status` and logs.
public struct ReceiverStatus: Hashable, Sendable {
    public enum State: Hashable, Sendable {
        /// Opening, or searching for the line speed.
        case starting
        /// Reading.
        case connected
        /// Not readable; `reason` says why; it retries by itself.
        case unavailable(reason: String)
        /// Stopped by its owner (or a replay that ended without looping).
        case stopped
    }

    public var name: String
    /// `serial`, `gpsd` or `replay`.
    public var type: String
    /// Device path, `host:port` or file.
    public var path: String
    /// The device a gpsd receiver's fixes come from, as gpsd names it (TPV.device, e.g. `/dev/ttyACM0`); nil
    /// until gpsd has said, and for the other receivers (`path` is their device).
    public var device: String?
    public var state: State
    /// Line speed in bit/s (serial).
    public var speed: Int?
    /// Wall-clock time (Unix seconds, CLOCK_REALTIME) when the current connection was made.
    public var connectedSince: Double?
    /// Sentences framed (serial, replay) or JSON reports read (gpsd).
    public var sentences = 0
    /// Fixes with a position delivered.
    public var fixes = 0
    /// Rejected input: bad checksums, truncated or malformed sentences, read errors.
    public var errors = 0
    /// Fixes dropped or changed by the plausibility rules (`FixPlausibility`: 0,0, dates, time going
    /// backwards, jumps, speeds).
    public var implausibleFixes = 0
    /// Fixes whose position a plausibility rule kept from being published, by rule (`FixRejection.rule`),
    /// since the daemon started.
    public var rejectedFixes: [String: Int] = [:]
    /// The last of them, with its reason; nil when there was none.
    public var lastRejection: FixRejection?
    /// The rejection of its last fix with a position, while it is connected; nil when that fix was published (or
    /// none came since it connected): why it gives no fix now.
    public var rejecting: FixRejection?
    /// Fix time of the last fix with a position.
    public var lastFixTime: UTCTime?
    /// Configured priority.
    public var priority: Int

    public init(name: String, type: String, path: String, priority: Int) {
        self.name = name
        self.type = type
        self.path = path
        self.priority = priority
        self.state = .starting
    }

    /// True while connected.
    public var isConnected: Bool { state == .connected }
}

/// A source of fixes. Every kind produces the same events; nothing downstream knows where a fix came
/// from except its `device` name.
public protocol Receiver: AnyObject, Sendable {
    var name: String { get }
    var priority: Int { get }
    /// How long its valid fix stays live without a newer one (config `stale-after`); nil = 3 × its cycle.
    var staleAfter: Duration? { get }
    /// Which plausibility rules its fixes go through (docs/RECEIVERS.md).
    var plausibility: FixPlausibility.Configuration { get }
    /// The current snapshot.
    var status: ReceiverStatus { get }
    /// Starts reading; events are delivered on the receiver's own queue, in order.
    func start(_ handler: @escaping @Sendable (ReceiverEvent) -> Void)
    /// Stops reading and closes everything it opened.
    func stop()
}

extension Receiver {
    /// No configured `stale-after`: 3 × the receiver's cycle.
    public var staleAfter: Duration? { nil }
    /// A live receiver's plausibility rules: all of them (`FixPlausibility`).
    public var plausibility: FixPlausibility.Configuration { .init() }
}

/// Capped exponential backoff for reconnecting: 0.25 s, 0.5 s, 1 s, 2 s, 4 s, 4 s, ...
public struct Backoff: Sendable {
    /// The first delay.
    public let initial: Duration
    /// The longest delay.
    public let cap: Duration
    private var next: Duration

    /// - Parameters: the first retry comes after `initial` (≤ 0.5 s), never later than `cap` (≤ 5 s).
    public init(initial: Duration = .milliseconds(250), cap: Duration = .seconds(4)) {
        self.initial = initial
        self.cap = cap
        self.next = initial
    }

    /// The delay before the next attempt; doubles up to the cap.
    public mutating func nextDelay() -> Duration {
        let d = next
        next = min(next * 2, cap)
        return d
    }

    /// After a success: the next failure starts again at `initial`.
    public mutating func reset() { next = initial }
}

/// Makes the receiver for a configuration.
public func makeReceiver(_ configuration: ReceiverConfiguration) -> any Receiver {
    switch configuration.source {
    case .serial:
        return SerialReceiver(configuration)
    case .replay:
        return ReplayReceiver(configuration)
    case .gpsd:
        return GpsdReceiver(configuration)
    }
}
