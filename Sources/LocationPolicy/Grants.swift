import LocationWire

/// Whom a stored grant is for: a program (an executable, or a systemd unit), optionally of one user
/// only, or every program of a user.
///
/// An agent's answer is about one client, so it is stored for that client's user and program together
/// (`decision(for:)`): "allow always" for bob's `/usr/bin/python3` says nothing about mallory's. An
/// administrator may name a program without a user (`GRANT` with only `executable` or `unit`): that is
/// a choice for every user, and so are executable- and unit-only subjects in stores written before
/// decisions carried the user (see docs/PROTOCOL.md, "Grant store").
public enum GrantSubject: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Programs run from this path (as the kernel reports it: `/proc/PID/exe`); of `user` only when
    /// given: a user name or a uid as digits, matched as a rule's `user =` is.
    case executable(String, user: String? = nil)
    /// Processes of this systemd unit; of `user` only when given.
    case unit(String, user: String? = nil)
    /// Every program of this user (a name, or a uid as digits).
    case user(String)

    /// The subject an agent's decision about a client is stored under: the client's uid (from
    /// SO_PEERCRED, as digits — a uid is what the kernel vouches for; a name is only looked up from it)
    /// together with its verified executable when known, else its system unit, else the uid alone — so an
    /// approval for an unverified client (or an interpreter) covers every program of its user, as the agent
    /// is told (`IdentityStrength`).
    public static func decision(for identity: ClientIdentity) -> GrantSubject {
        let uid = String(identity.uid)
        if let e = identity.executable { return .executable(e, user: uid) }
        if let u = identity.unit { return .unit(u, user: uid) }
        return .user(uid)
    }

    /// Whether the grant applies to a client: its program matches, and its user when the subject names one.
    public func matches(_ identity: ClientIdentity) -> Bool {
        switch self {
        case let .executable(e, user):
            // An interpreter's path still finds what was stored for it before interpreters were unverified
            // (those decisions were made for one user, and already stood for every script of that user).
            guard identity.executable == e || (user != nil && identity.interpreter == e) else { return false }
            return user.map { Self.isUser($0, identity) } ?? true
        case let .unit(u, user): return identity.unit == u && user.map { Self.isUser($0, identity) } ?? true
        case .user(let u): return Self.isUser(u, identity)
        }
    }

    /// Whether revoking `self` removes a grant stored for `stored`: the same subject; a program named
    /// without a user covers that program's grants for every user; a user alone covers that user's
    /// grants for every program. User names and uids are compared as given (the daemon writes both
    /// sides as uids when it can resolve them).
    public func covers(_ stored: GrantSubject) -> Bool {
        if self == stored { return true }
        switch (self, stored) {
        case let (.executable(a, nil), .executable(b, _)): return a == b
        case let (.unit(a, nil), .unit(b, _)): return a == b
        case let (.user(a), .executable(_, b?)), let (.user(a), .unit(_, b?)): return a == b
        default: return false
        }
    }

    /// A user name or a uid as digits against a client: as `ClientRule` matches `user =`.
    static func isUser(_ user: String, _ identity: ClientIdentity) -> Bool {
        identity.user == user || String(identity.uid) == user
    }

    /// `executable /usr/bin/navit`, `executable /usr/bin/python3 of user 1000`, `unit navit.service`, `user alice`.
    public var description: String {
        switch self {
        case let .executable(e, user): return "executable \(e)" + (user.map { " of user \($0)" } ?? "")
        case let .unit(u, user): return "unit \(u)" + (user.map { " of user \($0)" } ?? "")
        case .user(let u): return "user \(u)"
        }
    }
}

