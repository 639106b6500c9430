import FoundationEssentials
import LocationCore

// The server's JSON lines as this library reads them (docs/PROTOCOL.md "Server messages"). Every member
// is optional here: absent means "not known", and a missing required member is reported by the caller
// as `LocationClientError.invalidReply`. Unknown members are ignored (a newer daemon may add some).

/// The `class` member alone, to route a line.
struct Envelope: Decodable {
    var `class`: String?
}

/// `VERSION`.
struct VersionReply: Decodable {
    var release: String?
    var proto_major: Int?
    var proto_minor: Int?
}

/// `ERROR`.
struct ErrorReply: Decodable {
    var request: String?
    var message: String?
}

/// `STATE`.
struct StateReply: Decodable {
    var fix: Bool?
    var reason: String?
}

/// `TPV` (gpsd_json(5) plus `heading` and `accuracy`).
struct TPVReply: Decodable {
    var device: String?
    var mode: Int?
    var time: String?
    var lat: Double?
    var lon: Double?
    var altHAE: Double?
    var altMSL: Double?
    var speed: Double?
    var track: Double?
    var climb: Double?
    var eph: Double?
    var epv: Double?
    var heading: Double?
    var accuracy: String?

    /// The fix mode; gpsd's 0 ("not seen yet") and unknown values count as no fix.
    var fixMode: FixMode { FixMode(rawValue: mode ?? 1) ?? .noFix }

    /// The location, when the TPV has a 2D/3D mode and a position; nil otherwise.
    func location(json: String?) -> Location? {
        guard fixMode.hasPosition, let lat, let lon, lat.isFinite, lon.isFinite else { return nil }
        return Location(latitude: lat, longitude: lon, altitude: altMSL, ellipsoidalAltitude: altHAE,
                        horizontalAccuracy: eph, verticalAccuracy: epv, course: track, speed: speed,
                        heading: heading, climb: climb, timestamp: time.flatMap(parseISO8601),
                        accuracyAuthorization: accuracy.flatMap(AccuracyAuthorization.init(rawValue:)),
                        device: device, mode: fixMode, json: json)
    }
}

/// `POLL` reply: the fix in a one-element `tpv` array.
struct PollReply: Decodable {
    var tpv: [TPVReply]?
}

/// `STATUS` reply.
struct StatusReply: Decodable {
    struct Receiver: Decodable {
        var name: String?
        var type: String?
        var path: String?
        var state: String?
        var reason: String?
        var speed: Int?
        var connectedSince: String?
        var sentences: Int?
        var fixes: Int?
        var errors: Int?
        var lastFixTime: String?
        var priority: Int?
    }

    var mode: Int?
    var clients: Int?
    var receivers: [Receiver]?

    /// The public value; receivers without a name are reported as `"?"`.
    func status(json: String?) -> DaemonStatus {
        let list = (receivers ?? []).map { r in
            DaemonStatus.Receiver(name: r.name ?? "?", type: r.type ?? "?", path: r.path, state: r.state ?? "?",
                                  reason: r.reason, speed: r.speed,
                                  connectedSince: r.connectedSince.flatMap(parseISO8601),
                                  sentences: r.sentences ?? 0, fixes: r.fixes, errors: r.errors ?? 0,
                                  lastFixTime: r.lastFixTime.flatMap(parseISO8601), priority: r.priority ?? 0)
        }
        return DaemonStatus(mode: mode.flatMap { FixMode(rawValue: $0) }, clients: clients ?? 0,
                            receivers: list, json: json)
    }
}

/// Decodes `type` from one line; nil when the line is not JSON of that shape.
func decodeLine<T: Decodable>(_ type: T.Type, _ line: [UInt8], with decoder: JSONDecoder) -> T? {
    try? decoder.decode(type, from: Data(line))
}

