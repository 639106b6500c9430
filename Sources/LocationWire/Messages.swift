import LocationCore

// The server's messages as the daemon builds them: byte-returning shorthands over the typed values
// in ServerMessages.swift, so that every line has one encoder.
extension ServerMessage {
    /// `VERSION`, sent on connect, with this build's `ProtocolVersion`.
    public static func version(release: String) -> [UInt8] {
        ServerMessage.version(Version(release: release)).encoded()
    }

    /// `ERROR` naming the request class (or `"?"`) and the problem.
    public static func error(request: String, message: String) -> [UInt8] {
        ServerMessage.error(Failure(request: request, message: message)).encoded()
    }

    /// The `WATCH` acknowledgement: the effective subscription (`minInterval` seconds,
    /// `distanceFilter` metres).
    public static func watch(enable: Bool, minInterval: Double, distanceFilter: Double, satellites: Bool = false) -> [UInt8] {
        ServerMessage.watch(Watch(enable: enable, minInterval: minInterval, distanceFilter: distanceFilter,
                                  satellites: satellites ? true : nil)).encoded()
    }

    /// `STATE`: the fix was lost (with the reason) or came back; with `waiting`, why nothing comes for now
    /// (`State.accuracyLimited`, `State.insufficientlyInUse`); `nextReportIn` in seconds (docs/PROTOCOL.md "STATE").
    public static func state(fix: Bool, reason: String?, waiting: String? = nil, nextReportIn: Double? = nil) -> [UInt8] {
        ServerMessage.state(State(fix: fix, reason: reason, waiting: waiting, nextReportIn: nextReportIn)).encoded()
    }

    /// `POLL` reply wrapping one TPV line as `GPSDEncoder.appendTPV` wrote it (the fan-out's fast path;
    /// a trailing newline is dropped). `ServerMessage.poll(Poll)` is the same message as a value.
    public static func poll(tpv: [UInt8]) -> [UInt8] {
        var out = Array(#"{"class":"POLL","tpv":["#.utf8)
        var body = tpv
        if body.last == 10 { body.removeLast() }
        out.append(contentsOf: body)
        out.append(contentsOf: Array("]}\n".utf8))
        return out
    }
}

/// One receiver's line in a `STATUS` reply, as the daemon builds it: the message's own receiver value.
public typealias ReceiverReport = ServerMessage.Status.Receiver

extension ServerMessage {
    /// `STATUS` reply.
    /// - Parameters:
    ///   - mode: the current fix mode as this client may know it; nil leaves `mode` out (a client that
    ///     may not see the location learns nothing about the fix from STATUS).
    ///   - fixDetails: whether to give each receiver's `fixes` count and `lastFixTime` (the timing of
    ///     fixes, for clients that may see them at full accuracy).
    public static func status(mode: FixMode?, clients: Int, receivers: [ReceiverReport], fixDetails: Bool = true,
                              uplinks: [ServerMessage.Status.Uplink] = [], you: ClientDescription? = nil) -> [UInt8] {
        // A client without full accuracy sees which receivers there are, not how they are doing: fix
        // counts and times are location data, and the sentence count and state tell the cadence, the
        // satellites in view (from the GSV count) and when the fix is lost; the line speed, once found
        // (`speed = auto`), when the receiver was opened.
        let list = fixDetails ? receivers : receivers.map { r in
            ReceiverReport(name: r.name, type: r.type, path: r.path, state: nil, speed: nil, sentences: nil, fixes: nil,
                           errors: nil, priority: r.priority)
        }
        return ServerMessage.status(Status(mode: mode, clients: clients, receivers: list, uplinks: uplinks, you: you)).encoded()
    }
}

extension ServerMessage {
    /// `AUTHORIZATION` from the shared vocabulary: `accuracy` only when authorized.
    /// - Parameters:
    ///   - standing: true for a one-time grant a standing approval gave.
    ///   - inUse: false for a When-In-Use client whose user has no active login session.
    public static func authorization(status: AuthorizationStatus, accuracy: AccuracyAuthorization?, reason: String,
                                     standing: Bool = false, inUse: Bool = true) -> [UInt8] {
        ServerMessage.authorization(Authorization(status: status, accuracy: accuracy, reason: reason, standing: standing,
                                                  inUse: inUse)).encoded()
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
