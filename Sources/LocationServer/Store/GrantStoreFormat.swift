import LocationPolicy
import LocationWire

/// The JSON of `grants.json`: the layout Foundation's `JSONEncoder` gave `GrantSet`'s synthesized
/// `Codable`, so stores written before and after the move off Foundation read in both.
///
/// ```json
/// {"persistent": [{"accuracy": "full", "allowed": true, "created": 1700000000, "decidedBy": "agent",
///                  "expires": 1800000000, "subject": {"executable": {"_0": "/usr/bin/navit"}}}],
///  "preapprovals": [{"accuracy": "reduced", "created": 1700000000, "subject": {"user": {"_0": "1000"}}}]}
/// ```
///
/// A decision an agent made is about one user's program: its subject carries the uid next to the path,
/// as the synthesized `Codable` of `GrantSubject.executable(_:user:)` writes it (a nil `user` is left
/// out, so subjects without one read and write exactly as before):
///
/// ```json
/// "subject": {"executable": {"_0": "/usr/bin/python3.11", "user": "1000"}}
/// ```
///
/// Enums with a payload are an object with one member named after the case holding `{"_0": payload}`
/// (and `"user"` for an executable or unit limited to one user);
/// `accuracy` is `AccuracyAuthorization`'s raw value; times are Unix seconds; `expires` is left out when
/// nil (a `null` reads as nil). Unknown members are ignored, as `JSONDecoder` ignores them.
///
/// A standing approval (protocol 1.3) is a pre-approval with `"standing": true` and the `decidedBy` of
/// the agent or administrator who made it; a pre-approval without `standing` is a single one, used up by
/// the next connection, as in stores written before standing approvals existed:
///
/// ```json
/// "preapprovals": [{"accuracy": "full", "created": 1700000000, "standing": true, "decidedBy": "agent root (uid 0)",
///                   "subject": {"executable": {"_0": "/usr/bin/python3.11", "user": "1000"}}}]
/// ```
enum GrantStoreFormat {
    /// Why a store's JSON is not a `GrantSet`: `path` is where (`persistent[2].subject`).
    struct FormatError: Error, CustomStringConvertible {
        var path: String
        var message: String
        var description: String { "\(path): \(message)" }
    }

    /// The store's JSON for `grants`.
    /// - Returns: nil when a time is not finite (JSON has no NaN or infinity).
    static func encode(_ grants: GrantSet) -> JSONValue? {
        var persistent: [JSONValue] = []
        for grant in grants.persistent {
            guard grant.created.isFinite, grant.expires?.isFinite ?? true else { return nil }
            var members: [String: JSONValue] = [
                "subject": subject(grant.subject), "allowed": .bool(grant.allowed),
                "accuracy": .string(grant.accuracy.rawValue), "created": JSONValue(grant.created),
                "decidedBy": .string(grant.decidedBy),
            ]
            members["expires"] = grant.expires.map(JSONValue.init)
            // Written only for When In Use, so that Always grants read and write as before.
            if grant.whenInUse { members["whenInUse"] = .bool(true) }
            if grant.whileRunning { members["whileRunning"] = .bool(true) }
            persistent.append(.object(members))
        }
        var preapprovals: [JSONValue] = []
        for preapproval in grants.preapprovals {
            guard preapproval.created.isFinite, preapproval.expires?.isFinite ?? true else { return nil }
            var members: [String: JSONValue] = [
                "subject": subject(preapproval.subject), "accuracy": .string(preapproval.accuracy.rawValue),
                "created": JSONValue(preapproval.created),
            ]
            members["expires"] = preapproval.expires.map(JSONValue.init)
            // Written only for a standing approval, so that single pre-approvals read and write as before.
            if preapproval.standing { members["standing"] = .bool(true) }
            members["decidedBy"] = preapproval.decidedBy.map(JSONValue.string)
            preapprovals.append(.object(members))
        }
        return .object(["persistent": .array(persistent), "preapprovals": .array(preapprovals)])
    }

    private static func subject(_ subject: GrantSubject) -> JSONValue {
        let (name, payload, user): (String, String, String?)
        switch subject {
        case let .executable(path, owner): (name, payload, user) = ("executable", path, owner)
        case let .unit(unit, owner): (name, payload, user) = ("unit", unit, owner)
        case .user(let id): (name, payload, user) = ("user", id, nil)
        }
        var members: [String: JSONValue] = ["_0": .string(payload)]
        members["user"] = user.map(JSONValue.string)
        return .object([name: .object(members)])
    }

