import LocationWire

/// A client's authorization status (docs/PROTOCOL.md "AUTHORIZATION"): LocationWire's, the one the
/// daemon's policy uses.
public typealias AuthorizationStatus = LocationWire.AuthorizationStatus

/// The kind of authorization a client asks for (`AUTHORIZE.authorization`) or grants (`GRANT.kind`).
public typealias AuthorizationKind = LocationWire.AuthorizationKind

/// How precisely the daemon's policy lets this client see locations (Core Location's
/// `CLAccuracyAuthorization`; `.fullAccuracy` and `.reducedAccuracy` name its two cases).
public typealias AccuracyAuthorization = LocationWire.AccuracyAuthorization

/// An agent's answer to a question (`ANSWER.answer`): `.allowOnce`, `.allowOnceStanding`, `.allowAlways` or `.deny`.
public typealias AgentAnswer = LocationWire.AnswerChoice

/// A client's authorization as the daemon stated it, the `AUTHORIZATION` object: LocationWire's
/// `ServerMessage.Authorization`, whose members read through this value — `status`; `accuracy`, how
/// precisely it may see locations (Core Location's `accuracyAuthorization`), nil unless authorized;
/// `reason`, e.g. `"one-time grant for this connection"` or `"no agent is running to ask"`; `standing`,
/// true when a standing approval gave a one-time grant without asking (protocol 1.3) — with the line it
/// came in.
@dynamicMemberLookup
public struct Authorization: Hashable, Sendable {
    /// The authorization as LocationWire decoded it.
    public var message: ServerMessage.Authorization
    /// The `AUTHORIZATION` object as the server sent it, one line without the newline; nil for values
    /// made in code.
    public var json: String?

    /// Makes an authorization value from the message.
    public init(_ message: ServerMessage.Authorization, json: String? = nil) {
        self.message = message
        self.json = json
    }

    /// Makes an authorization value; each parameter is the message member of the same name.
    public init(status: AuthorizationStatus, accuracy: AccuracyAuthorization? = nil, reason: String? = nil,
                json: String? = nil) {
        self.init(ServerMessage.Authorization(status: status, accuracy: accuracy, reason: reason), json: json)
    }

    /// A member of the authorization (`ServerMessage.Authorization`), e.g. `authorization.status`.
    public subscript<Value>(dynamicMember member: WritableKeyPath<ServerMessage.Authorization, Value>) -> Value {
        get { message[keyPath: member] }
        set { message[keyPath: member] = newValue }
    }

    /// True when the daemon sends this client locations (`status.isAuthorized`).
    public var isAuthorized: Bool { message.status.isAuthorized }
}
