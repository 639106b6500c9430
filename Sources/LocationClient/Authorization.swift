import LocationWire

/// A client's authorization status (docs/PROTOCOL.md "AUTHORIZATION"): LocationWire's, the one the
/// daemon's policy uses.
public typealias AuthorizationStatus = LocationWire.AuthorizationStatus

/// The kind of authorization a client asks for (`AUTHORIZE.authorization`) or grants (`GRANT.kind`).
public typealias AuthorizationKind = LocationWire.AuthorizationKind

/// How precisely the daemon's policy lets this client see locations (Core Location's
/// `CLAccuracyAuthorization`; `.fullAccuracy` and `.reducedAccuracy` name its two cases).
public typealias AccuracyAuthorization = LocationWire.AccuracyAuthorization

/// An agent's answer to a question (`ANSWER.answer`): `.allowOnce`, `.allowAlways` or `.deny`.
public typealias AgentAnswer = LocationWire.AnswerChoice

/// A client's authorization as the daemon stated it: the `AUTHORIZATION` object.
public struct Authorization: Hashable, Sendable {
    /// The status.
    public var status: AuthorizationStatus
    /// How precisely it may see locations (Core Location's `accuracyAuthorization`); nil unless
    /// authorized.
    public var accuracy: AccuracyAuthorization?
    /// Why, in the daemon's words, e.g. `"one-time grant for this connection"` or
    /// `"no agent is running to ask"`; nil when the daemon gave none.
    public var reason: String?
    /// The `AUTHORIZATION` object as the server sent it, one line without the newline; nil for values
    /// made in code.
    public var json: String?

    /// Makes an authorization value.
    public init(status: AuthorizationStatus, accuracy: AccuracyAuthorization? = nil, reason: String? = nil,
                json: String? = nil) {
        self.status = status
        self.accuracy = accuracy
        self.reason = reason
        self.json = json
    }

    /// True when the daemon sends this client locations (`status.isAuthorized`).
    public var isAuthorized: Bool { status.isAuthorized }
}