/// A persistent decision in the grant store: allowed (at an accuracy) or denied (not asked again).
public struct PersistentGrant: Hashable, Sendable, Codable {
    public var subject: GrantSubject
    /// true = authorized, false = denied.
    public var allowed: Bool
    /// True for a When-In-Use grant (used while the client's user has an active login session); false
    /// for Always, as every grant stored before When In Use existed.
    public var whenInUse: Bool
    /// For When In Use: true when it also applies to the subject's clients outside every login session while
    /// they run (`ClientIdentity.outsideLoginSessions`) — the agent was asked about such a client and shown
    /// "whenever it runs", or an administrator granted it. False when the agent was asked about a client in a
    /// login session and shown "while its user has an active login session": then the subject's clients
    /// outside sessions, a user's cron or at jobs among them, follow that session too (found by a helper
    /// attacking the daemon: a job of alice's got When In Use around the clock).
    public var whileRunning: Bool
    public var accuracy: AccuracyAuthorization
    /// Unix seconds.
    public var created: Double
    /// Unix seconds after which it no longer applies; nil = until revoked.
    public var expires: Double?
    /// Who decided: "agent", "admin uid 0", ...
    public var decidedBy: String

    public init(subject: GrantSubject, allowed: Bool, accuracy: AccuracyAuthorization, created: Double, expires: Double? = nil,
                decidedBy: String, whenInUse: Bool = false, whileRunning: Bool = false) {
        self.subject = subject
        self.allowed = allowed
        self.whenInUse = whenInUse
        self.whileRunning = whenInUse && whileRunning
        self.accuracy = accuracy
        self.created = created
        self.expires = expires
        self.decidedBy = decidedBy
    }

    public func isValid(at now: Double) -> Bool { expires.map { now < $0 } ?? true }

    /// Decodes a decision; one without `whenInUse` (every store before When In Use) is Always.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(subject: try c.decode(GrantSubject.self, forKey: .subject), allowed: try c.decode(Bool.self, forKey: .allowed),
                  accuracy: try c.decode(AccuracyAuthorization.self, forKey: .accuracy), created: try c.decode(Double.self, forKey: .created),
                  expires: try c.decodeIfPresent(Double.self, forKey: .expires), decidedBy: try c.decode(String.self, forKey: .decidedBy),
                  whenInUse: try c.decodeIfPresent(Bool.self, forKey: .whenInUse) ?? false,
                  whileRunning: try c.decodeIfPresent(Bool.self, forKey: .whileRunning) ?? false)
    }
}

/// "Allow once" pressed ahead: the next connection of the subject that asks for one-time access gets it
/// without asking. An administrator's pre-approval (`GRANT kind once`) is used up by that connection; a
/// standing approval (CoreLocationUI's `LocationButton` once confirmed: an agent's "allow once, and from
/// now on without asking", or `GRANT kind once standing`) gives every such connection a one-time grant
/// until it is revoked, and is never used up.
public struct Preapproval: Hashable, Sendable, Codable {
    public var subject: GrantSubject
    public var accuracy: AccuracyAuthorization
    /// Unix seconds.
    public var created: Double
    /// Unix seconds after which it no longer applies; nil = until used up (or revoked, when standing).
    public var expires: Double?
    /// True for a standing approval: not used up by the connections it grants.
    public var standing: Bool
    /// Who decided a standing approval: "agent root (uid 0)", "administrator root (uid 0)"; nil for an
    /// administrator's single pre-approval in stores written before standing approvals existed.
    public var decidedBy: String?

    public init(subject: GrantSubject, accuracy: AccuracyAuthorization, created: Double, expires: Double? = nil,
                standing: Bool = false, decidedBy: String? = nil) {
        self.subject = subject
        self.accuracy = accuracy
        self.created = created
        self.expires = expires
        self.standing = standing
        self.decidedBy = decidedBy
    }

