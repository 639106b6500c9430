extension Request {
    /// The request as one line of the protocol (docs/PROTOCOL.md "Requests"): a JSON object with its
    /// `class` first, then its members in the order the protocol page lists them, and a newline.
    /// `RequestParser.parse` reads it back as the same request.
    ///
    /// Members at their defaults are still written (`"authorization":"once"`), except that nil optionals
    /// are left out and a `WATCH` that unsubscribes carries no filters (they only apply to a
    /// subscription; the parser reads them as 0).
    /// - Returns: the line's bytes, newline included.
    public func encoded() -> [UInt8] {
        var w = JSONObjectWriter(reservingCapacity: 128)
        w.begin()
        w.field("class", className)
        switch self {
        case let .watch(enable, minInterval, distanceFilter, satellites):
            w.field("enable", enable)
            if enable {
                w.field("minInterval", minInterval)
                w.field("distanceFilter", distanceFilter)
                if satellites { w.field("satellites", true) }
            }
        case .poll(let timeout):
            w.field("timeout", timeout)
        case .status, .authorization, .agent, .grants:
            break
        case let .authorize(kind, accuracy, name):
            w.field("authorization", kind.rawValue)
            w.field("accuracy", accuracy.rawValue)
            w.field("name", name)
        case .fullAccuracy(let purposeKey):
            w.field("purposeKey", purposeKey)
        case let .answer(id, answer, accuracy):
            w.field("id", id)
            w.field("answer", answer.rawValue)
            w.field("accuracy", accuracy?.rawValue)
        case let .grant(subject, kind, accuracy, expires, standing):
            subject.write(to: &w)
            w.field("kind", kind.rawValue)
            w.field("accuracy", accuracy.rawValue)
            w.field("expires", expires)
            if standing { w.field("standing", true) }
        case .revoke(let subject):
            subject.write(to: &w)
        case let .audit(since, cursor, limit):
            w.field("since", since)
            w.field("cursor", cursor)
            w.field("limit", limit)
        case let .share(sharing, forSeconds, discard):
            if let sharing { w.field("sharing", sharing) }
            w.field("for", forSeconds)
            if discard { w.field("discard", true) }
        }
        w.end()
        return w.bytes
    }
}

extension GrantTarget {
    /// Writes the subject members: `executable` or `unit` (each with `user` when given), or `user`.
    func write(to w: inout JSONObjectWriter) {
        switch self {
        case let .executable(path, user):
            w.field("executable", path)
            w.field("user", user)
        case let .unit(unit, user):
            w.field("unit", unit)
            w.field("user", user)
        case .user(let user):
            w.field("user", user)
        }
    }
}
