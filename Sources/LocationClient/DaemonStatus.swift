import LocationCore

/// The daemon's state: the reply to `STATUS` (docs/PROTOCOL.md "STATUS").
public struct DaemonStatus: Hashable, Sendable {
    /// One configured receiver (a `receivers[]` element).
    public struct Receiver: Hashable, Sendable {
        /// The config section name, e.g. `gnss0`.
        public var name: String
        /// `serial`, `gpsd` or `replay`.
        public var type: String
        /// Device path (serial), `host:port` (gpsd) or file (replay); nil when not given.
        public var path: String?
        /// `starting`, `connected`, `unavailable` or `stopped` (kept as text so that states a newer
        /// daemon adds still show).
        public var state: String
        /// Why it is unavailable, when it is.
        public var reason: String?
        /// Serial line speed, bit/s.
        public var speed: Int?
        /// When it connected, UTC.
        public var connectedSince: UTCTime?
        /// NMEA sentences read since the daemon started.
        public var sentences: Int
        /// Fixes produced since the daemon started; nil when this client may not see fix timing (no
        /// full-accuracy authorization).
        public var fixes: Int?
        /// Errors (bad checksums, garbled lines, read failures) since the daemon started.
        public var errors: Int
        /// Time of its last fix, UTC; nil when there was none, or this client may not see fix timing.
        public var lastFixTime: UTCTime?
        /// Failover priority: higher wins while it has a fix.
        public var priority: Int

        /// Makes a receiver report; counts default to 0.
        public init(name: String, type: String, path: String? = nil, state: String, reason: String? = nil,
                    speed: Int? = nil, connectedSince: UTCTime? = nil, sentences: Int = 0, fixes: Int? = 0,
                    errors: Int = 0, lastFixTime: UTCTime? = nil, priority: Int = 0) {
            self.name = name
            self.type = type
            self.path = path
            self.state = state
            self.reason = reason
            self.speed = speed
            self.connectedSince = connectedSince
            self.sentences = sentences
            self.fixes = fixes
            self.errors = errors
            self.lastFixTime = lastFixTime
            self.priority = priority
        }
    }

    /// The current fix mode: no fix, 2D, 3D (`mode`); at most 2D for a client with reduced accuracy, and
    /// nil for a client that may not see the location at all.
    public var mode: FixMode?
    /// Connected clients, this one included (`clients`).
    public var clients: Int
    /// The configured receivers, in the daemon's order (`receivers`).
    public var receivers: [Receiver]
    /// The `STATUS` object as the server sent it, one line without the newline; nil for values made in
    /// code.
    public var json: String?

    /// Makes a status value.
    public init(mode: FixMode?, clients: Int, receivers: [Receiver], json: String? = nil) {
        self.mode = mode
        self.clients = clients
        self.receivers = receivers
        self.json = json
    }
}
