import LocationCore

/// The server's messages other than TPV (docs/PROTOCOL.md "Server messages"), encoded as JSON lines.
public enum ServerMessage {
    /// `VERSION`, sent on connect.
    public static func version(release: String) -> [UInt8] {
        var w = JSONObjectWriter()
        w.begin()
        w.field("class", "VERSION")
        w.field("release", release)
        w.field("proto_major", ProtocolVersion.major)
        w.field("proto_minor", ProtocolVersion.minor)
        w.end()
        return w.bytes
    }

    /// `ERROR` naming the request class and the problem.
    public static func error(request: String, message: String) -> [UInt8] {
        var w = JSONObjectWriter()
        w.begin()
        w.field("class", "ERROR")
        w.field("request", request)
        w.field("message", message)
        w.end()
        return w.bytes
    }

    /// The `WATCH` acknowledgement: the effective subscription.
    public static func watch(enable: Bool, minInterval: Double, distanceFilter: Double) -> [UInt8] {
        var w = JSONObjectWriter()
        w.begin()
        w.field("class", "WATCH")
        w.field("enable", enable)
        w.field("minInterval", minInterval)
        w.field("distanceFilter", distanceFilter)
        w.end()
        return w.bytes
    }

    /// `STATE`: the fix was lost (with the reason) or came back.
    public static func state(fix: Bool, reason: String?) -> [UInt8] {
        var w = JSONObjectWriter()
        w.begin()
        w.field("class", "STATE")
        w.field("fix", fix)
        w.field("reason", reason)
        w.end()
        return w.bytes
    }

    /// `POLL` reply wrapping one TPV line (without its newline).
    public static func poll(tpv: [UInt8]) -> [UInt8] {
        var out = Array(#"{"class":"POLL","tpv":["#.utf8)
        var body = tpv
        if body.last == 10 { body.removeLast() }
        out.append(contentsOf: body)
        out.append(contentsOf: Array("]}\n".utf8))
        return out
    }
}

/// One receiver's line in a `STATUS` reply.
public struct ReceiverReport: Sendable, Equatable {
    public var name: String
    public var type: String
    public var path: String
    /// `starting`, `connected`, `unavailable`, `stopped`.
    public var state: String
    public var reason: String?
    public var speed: Int?
    /// Unix seconds.
    public var connectedSince: Double?
    public var sentences: Int
    public var fixes: Int
    public var errors: Int
    public var lastFixTime: UTCTime?
    public var priority: Int

    public init(name: String, type: String, path: String, state: String, reason: String? = nil, speed: Int? = nil,
                connectedSince: Double? = nil, sentences: Int = 0, fixes: Int = 0, errors: Int = 0,
                lastFixTime: UTCTime? = nil, priority: Int = 0) {
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

extension ServerMessage {
    /// `STATUS` reply.
    public static func status(mode: FixMode, clients: Int, receivers: [ReceiverReport]) -> [UInt8] {
        var w = JSONObjectWriter(reservingCapacity: 512)
        w.begin()
        w.field("class", "STATUS")
        w.field("mode", mode.rawValue)
        w.field("clients", clients)
        w.beginArray("receivers")
        for r in receivers {
            w.beginElement()
            w.field("name", r.name)
            w.field("type", r.type)
            w.field("path", r.path)
            w.field("state", r.state)
            w.field("reason", r.reason)
            w.field("speed", r.speed)
            if let since = r.connectedSince {
                let ms = Int((since * 1000).rounded(.down))
                let days = ms >= 0 ? ms / UTCTime.millisecondsPerDay : (ms - UTCTime.millisecondsPerDay + 1) / UTCTime.millisecondsPerDay
                let time = UTCTime(date: CivilDate(daysSinceUnixEpoch: days), millisecondsOfDay: ms - days * UTCTime.millisecondsPerDay)
                w.rawStringField("connectedSince") { time.appendISO8601(to: &$0) }
            }
            w.field("sentences", r.sentences)
            w.field("fixes", r.fixes)
            w.field("errors", r.errors)
            if let t = r.lastFixTime, t.date != nil { w.rawStringField("lastFixTime") { t.appendISO8601(to: &$0) } }
            w.field("priority", r.priority)
            w.endElement()
        }
        w.endArray()
        w.end()
        return w.bytes
    }
}