    /// Decodes a pre-approval; one without `standing` (as every store before standing approvals) is a
    /// single one, used up by the next connection.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(subject: try c.decode(GrantSubject.self, forKey: .subject),
                  accuracy: try c.decode(AccuracyAuthorization.self, forKey: .accuracy),
                  created: try c.decode(Double.self, forKey: .created),
                  expires: try c.decodeIfPresent(Double.self, forKey: .expires),
                  standing: try c.decodeIfPresent(Bool.self, forKey: .standing) ?? false,
                  decidedBy: try c.decodeIfPresent(String.self, forKey: .decidedBy))
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

    /// Index of a valid pre-approval for `identity`: a single one first (so that an administrator's
    /// pre-approval is used before a standing approval that would grant anyway), else a standing one.
    public func preapproval(for identity: ClientIdentity, at now: Double) -> Int? {
        let valid = preapprovals.indices.filter {
            preapprovals[$0].subject.matches(identity) && (preapprovals[$0].expires.map { now < $0 } ?? true)
        }
        return valid.first { !preapprovals[$0].standing } ?? valid.first
    }

    /// Stores `grant` as its subject's decision: it replaces the subject's earlier decisions — stored
    /// grants and standing approvals — as a new answer of an agent or administrator does.
    public mutating func replaceDecision(with grant: PersistentGrant) {
        removeDecisions(of: grant.subject)
        persistent.append(grant)
    }

    /// Stores a standing approval as its subject's decision, replacing the earlier ones (`replaceDecision`).
    public mutating func replaceDecision(withStanding approval: Preapproval) {
        removeDecisions(of: approval.subject)
        preapprovals.append(approval)
    }

    private mutating func removeDecisions(of subject: GrantSubject) {
        persistent.removeAll { $0.subject == subject }
        preapprovals.removeAll { $0.standing && $0.subject == subject }
    }
}

/// A grant that lives only as long as its connection, and at most `once-lifetime`: a duration, measured on
/// the monotonic clock (`ends`), so that setting the wall clock neither ends it early nor stretches it.
public struct SessionGrant: Hashable, Sendable {
    public var accuracy: AccuracyAuthorization
    /// Unix seconds, when it was granted (shown to administrators).
    public var granted: Double
    /// Unix seconds, `once-lifetime` after `granted` as the wall clock read then (shown to administrators;
    /// `ends` decides).
    public var expires: Double
    /// True when a standing approval gave it (no one was asked for this connection).
    public var standing: Bool
    /// When it ends, on the monotonic clock.
    public var ends: ContinuousClock.Instant

    /// A grant made at `now` for `lifetime` seconds.
    /// - Parameters:
    ///   - accuracy: the accuracy granted.
    ///   - now: when it is granted.
    ///   - lifetime: how long it lasts at most, seconds (`once-lifetime`).
    ///   - standing: a standing approval gave it.
    public init(accuracy: AccuracyAuthorization, at now: PolicyTime, lifetime: Double, standing: Bool = false) {
        self.accuracy = accuracy
        granted = now.wall
        expires = now.wall + lifetime
        ends = (now + lifetime).monotonic
        self.standing = standing
    }

    /// Whether it still holds at `now` (monotonic: the wall clock has no say).
    public func holds(at now: PolicyTime) -> Bool { now.monotonic < ends }
}

/// What the policy keeps per connection.
public struct SessionAuthorization: Hashable, Sendable {
    /// The one-time grant, if any.
    public var once: SessionGrant?
    /// Purpose key of a temporary full-accuracy grant for this connection.
    public var temporaryFullAccuracy: String?
    /// The most precise accuracy the client asked for in its last `AUTHORIZE` (`FULLACCURACY` asks for
    /// full): a ceiling on whatever the grants and rules allow (Core Location's `desiredAccuracy`). Full
    /// until the client asks otherwise, so that a client authorized by a rule without asking sees what the
    /// rule allows.
    public var requestedAccuracy: AccuracyAuthorization

    public init(once: SessionGrant? = nil, temporaryFullAccuracy: String? = nil, requestedAccuracy: AccuracyAuthorization = .full) {
        self.once = once
        self.temporaryFullAccuracy = temporaryFullAccuracy
        self.requestedAccuracy = requestedAccuracy
    }

    /// The session once `request` is made: `AUTHORIZE` sets the ceiling to the accuracy it names (a later
    /// one may raise it again, up to what the grants allow), `FULLACCURACY` lifts it to full.
    public func asking(_ request: PolicyRequest) -> SessionAuthorization {
        var session = self
        switch request {
        case let .authorize(_, accuracy): session.requestedAccuracy = accuracy
        case .temporaryFullAccuracy: session.requestedAccuracy = .full
        }
        return session
    }
}
