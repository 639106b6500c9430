/// Protocol version spoken by this build (docs/PROTOCOL.md).
public enum ProtocolVersion {
    public static let major = 1
    /// 1: GRANT and REVOKE take `user` together with `executable` or `unit`.
    /// 2: AUDIT answers in pages (`limit`, `cursor` and the reply's `next`), each far below a client's line
    /// limit; a request without `cursor` gets the first page, where a 1.1 daemon sent every event.
    /// 3: standing approvals: the agent's answer `allowOnceStanding`, `GRANT`'s `standing`, `standing`
    /// in `AUTHORIZATION` and in `GRANTS`' `preapproved[]` entries (with `decidedBy`).
    /// 4: When In Use: `AUTHORIZE`/`GRANT` kind `whenInUse` (and `always` for `persistent`), status
    /// `authorizedWhenInUse`, `AUTHORIZATION.inUse`, `ASK.upgrade`, `GRANTS`' `whenInUse`.
    /// 5: `identified` in a client's description (`ASK.client`, `AUDIT` events, `GRANTS`' `once[]`): how
    /// sure the daemon is of who the client is; `SHARE`'s `discard` (the uplinks' spooled reports dropped with
    /// the switch turned off; while off, the spool holds what it has instead of sending it).
    /// 6: `ASK.remembers` (what "allow always" stores), `ASK.inUse` (what in use means for the client:
    /// `activeSession`, or `running` outside every login session) and `GRANTS`' `whileRunning`; an Always request is one question
    /// (`request` `persistent`), where 1.4–1.5 asked When In Use and then the upgrade.
    /// Also 6: `STATE`'s `waiting` and `nextReportIn`: an authorized watcher that gets nothing for now is told why
    /// (reduced accuracy between paced reports, When In Use without an active session) and when the next
    /// report is due; a `STATE` now also follows each paced reduced report.
    public static let minor = 6
    /// The largest request line accepted, bytes (newline excluded).
    public static let maximumRequestLength = 16 * 1024
    /// The largest WATCH `minInterval`, seconds (one day): longer waits are a POLL's or a reconnection's.
    public static let maximumMinInterval = 86_400.0
    /// The longest SHARE pause (`for`), seconds: 366 days.
    public static let maximumSharePause = 366 * 86_400.0
}

/// A client request (docs/PROTOCOL.md "Requests").
public enum Request: Equatable, Sendable {
    /// Subscribe (`enable`) or unsubscribe; `minInterval` seconds, `distanceFilter` metres; `satellites`: a
    /// `SKY` after each full-accuracy `TPV`.
    case watch(enable: Bool, minInterval: Double, distanceFilter: Double, satellites: Bool = false)
    /// One fix newer than the request, waiting up to `timeout` seconds.
    case poll(timeout: Double)
    /// The daemon's state.
    case status
    /// Ask for authorization (`authorization`, default once; `accuracy`, default full); `name` is display
    /// text for the agent, never a key.
    case authorize(kind: AuthorizationKind, accuracy: AccuracyAuthorization, name: String?)
    /// The current authorization status.
    case authorization
    /// Temporary full accuracy for this connection, citing a purpose key declared in the config.
    case fullAccuracy(purposeKey: String)
    /// Register as an agent (root or admin group).
    case agent
    /// An agent's answer to ASK `id`, optionally lowering the accuracy granted.
    case answer(id: Int, answer: AnswerChoice, accuracy: AccuracyAuthorization?)
    /// List persistent grants, live one-time grants and pre-approvals (admin).
    case grants
    /// Grant ahead (admin): `kind` once (pre-approve the next connection) or persistent (the default);
    /// `accuracy` default full; `expires` seconds from now, nil for never; `standing` (kind once only): a
    /// standing approval, giving every later connection that asks for one-time access a one-time grant.
    case grant(subject: GrantTarget, kind: AuthorizationKind, accuracy: AccuracyAuthorization, expires: Double?,
               standing: Bool = false)
    /// Revoke every grant of a subject (admin); takes effect at once.
    case revoke(subject: GrantTarget)
    /// One page of the audit events at or after `since` (Unix seconds), oldest first (admin): the first
    /// page, or the one after `cursor` (the previous reply's `next`); at most `limit` events (1…256;
    /// nil: as many as fit in a page).
    case audit(since: Double?, cursor: String? = nil, limit: Int? = nil)
    /// The sharing switch of the uplinks (root, `admin-group` or `share-group`): `sharing` false pauses
    /// every uplink (for `forSeconds`, or until switched on) and holds what their spools have, true resumes
    /// them (the spools' reports go first); nil only asks. `discard` (with `sharing` false) also drops every
    /// report the spools hold, so that not even those go later.
    case share(sharing: Bool?, forSeconds: Double?, discard: Bool = false)

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
        case .share: return "SHARE"
        }
    }
}

