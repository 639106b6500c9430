/// Whom a stored grant is for: the most specific identity the kernel gives (executable, else unit,
/// else user).
public enum GrantSubject: Hashable, Sendable, Codable, CustomStringConvertible {
    case executable(String)
    case unit(String)
    case user(String)

    /// The subject for a client: its executable when known, else its unit, else its user (or uid).
    public static func of(_ identity: ClientIdentity) -> GrantSubject {
        if let e = identity.executable { return .executable(e) }
        if let u = identity.unit { return .unit(u) }
        return .user(identity.user ?? String(identity.uid))
    }

    public func matches(_ identity: ClientIdentity) -> Bool {
        switch self {
        case .executable(let e): return identity.executable == e
        case .unit(let u): return identity.unit == u
        case .user(let u): return identity.user == u || String(identity.uid) == u
        }
    }

    public var description: String {
        switch self {
        case .executable(let e): return "executable \(e)"
        case .unit(let u): return "unit \(u)"
        case .user(let u): return "user \(u)"
        }
    }
}

/// A persistent decision in the grant store: allowed (at an accuracy) or denied (not asked again).
public struct PersistentGrant: Hashable, Sendable, Codable {
    public var subject: GrantSubject
    /// true = authorized, false = denied.
    public var allowed: Bool
    public var accuracy: AccuracyAuthorization
    /// Unix seconds.
    public var created: Double
    /// Unix seconds after which it no longer applies; nil = until revoked.
    public var expires: Double?
    /// Who decided: "agent", "admin uid 0", ...
    public var decidedBy: String

    public init(subject: GrantSubject, allowed: Bool, accuracy: AccuracyAuthorization, created: Double, expires: Double? = nil,
                decidedBy: String) {
        self.subject = subject
        self.allowed = allowed
        self.accuracy = accuracy
        self.created = created
        self.expires = expires
        self.decidedBy = decidedBy
    }

    public func isValid(at now: Double) -> Bool { expires.map { now < $0 } ?? true }
}

/// "Allow once" pressed ahead by an administrator: the next connection of the subject that asks for
/// one-time access gets it without asking. Used up by that connection.
public struct Preapproval: Hashable, Sendable, Codable {
    public var subject: GrantSubject
    public var accuracy: AccuracyAuthorization
    public var created: Double
    public var expires: Double?

    public init(subject: GrantSubject, accuracy: AccuracyAuthorization, created: Double, expires: Double? = nil) {
        self.subject = subject
        self.accuracy = accuracy
        self.created = created
        self.expires = expires
    }
}

/// Everything the grant store holds (written to disk as JSON).
public struct GrantSet: Hashable, Sendable, Codable {
    public var persistent: [PersistentGrant] = []
    public var preapprovals: [Preapproval] = []

    public init(persistent: [PersistentGrant] = [], preapprovals: [Preapproval] = []) {
        self.persistent = persistent
        self.preapprovals = preapprovals
    }

    /// The newest valid persistent decision for `identity`.
    public func persistent(for identity: ClientIdentity, at now: Double) -> PersistentGrant? {
        persistent.filter { $0.subject.matches(identity) && $0.isValid(at: now) }.max { $0.created < $1.created }
    }

    /// Index of a valid pre-approval for `identity`.
    public func preapproval(for identity: ClientIdentity, at now: Double) -> Int? {
        preapprovals.firstIndex { $0.subject.matches(identity) && ($0.expires.map { now < $0 } ?? true) }
    }
}

/// A grant that lives only as long as its connection.
public struct SessionGrant: Hashable, Sendable {
    public var accuracy: AccuracyAuthorization
    /// Unix seconds.
    public var granted: Double
    /// Unix seconds; `once-lifetime` after `granted`.
    public var expires: Double

    public init(accuracy: AccuracyAuthorization, granted: Double, expires: Double) {
        self.accuracy = accuracy
        self.granted = granted
        self.expires = expires
    }
}

/// What the policy keeps per connection.
public struct SessionAuthorization: Hashable, Sendable {
    /// The one-time grant, if any.
    public var once: SessionGrant?
    /// Purpose key of a temporary full-accuracy grant for this connection.
    public var temporaryFullAccuracy: String?

    public init(once: SessionGrant? = nil, temporaryFullAccuracy: String? = nil) {
        self.once = once
        self.temporaryFullAccuracy = temporaryFullAccuracy
    }
}