/// Parses the protocol's time format, ISO 8601 UTC `YYYY-MM-DDTHH:MM:SS[.fff]Z` (gpsd_json(5) TPV.time),
/// keeping milliseconds (further digits are truncated). Accepts a leap second, `23:59:60`.
/// - Returns: the time, or nil when the text is not in that form or names no real instant.
func parseISO8601(_ text: String) -> UTCTime? {
    let b = Array(text.utf8)
    guard b.count >= 20, b.last == UInt8(ascii: "Z") else { return nil }
    func number(_ range: Range<Int>) -> Int? {
        var value = 0
        for i in range {
            guard b[i] >= 48, b[i] <= 57 else { return nil }
            value = value * 10 + Int(b[i] - 48)
        }
        return value
    }
    guard b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T"),
          b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
          let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
          let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
          let date = CivilDate(year: year, month: month, day: day),
          hour < 24, minute < 60, second < 60 || (second == 60 && hour == 23 && minute == 59)
    else { return nil }
    var milliseconds = 0
    let end = b.count - 1
    if end > 19 {
        guard b[19] == UInt8(ascii: "."), end > 20, let fraction = number(20..<end) else { return nil }
        let digits = end - 20
        var scaled = fraction
        if digits < 3 {
            for _ in digits..<3 { scaled *= 10 }
        } else {
            for _ in 3..<digits { scaled /= 10 }
        }
        milliseconds = scaled
    }
    return UTCTime(date: date, millisecondsOfDay: ((hour * 60 + minute) * 60 + second) * 1000 + milliseconds)
}

/// The text of the first element of the array member `member` of the JSON object in `line`, when that
/// element is an object: for a `POLL` reply, the TPV exactly as the server wrote it. Strings (and the
/// brackets inside them) are skipped correctly; nil when there is no such member or it is empty.
func firstObjectElement(ofArrayMember member: String, in line: [UInt8]) -> ArraySlice<UInt8>? {
    objectElements(ofArrayMember: member, in: line)?.first
}

/// Every element of the array member `member` of the JSON object in `line`, as text, when all of them
/// are objects (the `events` of an `AUDIT` reply exactly as the daemon stored them); nil when there is
/// no such member or an element is not an object.
func objectElements(ofArrayMember member: String, in line: [UInt8]) -> [ArraySlice<UInt8>]? {
    let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
    let target = Array(member.utf8)
    var depth = 0
    var index = 0
    var lastString: ArraySlice<UInt8> = []
    var lastKey: ArraySlice<UInt8> = []
    var insideTarget = false
    var elementStart: Int? = nil
    var elements: [ArraySlice<UInt8>] = []
    while index < line.count {
        let byte = line[index]
        switch byte {
        case quote:
            let start = index + 1
            index += 1
            while index < line.count, line[index] != quote {
                index += line[index] == backslash ? 2 : 1
            }
            guard index < line.count else { return nil }
            if insideTarget && depth == 2 { return nil }  // a string element
            lastString = line[start..<index]
        case UInt8(ascii: ":"):
            if depth == 1 { lastKey = lastString }
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            if insideTarget && depth == 2 {
                guard byte == UInt8(ascii: "{") else { return nil }
                elementStart = index
            }
            depth += 1
            if byte == UInt8(ascii: "["), depth == 2, lastKey.elementsEqual(target) { insideTarget = true }
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
            depth -= 1
            if insideTarget {
                if depth == 2, let start = elementStart {
                    elements.append(line[start...index])
                    elementStart = nil
                }
                if depth == 1 { return elements }
            }
        case UInt8(ascii: ","), 32, 9, 10, 13:
            break
        default:
            if insideTarget && depth == 2 { return nil }  // a number, true, false or null element
        }
        index += 1
    }
    return nil
}

/// `AUTHORIZATION`.
struct AuthorizationReply: Decodable {
    var status: String?
    var accuracy: String?
    var reason: String?

