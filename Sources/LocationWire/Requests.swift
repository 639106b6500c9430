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

    /// The request's class name, for replies and errors.
    public var className: String {
        switch self {
        case .watch: return "WATCH"
        case .poll: return "POLL"
        case .status: return "STATUS"
        }
    }
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
