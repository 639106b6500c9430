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
    /// - Parameters:
    ///   - mode: the current fix mode as this client may know it; nil leaves `mode` out (a client that
    ///     may not see the location learns nothing about the fix from STATUS).
    ///   - fixDetails: whether to give each receiver's `fixes` count and `lastFixTime` (the timing of
    ///     fixes, for clients that may see them at full accuracy).
    public static func status(mode: FixMode?, clients: Int, receivers: [ReceiverReport], fixDetails: Bool = true) -> [UInt8] {
        var w = JSONObjectWriter(reservingCapacity: 512)
        w.begin()
        w.field("class", "STATUS")
        if let mode { w.field("mode", mode.rawValue) }
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
            if fixDetails { w.field("fixes", r.fixes) }
            w.field("errors", r.errors)
            if fixDetails, let t = r.lastFixTime, t.date != nil { w.rawStringField("lastFixTime") { t.appendISO8601(to: &$0) } }
            w.field("priority", r.priority)
            w.endElement()
        }
        w.endArray()
        w.end()
        return w.bytes
    }
}

extension ServerMessage {
    /// `AUTHORIZATION`: the client's authorization status, accuracy authorization and the reason.
    public static func authorization(status: String, accuracy: String?, reason: String) -> [UInt8] {
        var w = JSONObjectWriter()
        w.begin()
        w.field("class", "AUTHORIZATION")
        w.field("status", status)
        w.field("accuracy", accuracy)
        w.field("reason", reason)
        w.end()
        return w.bytes
    }

    /// A generic object from already-encoded member pairs: `{"class":NAME,<members>}`.
    public static func object(_ name: String, members: [UInt8]) -> [UInt8] {
        var out = Array("{\"class\":\"\(name)\"".utf8)
        if !members.isEmpty {
            out.append(UInt8(ascii: ","))
            out.append(contentsOf: members)
        }
        out.append(contentsOf: Array("}\n".utf8))
        return out
    }
}

/// Builds the members of a JSON object (no braces) for `ServerMessage.object`.
public struct JSONMembers {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    private mutating func key(_ k: String) {
        if !bytes.isEmpty { bytes.append(UInt8(ascii: ",")) }
        var w = JSONObjectWriter(reservingCapacity: 16)
        w.appendString(k)
        bytes.append(contentsOf: w.bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func string(_ k: String, _ v: String?) {
        guard let v else { return }
        key(k)
        var w = JSONObjectWriter(reservingCapacity: v.utf8.count + 2)
        w.appendString(v)
        bytes.append(contentsOf: w.bytes)
    }

    public mutating func number(_ k: String, _ v: Double?) {
        guard let v, v.isFinite else { return }
        key(k)
        var w = JSONObjectWriter(reservingCapacity: 24)
        w.appendDouble(v)
        bytes.append(contentsOf: w.bytes)
    }

    public mutating func integer(_ k: String, _ v: Int?) {
        guard let v else { return }
        key(k)
        bytes.append(contentsOf: Array(String(v).utf8))
    }

    public mutating func bool(_ k: String, _ v: Bool) {
        key(k)
        bytes.append(contentsOf: Array((v ? "true" : "false").utf8))
    }

    /// A nested object.
    public mutating func object(_ k: String, _ members: JSONMembers) {
        key(k)
        bytes.append(UInt8(ascii: "{"))
        bytes.append(contentsOf: members.bytes)
        bytes.append(UInt8(ascii: "}"))
    }

    /// An array of nested objects.
    public mutating func objects(_ k: String, _ items: [JSONMembers]) {
        key(k)
        bytes.append(UInt8(ascii: "["))
        for (i, item) in items.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "{"))
            bytes.append(contentsOf: item.bytes)
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// An array of raw JSON values (e.g. audit lines, already JSON).
    public mutating func rawArray(_ k: String, _ items: [String]) {
        key(k)
        bytes.append(UInt8(ascii: "["))
        for (i, item) in items.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: Array(item.utf8))
        }
        bytes.append(UInt8(ascii: "]"))
    }
}
