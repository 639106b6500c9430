import LocationCore

/// Why a server line could not be read as a `ServerMessage`.
public struct ServerMessageError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The line's `class` when it had one (a string), nil when the line is not a JSON object with one.
    public var className: String?
    /// What is wrong, e.g. `"not a JSON object"`, `"TPV.lat must be a number"`,
    /// `"unknown class \"GST\""`.
    public var message: String

    /// Makes the value; each parameter is the property of the same name (units there).
    public init(className: String?, message: String) {
        self.className = className
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

extension ServerMessage {
    /// One line (with or without its line end, CR LF too) read as RFC 8259 JSON (`JSONReader`).
    /// - Throws: `ServerMessageError` with `className` and "invalid JSON: …".
    static func readLine(_ line: some Collection<UInt8>, className: String?) throws(ServerMessageError) -> JSONValue {
        var bytes = Array(line)
        while let last = bytes.last, last == 10 || last == 13 { bytes.removeLast() }
        do {
            return try JSONReader.read(bytes)
        } catch {
            throw ServerMessageError(className: className, message: "invalid JSON: \(error)")
        }
    }

    /// Reads one server line (docs/PROTOCOL.md), strictly: the whole line must be RFC 8259 JSON
    /// (`JSONReader`), an object with a string `class` this protocol defines, and every member it knows
    /// of the type and, for the shared vocabulary (`accuracy`, `status`), the value the protocol allows;
    /// times must be ISO 8601 UTC. Unknown members are ignored and `null` counts as absent (a newer
    /// daemon may add some); of two same-named members the first counts.
    /// - Parameter line: the line, with or without its newline.
    /// - Returns: the message.
    /// - Throws: `ServerMessageError` naming the class (when it could be read) and the problem.
    public static func decode(_ line: some Collection<UInt8>) throws(ServerMessageError) -> ServerMessage {
        let document = try readLine(line, className: nil)
        guard case .object(let object) = document else {
            throw ServerMessageError(className: nil, message: "not a JSON object")
        }
        guard case .string(let name)? = object["class"] else {
            throw ServerMessageError(className: nil, message: "missing \"class\" (a string)")
        }
        let m = MemberReader(object, path: name)
        switch name {
        case "VERSION":
            return .version(Version(release: try m.string("release"), protocolMajor: try m.required(m.integer("proto_major"), "proto_major"),
                                    protocolMinor: try m.integer("proto_minor")))
        case "ERROR":
            return .error(Failure(request: try m.string("request"), message: try m.string("message"),
                                  nextReportIn: try m.number("nextReportIn")))
        case "WATCH":
            return .watch(Watch(enable: try m.bool("enable"), minInterval: try m.number("minInterval"),
                                distanceFilter: try m.number("distanceFilter"), satellites: try m.bool("satellites")))
        case "STATE":
            return .state(State(fix: try m.required(m.bool("fix"), "fix"), reason: try m.string("reason"), waiting: try m.string("waiting"),
                                nextReportIn: try m.number("nextReportIn")))
        case "POLL":
            return .poll(Poll(tpv: try m.objects("tpv").map { reader throws(ServerMessageError) in try TPV(reader) }))
        case "TPV":
            return .tpv(try TPV(m))
        case "SKY":
            return .sky(try Sky(m))
        case "STATUS":
            let receivers = try m.objects("receivers").map { r throws(ServerMessageError) in
                Status.Receiver(name: try r.string("name") ?? "?", type: try r.string("type") ?? "?", path: try r.string("path"),
                                state: try r.string("state"), reason: try r.string("reason"), speed: try r.integer("speed"),
                                connectedSince: try r.time("connectedSince"), sentences: try r.integer("sentences"),
                                fixes: try r.integer("fixes"), errors: try r.integer("errors"),
                                lastFixTime: try r.time("lastFixTime"), priority: try r.integer("priority") ?? 0,
                                device: try r.string("device"),
                                rejected: try r.rejections(),
                                lastRejection: try r.object("lastRejection").map(Status.Rejection.init))
            }
            let uplinks = try m.objects("uplinks").map { u throws(ServerMessageError) in
                Status.Uplink(name: try u.string("name") ?? "?", broker: try u.string("broker") ?? "?", topic: try u.string("topic") ?? "?",
                              accuracy: try u.string("accuracy") ?? "?", state: try u.string("state") ?? "?", reason: try u.string("reason"),
                              spooled: try u.integer("spooled") ?? 0, sent: try u.integer("sent") ?? 0, dropped: try u.integer("dropped") ?? 0)
            }
            return .status(Status(mode: try m.fixMode("mode"), clients: try m.integer("clients") ?? 0, receivers: receivers, uplinks: uplinks,
                                  you: try m.object("you").map(ClientDescription.init)))
        case "AUTHORIZATION":
            guard let status = try m.enumeration("status", AuthorizationStatus.self) else {
                throw m.error("status", "is missing")
            }
            return .authorization(Authorization(status: status, accuracy: try m.accuracy(), reason: try m.string("reason"),
                                                standing: try m.bool("standing") ?? false, inUse: try m.bool("inUse") ?? true))
        case "AGENT":
            return .agent
        case "ASK":
            return .ask(Ask(id: try m.required(m.integer("id"), "id"), client: try m.object("client").map(ClientDescription.init),
                            request: try m.string("request"), purposeKey: try m.string("purposeKey"),
                            accuracy: try m.accuracy(), purpose: try m.string("purpose"), timeout: try m.number("timeout"),
                            upgrade: try m.bool("upgrade") ?? false, remembers: try m.string("remembers"),
                            inUse: try m.string("inUse")))
        case "ANSWERED":
            return .answered(Answered(id: try m.required(m.integer("id"), "id"), answer: try m.string("answer"),
                                      by: try m.string("by")))
        case "GRANTS":
            return .grants(try Grants(m))
        case "AUDIT":
            return .audit(Audit(events: try m.objects("events").map { e throws(ServerMessageError) in try AuditRecord(e) },
                                next: try m.string("next")))
        default:
            throw ServerMessageError(className: name, message: "unknown class \"\(name)\"")
        }
    }
}

extension ServerMessage.TPV {
    init(_ m: MemberReader) throws(ServerMessageError) {
        // gpsd's 0 ("not seen yet") and modes a newer gpsd may add count as no fix.
        let mode = try m.integer("mode").flatMap(FixMode.init(rawValue:)) ?? .noFix
        self.init(device: try m.string("device"), mode: mode, status: try m.integer("status"), time: try m.time("time"),
                  latitude: try m.number("lat"), longitude: try m.number("lon"), altitudeHAE: try m.number("altHAE"),
                  altitudeMSL: try m.number("altMSL"), geoidSeparation: try m.number("geoidSep"),
                  speed: try m.number("speed"), track: try m.number("track"), magneticVariation: try m.number("magvar"),
                  climb: try m.number("climb"), eph: try m.number("eph"), epx: try m.number("epx"), epy: try m.number("epy"),
                  epv: try m.number("epv"), heading: try m.number("heading"), accuracy: try m.accuracy())
    }
}

extension ServerMessage.Grants {
    init(_ m: MemberReader) throws(ServerMessageError) {
        self.init(
            persistent: try m.objects("persistent").map { g throws(ServerMessageError) in
                Stored(subject: try g.subject(), allowed: try g.bool("allowed"), accuracy: try g.accuracy(),
                       created: try g.time("created"), expires: try g.time("expires"), decidedBy: try g.string("decidedBy"),
                       whenInUse: try g.bool("whenInUse") ?? false, whileRunning: try g.bool("whileRunning") ?? false,
                       effective: try g.object("effective").map { e throws(ServerMessageError) in
                           Effective(accuracy: try e.accuracy(), reason: try e.string("reason"))
                       })
            },
            preapproved: try m.objects("preapproved").map { p throws(ServerMessageError) in
                Preapproved(subject: try p.subject(), accuracy: try p.accuracy(), created: try p.time("created"),
                            expires: try p.time("expires"), standing: try p.bool("standing") ?? false,
                            decidedBy: try p.string("decidedBy"))
            },
            once: try m.objects("once").map { o throws(ServerMessageError) in
                OneTime(pid: try o.integer("pid"), uid: try o.integer("uid"), executable: try o.string("exe"),
                        unit: try o.string("unit"), accuracy: try o.accuracy(), granted: try o.time("granted"),
                        expires: try o.time("expires"), identified: try o.string("identified"))
            },
            effective: try m.object("effective").map { e throws(ServerMessageError) in
                Effective(accuracy: try e.accuracy(), reason: try e.string("reason"))
            },
            revoked: try m.integer("revoked"),
            uplinks: try m.objects("uplinks").map { u throws(ServerMessageError) in
                Uplink(name: try u.required(u.string("name"), "name"), broker: try u.string("broker") ?? "",
                       topic: try u.string("topic") ?? "", format: try u.string("format") ?? "", accuracy: try u.accuracy(),
                       requested: try u.enumeration("requested", AccuracyAuthorization.self) ?? .reduced,
                       sharing: try u.bool("sharing") ?? true, reason: try u.string("reason"))
            })
    }
}

extension ClientDescription {
    init(_ m: MemberReader) throws(ServerMessageError) {
        self.init(pid: try m.integer("pid"), uid: try m.integer("uid"), user: try m.string("user"),
                  executable: try m.string("exe"), unit: try m.string("unit"), name: try m.string("name"),
                  identified: try m.string("identified"))
    }
}

extension AuditRecord {
    /// Reads one audit event object (an `AUDIT.events` element, or a line of the daemon's audit file).
    /// - Throws: `ServerMessageError` (class `"AUDIT"`) naming the member that is wrong.
    public init(_ object: JSONValue) throws(ServerMessageError) {
        guard case .object(let members) = object else {
            throw ServerMessageError(className: "AUDIT", message: "AUDIT.events[] must be objects")
        }
        try self.init(MemberReader(members, path: "AUDIT.events[]"))
    }

    /// Reads one line of the daemon's audit files (the object `encoded()` writes), as strictly as
    /// `ServerMessage.decode` reads an `AUDIT.events` element: RFC 8259 JSON, known members of their
    /// type, `time` ISO 8601 UTC, `accuracy` `"full"` or `"reduced"`; unknown members are ignored.
    /// - Parameter line: the line, with or without its newline.
    /// - Throws: `ServerMessageError` (class `"AUDIT"`) saying what is wrong.
    public init(decoding line: some Collection<UInt8>) throws(ServerMessageError) {
        try self.init(ServerMessage.readLine(line, className: "AUDIT"))
    }

    init(_ m: MemberReader) throws(ServerMessageError) {
        self.init(unixTime: try m.number("unix"), time: try m.time("time"), event: try m.string("event"),
                  client: try m.object("client").map(ClientDescription.init), request: try m.string("request"),
                  status: try m.string("status"), accuracy: try m.accuracy(), reason: try m.string("reason"))
    }
}

/// Reads typed members of one object; errors name the member by its path (`STATUS.receivers[].speed`).
struct MemberReader {
    let members: [String: JSONValue]
    /// Where the object is, for messages: the class, then `.member` and `[]` steps.
    let path: String

    init(_ members: [String: JSONValue], path: String) {
        self.members = members
        self.path = path
    }

    /// The class at the start of `path`.
    private var className: String { String(path.prefix { $0 != "." }) }

    func error(_ key: String, _ problem: String) -> ServerMessageError {
        ServerMessageError(className: className, message: "\(path).\(key) \(problem)")
    }

    /// The member read by `read`; nil when absent or `null`.
    /// - Throws: "KEY must be `type`" when present but `read` gives nil.
    private func member<T>(_ key: String, _ type: String, _ read: (JSONValue) -> T?) throws(ServerMessageError) -> T? {
        guard let v = members.present(key) else { return nil }
        guard let t = read(v) else { throw error(key, "must be \(type)") }
        return t
    }

    func required<T>(_ value: T?, _ key: String) throws(ServerMessageError) -> T {
        guard let value else { throw error(key, "is missing") }
        return value
    }

    func string(_ key: String) throws(ServerMessageError) -> String? { try member(key, "a string") { $0.stringValue } }

    func bool(_ key: String) throws(ServerMessageError) -> Bool? { try member(key, "true or false") { $0.boolValue } }

    func number(_ key: String) throws(ServerMessageError) -> Double? { try member(key, "a number") { $0.doubleValue } }

    /// An integer, however written (`7`, `7.0`, `7e0`), as `RequestParser` reads one.
    func integer(_ key: String) throws(ServerMessageError) -> Int? { try member(key, "an integer") { $0.integerValue } }

    func time(_ key: String) throws(ServerMessageError) -> UTCTime? {
        guard let text = try string(key) else { return nil }
        guard let t = UTCTime(iso8601: text) else { throw error(key, "must be an ISO 8601 UTC time") }
        return t
    }

    func enumeration<E: RawRepresentable & CaseIterable>(_ key: String, _ type: E.Type) throws(ServerMessageError) -> E?
    where E.RawValue == String {
        guard let text = try string(key) else { return nil }
        guard let e = E(rawValue: text) else {
            let names = E.allCases.map { "\"\($0.rawValue)\"" }
            throw error(key, "must be " + names.dropLast().joined(separator: ", ") + " or " + (names.last ?? ""))
        }
        return e
    }

    func accuracy() throws(ServerMessageError) -> AccuracyAuthorization? {
        try enumeration("accuracy", AccuracyAuthorization.self)
    }

    func fixMode(_ key: String) throws(ServerMessageError) -> FixMode? {
        guard let i = try integer(key) else { return nil }
        guard let mode = FixMode(rawValue: i) else { throw error(key, "must be 1, 2 or 3") }
        return mode
    }

    func object(_ key: String) throws(ServerMessageError) -> MemberReader? {
        try member(key, "an object") { v in
            if case .object(let o) = v { MemberReader(o, path: "\(path).\(key)") } else { nil }
        }
    }

    /// The elements of an array of objects; absent reads as empty.
    func objects(_ key: String) throws(ServerMessageError) -> [MemberReader] {
        guard let v = members.present(key) else { return [] }
        guard case .array(let items) = v else { throw error(key, "must be an array of objects") }
        var readers: [MemberReader] = []
        for item in items {
            guard case .object(let o) = item else { throw error(key, "must be an array of objects") }
            readers.append(MemberReader(o, path: "\(path).\(key)[]"))
        }
        return readers
    }

    /// The grant subject members: `executable` or `unit` (with `user`), or `user` alone; nil for none.
    func subject() throws(ServerMessageError) -> GrantTarget? {
        let user = try string("user")
        if let executable = try string("executable") { return .executable(executable, user: user) }
        if let unit = try string("unit") { return .unit(unit, user: user) }
        return user.map { .user($0) }
    }
}