    /// The public value; nil when the status is missing or unknown.
    func authorization(json: String?) -> Authorization? {
        guard let status = status.flatMap(AuthorizationStatus.init(rawValue:)) else { return nil }
        return Authorization(status: status, accuracy: accuracy.flatMap(AccuracyAuthorization.init(rawValue:)),
                             reason: reason, json: json)
    }
}

/// A client as `ASK` and audit events describe it.
struct ClientReply: Decodable {
    var pid: Int?
    var uid: Int?
    var user: String?
    var exe: String?
    var unit: String?
    var name: String?

    var description: ClientDescription {
        ClientDescription(pid: pid, uid: uid, user: user, executable: exe, unit: unit, name: name)
    }
}

/// `ASK`.
struct AskReply: Decodable {
    var id: Int?
    var client: ClientReply?
    var request: String?
    var accuracy: String?
    var purposeKey: String?
    var purpose: String?
    var timeout: Double?

    /// The public value; nil without an id.
    func question(json: String?) -> AgentQuestion? {
        guard let id else { return nil }
        return AgentQuestion(id: id, client: client?.description ?? ClientDescription(), request: request ?? "?",
                             accuracy: accuracy.flatMap(AccuracyAuthorization.init(rawValue:)),
                             purposeKey: purposeKey, purpose: purpose, timeout: timeout, json: json)
    }
}

/// `ANSWERED`.
struct AnsweredReply: Decodable {
    var id: Int?
    var answer: String?
    var by: String?

    func notice(id: Int) -> AnsweredNotice {
        AnsweredNotice(id: id, answer: answer ?? "?", by: by)
    }
}

/// `GRANTS`.
struct GrantsReply: Decodable {
    struct Entry: Decodable {
        var executable: String?
        var unit: String?
        var user: String?
        var allowed: Bool?
        var accuracy: String?
        var created: String?
        var expires: String?
        var decidedBy: String?
        var pid: Int?
        var uid: Int?
        var exe: String?
        var granted: String?

        var subject: GrantSubject? {
            if let executable { return .executable(executable, user: user) }
            if let unit { return .unit(unit, user: user) }
            if let user { return .user(user) }
            return nil
        }

        var accuracyValue: AccuracyAuthorization? { accuracy.flatMap(AccuracyAuthorization.init(rawValue:)) }
    }

    var persistent: [Entry]?
    var preapproved: [Entry]?
    var once: [Entry]?

    /// The public value; stored entries without a subject are left out.
    func list(json: String?) -> GrantList {
        GrantList(
            persistent: (persistent ?? []).compactMap { e in
                e.subject.map {
                    GrantList.Persistent(subject: $0, allowed: e.allowed ?? false, accuracy: e.accuracyValue,
                                         created: e.created.flatMap(parseISO8601), expires: e.expires.flatMap(parseISO8601),
                                         decidedBy: e.decidedBy)
                }
            },
            preapproved: (preapproved ?? []).compactMap { e in
                e.subject.map {
                    GrantList.Preapproval(subject: $0, accuracy: e.accuracyValue, created: e.created.flatMap(parseISO8601),
                                          expires: e.expires.flatMap(parseISO8601))
                }
            },
            once: (once ?? []).map { e in
                GrantList.OneTime(pid: e.pid, uid: e.uid, executable: e.exe, unit: e.unit, accuracy: e.accuracyValue,
                                  granted: e.granted.flatMap(parseISO8601), expires: e.expires.flatMap(parseISO8601))
            },
            json: json)
    }
}

/// One element of an `AUDIT` reply's `events`.
struct AuditEventReply: Decodable {
    var unix: Double?
    var time: String?
    var event: String?
    var client: ClientReply?
    var request: String?
    var status: String?
    var accuracy: String?
    var reason: String?

    func event(json: String?) -> AuditEvent {
        AuditEvent(time: time.flatMap(parseISO8601), unixTime: unix, event: event ?? "?", client: client?.description,
                   request: request, status: status, accuracy: accuracy.flatMap(AccuracyAuthorization.init(rawValue:)),
                   reason: reason, json: json)
    }
}