    /// The `GrantSet` in a store's JSON.
    /// - Throws: `FormatError` for a missing member, a member of the wrong type (a subject's `user` too),
    ///   an unknown accuracy, or a subject without exactly one of `executable`, `unit`, `user`.
    static func decode(_ json: JSONValue) throws(FormatError) -> GrantSet {
        let top = try Members(json, path: "")
        var grants = GrantSet()
        for (i, item) in try top.array("persistent").enumerated() {
            let m = try Members(item, path: "persistent[\(i)]")
            grants.persistent.append(PersistentGrant(
                subject: try subject(m.required("subject"), path: m.path + ".subject"), allowed: try m.bool("allowed"),
                accuracy: try m.accuracy(), created: try m.number("created"), expires: try m.optionalNumber("expires"),
                decidedBy: try m.string("decidedBy"), whenInUse: try m.optionalBool("whenInUse") ?? false,
                whileRunning: try m.optionalBool("whileRunning") ?? false))
        }
        for (i, item) in try top.array("preapprovals").enumerated() {
            let m = try Members(item, path: "preapprovals[\(i)]")
            grants.preapprovals.append(Preapproval(
                subject: try subject(m.required("subject"), path: m.path + ".subject"), accuracy: try m.accuracy(),
                created: try m.number("created"), expires: try m.optionalNumber("expires"),
                standing: try m.optionalBool("standing") ?? false, decidedBy: try m.optionalString("decidedBy")))
        }
        return grants
    }

    private static func subject(_ json: JSONValue, path: String) throws(FormatError) -> GrantSubject {
        let m = try Members(json, path: path)
        let cases = ["executable", "unit", "user"].filter { m.object[$0] != nil }
        guard cases.count == 1, let name = cases.first else {
            throw FormatError(path: path, message: "expected exactly one of executable, unit, user")
        }
        let members = try Members(m.required(name), path: path + "." + name)
        let payload = try members.string("_0")
        switch name {
        case "executable": return .executable(payload, user: try members.optionalString("user"))
        case "unit": return .unit(payload, user: try members.optionalString("user"))
        default: return .user(payload)
        }
    }

    /// An object's members, read with the path for errors.
    private struct Members {
        let object: [String: JSONValue]
        let path: String

        init(_ json: JSONValue, path: String) throws(FormatError) {
            guard case .object(let object) = json else { throw FormatError(path: path, message: "expected an object") }
            self.object = object
            self.path = path
        }

        func fail(_ key: String, _ message: String) -> FormatError {
            FormatError(path: path.isEmpty ? key : path + "." + key, message: message)
        }

        func required(_ key: String) throws(FormatError) -> JSONValue {
            guard let value = object[key], value != .null else { throw fail(key, "missing") }
            return value
        }

        func array(_ key: String) throws(FormatError) -> [JSONValue] {
            guard case .array(let items) = try required(key) else { throw fail(key, "expected an array") }
            return items
        }

        func string(_ key: String) throws(FormatError) -> String {
            guard case .string(let s) = try required(key) else { throw fail(key, "expected a string") }
            return s
        }

        func optionalString(_ key: String) throws(FormatError) -> String? {
            guard let value = object[key], value != .null else { return nil }
            return try string(key)
        }

        func bool(_ key: String) throws(FormatError) -> Bool {
            guard case .bool(let b) = try required(key) else { throw fail(key, "expected true or false") }
            return b
        }

        func optionalBool(_ key: String) throws(FormatError) -> Bool? {
            guard let value = object[key], value != .null else { return nil }
            return try bool(key)
        }

        func number(_ key: String) throws(FormatError) -> Double {
            guard let d = try required(key).doubleValue else { throw fail(key, "expected a number") }
            return d
        }

        func optionalNumber(_ key: String) throws(FormatError) -> Double? {
            guard let value = object[key], value != .null else { return nil }
            return try number(key)
        }

        func accuracy() throws(FormatError) -> AccuracyAuthorization {
            guard let a = AccuracyAuthorization(rawValue: try string("accuracy")) else {
                throw fail("accuracy", "expected \"full\" or \"reduced\"")
            }
            return a
        }
    }
}
