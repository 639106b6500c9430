/// A client's authorization status (docs/PROTOCOL.md "AUTHORIZATION"), under Core Location's names
/// (`CLAuthorizationStatus`), with the daemon's one-time and persistent grants in place of "when in use"
/// and "always".
public enum AuthorizationStatus: String, Hashable, Sendable, CaseIterable {
    /// Not asked yet, or a one-time grant ended (the connection's grant expired or was revoked).
    case notDetermined
    /// Refused: by an agent, by a stored decision (which is not asked again), or because no agent was
    /// running or none answered in time (the reason says which).
    case denied
    /// A rule in the daemon's configuration forbids this client; no agent can change that.
    case restricted
    /// Allowed for this connection only, until it closes or the daemon's `once-lifetime` passes
    /// (iOS "Allow Once").
    case authorizedOnce
    /// Allowed across connections and daemon restarts (a stored grant or an `always` rule).
    case authorizedPersistent

    /// True for `authorizedOnce` and `authorizedPersistent`: the daemon sends locations.
    public var isAuthorized: Bool {
        self == .authorizedOnce || self == .authorizedPersistent
    }
}

/// The kind of authorization a client asks for (`AUTHORIZE.authorization`).
public enum AuthorizationKind: String, Hashable, Sendable, CaseIterable {
    /// For this connection only ("Allow Once").
    case once
    /// Remembered across connections and restarts ("Allow Always").
    case persistent
}

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