/// Whom a grant is about (`GRANT`/`REVOKE`, the `GRANTS` entries): a program — an executable path or a
/// systemd unit — of one user (when `user` is given) or of every user, or every program of a user.
public enum GrantTarget: Hashable, Sendable, CustomStringConvertible {
    /// Programs run from this path (as the kernel reports it: symbolic links resolved); of `user` only
    /// when given (a name, or a uid as digits). An agent's answers are stored this way, with the uid.
    case executable(String, user: String? = nil)
    /// Processes in this systemd unit, e.g. `navit.service`; of `user` only when given.
    case unit(String, user: String? = nil)
    /// Every program of this user (a name, or a uid as digits).
    case user(String)

    /// `executable /usr/bin/navit`, `executable /usr/bin/python3 of user 1000`, `unit navit.service`,
    /// `user alice`.
    public var description: String {
        switch self {
        case let .executable(path, user): return "executable \(path)" + (user.map { " of user \($0)" } ?? "")
        case let .unit(unit, user): return "unit \(unit)" + (user.map { " of user \($0)" } ?? "")
        case .user(let user): return "user \(user)"
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
///
/// The replies match what this parser gave when it was built on Foundation's `JSONDecoder`: the same
/// messages, the first of two same-named members counts, `null` means absent, members are checked in
/// `Members`' order whatever the class, and an integer member accepts `1.0` or `1e2`. One difference:
/// the whole line must be RFC 8259 JSON (`JSONReader`), where `JSONDecoder` let malformed parts through
/// (`01`, `1.`, a trailing comma, a lone surrogate, bad UTF-8) unless they were in a member it read.
public enum RequestParser {
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
        let document: JSONValue
        do {
            document = try JSONReader.read(bytes)
        } catch {
            throw RequestError(request: impliedClass ?? "?", message: "invalid JSON")
        }
        guard case .object(let object) = document else {
            // `null` got JSONDecoder's "value not found" where other values got a type mismatch; kept.
            throw RequestError(request: impliedClass ?? "?", message: document == .null ? "invalid request" : "not a JSON object")
        }
        let declaredClass: String?
        switch object["class"] {
        case nil, .null?: declaredClass = nil
        case .string(let s)?: declaredClass = s
        default: throw RequestError(request: impliedClass ?? "?", message: "class must be a string")
        }
        guard let name = impliedClass ?? declaredClass else {
            throw RequestError(request: "?", message: "missing \"class\"")
        }
        let members = try Members(object, request: name)
        switch name {
        case "WATCH":
            let interval = members.minInterval ?? 0
            let distance = members.distanceFilter ?? 0
            // Bounded: the server keeps it as a `Duration`, whose Int128 attoseconds overflow (a trap) from
            // about 1.7e20 s; FuzzServer found a WATCH with 188888888888888888888.0 crashing the daemon.
            guard interval >= 0, interval <= ProtocolVersion.maximumMinInterval else {
                throw RequestError(request: name, message: "minInterval must be a number of seconds in [0, \(Int(ProtocolVersion.maximumMinInterval))]")
            }
            guard distance >= 0, distance.isFinite else {
                throw RequestError(request: name, message: "distanceFilter must be a number of metres ≥ 0")
            }
            return .watch(enable: members.enable ?? true, minInterval: interval, distanceFilter: distance,
                          satellites: members.satellites ?? false)
        case "POLL":
            let timeout = members.timeout ?? 10
            guard timeout > 0, timeout <= 300 else {
                throw RequestError(request: name, message: "timeout must be a number of seconds in (0, 300]")
            }
            return .poll(timeout: timeout)
        case "STATUS":
            return .status
        case "AUTHORIZE":
            guard let kind = AuthorizationKind(spelling: members.authorization ?? "once") else {
                throw RequestError(request: name, message: "authorization must be \"once\", \"whenInUse\", \"always\" or \"persistent\"")
            }
            guard let accuracy = AccuracyAuthorization(rawValue: members.accuracy ?? "full") else {
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
            guard let answer = members.answer.flatMap(AnswerChoice.init(rawValue:)) else {
                throw RequestError(request: name, message: "answer must be \"allowOnce\", \"allowOnceStanding\", \"allowAlways\" or \"deny\"")
            }
            var accuracy: AccuracyAuthorization? = nil
            if let text = members.accuracy {
                guard let value = AccuracyAuthorization(rawValue: text) else {
                    throw RequestError(request: name, message: "accuracy must be \"full\" or \"reduced\"")
                }
                accuracy = value
            }
            return .answer(id: id, answer: answer, accuracy: accuracy)
        case "GRANTS":
            return .grants
        case "GRANT", "REVOKE":
            // A program (executable or unit), of one user when `user` is given too; or a user alone.
            let target: GrantTarget
            switch (members.executable, members.unit, members.user) {
            case let (executable?, nil, user): target = .executable(executable, user: user)
            case let (nil, unit?, user): target = .unit(unit, user: user)
            case let (nil, nil, user?): target = .user(user)
            default: throw RequestError(request: name, message: "give executable or unit (each optionally with user), or user")
            }
            if name == "REVOKE" { return .revoke(subject: target) }
            // A client's executable is what the kernel reports: an absolute path. A relative one would
            // match no client, and the administrator would believe it granted.
            if case let .executable(path, _) = target, !path.hasPrefix("/") {
                throw RequestError(request: name, message: "executable must be an absolute path, not \"\(path)\"")
            }
            guard let kind = AuthorizationKind(spelling: members.kind ?? "persistent") else {
                throw RequestError(request: name, message: "kind must be \"once\", \"whenInUse\", \"always\" or \"persistent\"")
            }
            guard let accuracy = AccuracyAuthorization(rawValue: members.accuracy ?? "full") else {
                throw RequestError(request: name, message: "accuracy must be \"full\" or \"reduced\"")
            }
            if let e = members.expires, !(e > 0) {
                throw RequestError(request: name, message: "expires must be a number of seconds > 0")
            }
            let standing = members.standing ?? false
            if standing, kind != .once {
                throw RequestError(request: name, message: "standing needs kind \"once\"")
            }
            return .grant(subject: target, kind: kind, accuracy: accuracy, expires: members.expires, standing: standing)
        case "AUDIT":
            if let limit = members.limit, !(1...256).contains(limit) {
                throw RequestError(request: name, message: "limit must be an integer from 1 to 256")
            }
            return .audit(since: members.since, cursor: members.cursor, limit: members.limit)
        case "SHARE":
            if let seconds = members.forSeconds {
                guard seconds > 0, seconds <= ProtocolVersion.maximumSharePause else {
                    throw RequestError(request: name, message: "for must be a number of seconds in (0, \(Int(ProtocolVersion.maximumSharePause))]")
                }
                guard members.sharing == false else { throw RequestError(request: name, message: "for goes with \"sharing\":false") }
            }
            let discard = members.discard ?? false
            if discard, members.sharing != false { throw RequestError(request: name, message: "discard goes with \"sharing\":false") }
            return .share(sharing: members.sharing, forSeconds: members.forSeconds, discard: discard)
        default:
            throw RequestError(request: name, message: "unknown class \"\(name)\"")
        }
    }

    /// The members any request may carry, each optional (absent or `null` is nil). They are read in the
    /// order declared here, whatever the class, and the first of the wrong type is the one reported.
    private struct Members {
        var enable: Bool?
        var minInterval: Double?
        var distanceFilter: Double?
        var satellites: Bool?
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
        var standing: Bool?
        var since: Double?
        var cursor: String?
        var limit: Int?
        var sharing: Bool?
        var forSeconds: Double?
        var discard: Bool?

        /// - Throws: `RequestError` for `request`: "KEY must be true or false" / "a number" / "a string" /
        ///   "Int", or "invalid JSON" for a number the member's type cannot hold.
        init(_ object: [String: JSONValue], request: String) throws(RequestError) {
            /// The member read by `read`: nil when absent or `null`; "KEY must be `type`" when of another
            /// JSON type; "invalid JSON" for a number a `numeric` member's type cannot hold (as JSONDecoder
            /// reported it).
            func member<T>(_ key: String, _ type: String, numeric: Bool = false,
                           _ read: (JSONValue) -> T?) throws(RequestError) -> T? {
                guard let v = object.present(key) else { return nil }
                guard let t = read(v) else {
                    throw RequestError(request: request, message: numeric && v.isNumber ? "invalid JSON" : "\(key) must be \(type)")
                }
                return t
            }
            func bool(_ key: String) throws(RequestError) -> Bool? { try member(key, "true or false") { $0.boolValue } }
            func string(_ key: String) throws(RequestError) -> String? { try member(key, "a string") { $0.stringValue } }
            func double(_ key: String) throws(RequestError) -> Double? { try member(key, "a number", numeric: true) { $0.doubleValue } }
            // "Int" is the Swift type's name, as JSONDecoder's type mismatch printed it.
            func integer(_ key: String) throws(RequestError) -> Int? { try member(key, "Int", numeric: true) { $0.integerValue } }
            enable = try bool("enable")
            minInterval = try double("minInterval")
            distanceFilter = try double("distanceFilter")
            satellites = try bool("satellites")
            timeout = try double("timeout")
            authorization = try string("authorization")
            accuracy = try string("accuracy")
            name = try string("name")
            purposeKey = try string("purposeKey")
            id = try integer("id")
            answer = try string("answer")
            executable = try string("executable")
            unit = try string("unit")
            user = try string("user")
            kind = try string("kind")
            expires = try double("expires")
            standing = try bool("standing")
            since = try double("since")
            cursor = try string("cursor")
            limit = try integer("limit")
            sharing = try bool("sharing")
            forSeconds = try double("for")
            discard = try bool("discard")
        }
    }

    /// A JSON number as an Int the way `JSONDecoder` reads one: an integer literal exactly; otherwise
    /// through a Double, which must be whole and in range; and at 2^53 or more (where Doubles skip
    /// integers) through Foundation's `Decimal`: at most 38 significant digits, trailing zeros dropped,
    /// the rest within UInt64, the value truncated toward zero. Nil when it does not fit.
    static func integer(_ text: String) -> Int? {
        if let exact = Int(text) { return exact }
        guard let double = Double(text), let value = Int(exactly: double) else { return nil }
        if double.magnitude < 0x1p53 { return value }
        let negative = text.hasPrefix("-")
        let parts = text.utf8.dropFirst(negative ? 1 : 0).split(omittingEmptySubsequences: false) {
            $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E")
        }
        let mantissa = parts[0]
        let point = mantissa.firstIndex(of: UInt8(ascii: "."))
        var exponent = parts.count > 1 ? Int(String(decoding: parts[1], as: UTF8.self)) ?? 0 : 0
        if let point { exponent -= mantissa.distance(from: point, to: mantissa.endIndex) - 1 }
        var digits = Array(mantissa.filter { $0 != UInt8(ascii: ".") }.drop { $0 == UInt8(ascii: "0") })
        if digits.count > 38 {
            exponent += digits.count - 38
            digits.removeLast(digits.count - 38)
        }
        while digits.last == UInt8(ascii: "0") { digits.removeLast(); exponent += 1 }
        var magnitude: UInt64 = 0
        for digit in digits {
            let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
            guard !o1, !o2 else { return nil }
            magnitude = sum
        }
        for _ in 0..<abs(exponent) {
            if exponent < 0 {
                magnitude /= 10
            } else {
                let (times10, overflow) = magnitude.multipliedReportingOverflow(by: 10)
                guard !overflow else { return nil }
                magnitude = times10
            }
        }
        guard let result = Int(exactly: magnitude) else { return nil }
        return negative ? -result : result
    }
}
