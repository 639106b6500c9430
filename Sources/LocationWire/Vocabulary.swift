/// The words the daemon and its clients share (docs/PROTOCOL.md "Authorization"; ARCHITECTURE.md
/// "Glossary"), declared once: the server's policy, the wire and `LocationClient` use these types.
/// Raw values are the protocol's spellings.

/// How precisely a client may see locations (Core Location's `CLAccuracyAuthorization`); the TPV,
/// `AUTHORIZATION` and `ASK` `accuracy` member.
///
/// Ordered: `reduced < full`, so a ceiling is `min(asked, allowed)`.
public enum AccuracyAuthorization: String, Sendable, Hashable, Codable, Comparable, CaseIterable {
    /// Snapped to a grid of about 2 km, accuracy at least the grid size, without speed, course,
    /// heading and altitude, and at most a few updates an hour (ARCHITECTURE.md "Reduced accuracy").
    case reduced
    /// The position as the receiver reported it.
    case full

    /// Core Location's name for `full` (`CLAccuracyAuthorization.fullAccuracy`).
    public static var fullAccuracy: Self { .full }
    /// Core Location's name for `reduced` (`CLAccuracyAuthorization.reducedAccuracy`).
    public static var reducedAccuracy: Self { .reduced }

    /// `reduced` is less than `full`.
    public static func < (a: Self, b: Self) -> Bool { a == .reduced && b == .full }
}

/// A client's authorization status (`AUTHORIZATION.status`), under Core Location's names
/// (`CLAuthorizationStatus`). Always is spelled `authorizedPersistent` on the wire, as protocol 1.0–1.3
/// clients read it; `authorizedAlways` names it in Swift.
public enum AuthorizationStatus: String, Sendable, Hashable, Codable, CaseIterable {
    /// Not asked yet, or a one-time grant ended (the connection's grant expired or was revoked).
    case notDetermined
    /// Refused: by an agent, by a stored decision (which is not asked again), by an administrator, or
    /// because no agent was running or none answered in time (the reason says which).
    case denied
    /// A rule in the daemon's configuration forbids this client; no agent can change that.
    case restricted
    /// Allowed for this connection only, until it closes or the daemon's `once-lifetime` passes
    /// (iOS "Allow Once").
    case authorizedOnce
    /// Allowed across connections and daemon restarts, whether or not its user is at the machine (a
    /// stored Always grant, or an `always` rule): Core Location's `authorizedAlways`.
    case authorizedPersistent
    /// Allowed across connections and restarts while the client's user has an active login session
    /// (logind's "active": at the seat, in the foreground); while not, nothing is sent and
    /// `AUTHORIZATION` says `inUse` false (protocol 1.4). Core Location's `authorizedWhenInUse`.
    case authorizedWhenInUse

    /// Core Location's name for `authorizedPersistent` (`CLAuthorizationStatus.authorizedAlways`).
    public static var authorizedAlways: Self { .authorizedPersistent }

    /// True for `authorizedOnce`, `authorizedWhenInUse` and `authorizedPersistent`: the client is
    /// authorized (a When-In-Use client is sent locations only while its user is active).
    public var isAuthorized: Bool { self == .authorizedOnce || self == .authorizedPersistent || self == .authorizedWhenInUse }
}

/// The kind of authorization a client asks for (`AUTHORIZE.authorization`) or an administrator grants
/// (`GRANT.kind`).
public enum AuthorizationKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// For this connection only, until it closes or `once-lifetime` passes ("Allow Once"); for `GRANT`,
    /// a pre-approval of the subject's next connection that asks for one-time access.
    case once
    /// Remembered across connections and restarts until revoked, in use or not: Always. `"always"` is
    /// read as this too (`init(spelling:)`).
    case persistent
    /// Remembered across connections and restarts until revoked, used while the client's user has an
    /// active login session: When In Use (protocol 1.4).
    case whenInUse

    /// Core Location's name for `persistent` (Always).
    public static var always: Self { .persistent }

    /// The kind a request names: a raw value, or `"always"` for `persistent`.
    public init?(spelling: String) {
        if spelling == "always" { self = .persistent } else { self.init(rawValue: spelling) }
    }
}

/// An agent's answer to a question (`ANSWER.answer`).
public enum AnswerChoice: String, Sendable, Hashable, Codable, CaseIterable {
    /// Allow for the asking connection only ("Allow Once").
    case allowOnce
    /// Allow for the asking connection, and give each later connection of the same user and program that
    /// asks for one-time access a one-time grant without asking (a standing approval: CoreLocationUI's
    /// `LocationButton` once the user confirmed it). Stored until revoked.
    case allowOnceStanding
    /// Allow and remember, across connections and restarts ("Allow Always").
    case allowAlways
    /// Refuse; the refusal is remembered, so the client's program is not asked about again.
    case deny
}
