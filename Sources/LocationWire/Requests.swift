import FoundationEssentials

/// Protocol version spoken by this build (docs/PROTOCOL.md).
public enum ProtocolVersion {
    public static let major = 1
    public static let minor = 0
    /// The largest request line accepted, bytes (newline excluded).
    public static let maximumRequestLength = 16 * 1024
}

/// A client request (docs/PROTOCOL.md "Requests").
public enum Request: Equatable, Sendable {
    /// Subscribe (`enable`) or unsubscribe; `minInterval` seconds, `distanceFilter` metres.
    case watch(enable: Bool, minInterval: Double, distanceFilter: Double)
    /// One fix newer than the request, waiting up to `timeout` seconds.
    case poll(timeout: Double)
    /// The daemon's state.
    case status
    /// Ask for authorization: `kind` "once" or "persistent", `accuracy` "full" or "reduced"; `name` is
    /// display text for the agent, never a key.
    case authorize(kind: String, accuracy: String, name: String?)
    /// The current authorization status.
    case authorization
    /// Temporary full accuracy for this connection, citing a purpose key declared in the config.
    case fullAccuracy(purposeKey: String)
    /// Register as an agent (root or admin group).
    case agent
    /// An agent's answer to ASK `id`: "allowOnce", "allowAlways" or "deny", optionally at reduced accuracy.
    case answer(id: Int, answer: String, accuracy: String?)
    /// List persistent grants, live one-time grants and pre-approvals (admin).
    case grants
    /// Grant ahead (admin): `kind` "once" (pre-approve the next connection) or "persistent".
    case grant(subject: GrantTarget, kind: String, accuracy: String, expires: Double?)
    /// Revoke every grant of a subject (admin); takes effect at once.
    case revoke(subject: GrantTarget)
    /// The audit events at or after `since` (Unix seconds) (admin).
    case audit(since: Double?)

    /// The request's class name, for replies and errors.
    public var className: String {
        switch self {
        case .watch: return "WATCH"
        case .poll: return "POLL"
        case .status: return "STATUS"
        case .authorize: return "AUTHORIZE"
        case .authorization: return "AUTHORIZATION"
        case .fullAccuracy: return "FULLACCURACY"
        case .agent: return "AGENT"
        case .answer: return "ANSWER"
        case .grants: return "GRANTS"
        case .grant: return "GRANT"
        case .revoke: return "REVOKE"
        case .audit: return "AUDIT"
        }
    }
}

/// Whom an administrator's GRANT or REVOKE is about.
public enum GrantTarget: Equatable, Sendable {
    case executable(String)
    case unit(String)
    case user(String)
}

/// Why a request line was refused; `request` is its class when it could be read.
public struct RequestError: Error, Equatable, Sendable {
    public var request: String
    public var message: String

    public init(request: String, message: String) {
        self.request = request
        self.message = message
    }
}

/// Parses request lines, validating in a fixed order: size → syntax → class → member types and ranges.
public enum RequestParser {
    private struct Envelope: Decodable {
        var `class`: String?
    }

    private struct Members: Decodable {
        var enable: Bool?
        var minInterval: Double?
        var distanceFilter: Double?
        var timeout: Double?
        var authorization: String?
        var accuracy: String?
        var name: String?
        var purposeKey: String?
        var id: Int?
        var answer: String?
        var executable: String?
        var unit: String?
        var user: String?
        var kind: String?
        var expires: Double?
        var since: Double?
    }

    /// Parses one line (without its newline): JSON `{"class":...}` or gpsd's `?CLASS={...};` / `?CLASS;`.
    /// - Throws: `RequestError` naming the request class (or "?") and the problem.
    public static func parse(_ line: [UInt8]) throws(RequestError) -> Request {
        guard line.count <= ProtocolVersion.maximumRequestLength else {
            throw RequestError(request: "?", message: "request longer than \(ProtocolVersion.maximumRequestLength) bytes")
        }
        var bytes = line
        while let last = bytes.last, last == 13 || last == 32 || last == 9 { bytes.removeLast() }
        var impliedClass: String? = nil
        if bytes.first == UInt8(ascii: "?") {
            // gpsd style: ?WATCH={...}; or ?POLL;
            if bytes.last == UInt8(ascii: ";") { bytes.removeLast() }
            let body = bytes.dropFirst()
            let nameEnd = body.firstIndex(of: UInt8(ascii: "=")) ?? body.endIndex
            impliedClass = String(decoding: body[body.startIndex..<nameEnd], as: UTF8.self)
            bytes = nameEnd < body.endIndex ? Array(body[(nameEnd + 1)...]) : Array("{}".utf8)
        }
        let data = Data(bytes)
        let decoder = JSONDecoder()
        let envelope: Envelope
        do {
            envelope = try decoder.decode(Envelope.self, from: data)
        } catch {
            throw RequestError(request: impliedClass ?? "?", message: Self.describe(error, whole: true))
        }
        guard let name = impliedClass ?? envelope.class else {
            throw RequestError(request: "?", message: "missing \"class\"")
        }
        let members: Members
        do {
            members = try decoder.decode(Members.self, from: data)
        } catch {
            throw RequestError(request: name, message: Self.describe(error, whole: false))
        }
        switch name {
        case "WATCH":
            let interval = members.minInterval ?? 0
            let distance = members.distanceFilter ?? 0
            guard interval >= 0, interval.isFinite else {
                throw RequestError(request: name, message: "minInterval must be a number of seconds ≥ 0")
            }
            guard distance >= 0, distance.isFinite else {
                throw RequestError(request: name, message: "distanceFilter must be a number of metres ≥ 0")
            }
            return .watch(enable: members.enable ?? true, minInterval: interval, distanceFilter: distance)
        case "POLL":
            let timeout = members.timeout ?? 10
            guard timeout > 0, timeout <= 300 else {
                throw RequestError(request: name, message: "timeout must be a number of seconds in (0, 300]")
            }
            return .poll(timeout: timeout)
        case "STATUS":
            return .status
        case "AUTHORIZE":
            let kind = members.authorization ?? "once"
            guard kind == "once" || kind == "persistent" else {
                throw RequestError(request: name, message: "authorization must be \"once\" or \"persistent\"")
            }
            let accuracy = members.accuracy ?? "full"
            guard accuracy == "full" || accuracy == "reduced" else {
                throw RequestError(request: name, message: "accuracy must be \"full\" or \"reduced\"")
            }
            return .authorize(kind: kind, accuracy: accuracy, name: members.name)
        case "AUTHORIZATION":
            return .authorization
        case "FULLACCURACY":
            guard let key = members.purposeKey, !key.isEmpty else {
                throw RequestError(request: name, message: "purposeKey must be a non-empty string")
            }
            return .fullAccuracy(purposeKey: key)
        case "AGENT":
            return .agent
        case "ANSWER":
            guard let id = members.id else { throw RequestError(request: name, message: "id must be the ASK's id") }
            guard let answer = members.answer, ["allowOnce", "allowAlways", "deny"].contains(answer) else {
                throw RequestError(request: name, message: "answer must be \"allowOnce\", \"allowAlways\" or \"deny\"")
            }
            if let a = members.accuracy, a != "full" && a != "reduced" {
                throw RequestError(request: name, message: "accuracy must be \"full\" or \"reduced\"")
            }
            return .answer(id: id, answer: answer, accuracy: members.accuracy)
        case "GRANTS":
            return .grants
        case "GRANT", "REVOKE":
            let targets = [members.executable.map(GrantTarget.executable), members.unit.map(GrantTarget.unit),
                           members.user.map(GrantTarget.user)].compactMap { $0 }
            guard targets.count == 1, let target = targets.first else {
                throw RequestError(request: name, message: "give exactly one of executable, unit or user")
            }
            if name == "REVOKE" { return .revoke(subject: target) }
            let kind = members.kind ?? "persistent"
            guard kind == "once" || kind == "persistent" else {
                throw RequestError(request: name, message: "kind must be \"once\" or \"persistent\"")
            }
            let accuracy = members.accuracy ?? "full"
            guard accuracy == "full" || accuracy == "reduced" else {
                throw RequestError(request: name, message: "accuracy must be \"full\" or \"reduced\"")
            }
            if let e = members.expires, !(e > 0) {
                throw RequestError(request: name, message: "expires must be a number of seconds > 0")
            }
            return .grant(subject: target, kind: kind, accuracy: accuracy, expires: members.expires)
        case "AUDIT":
            return .audit(since: members.since)
        default:
            throw RequestError(request: name, message: "unknown class \"\(name)\"")
        }
    }

    static func describe(_ error: any Error, whole: Bool) -> String {
        if let e = error as? DecodingError {
            switch e {
            case .typeMismatch(let type, let context):
                let key = context.codingPath.last?.stringValue ?? "request"
                if key == "request" { return "not a JSON object" }
                return "\(key) must be \(Self.typeName(type))"
            case .dataCorrupted:
                return "invalid JSON"
            default:
                return "invalid request"
            }
        }
        return whole ? "invalid JSON" : "invalid request"
    }

    static func typeName(_ type: Any.Type) -> String {
        if type == Bool.self { return "true or false" }
        if type == Double.self { return "a number" }
        if type == String.self { return "a string" }
        return "\(type)"
    }
}
