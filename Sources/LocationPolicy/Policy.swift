/// A client's authorization as it stands, with the reason (for replies, the agent and the audit).
public struct AuthorizationState: Hashable, Sendable {
    public var status: AuthorizationStatus
    /// The accuracy it may see; nil unless authorized.
    public var accuracy: AccuracyAuthorization?
    public var reason: String
    /// True when the status is a one-time grant that a standing approval gave (`AUTHORIZATION.standing`).
    public var standing: Bool
    /// False for a When-In-Use client not in use — in a login session, or below its user's own service manager,
    /// while its user has no active login session: authorized, but sent nothing (`accuracy` nil) until one is
    /// active (`AUTHORIZATION.inUse`). A client outside every login session is in use while it runs when its
    /// grant was made for such a client (`PersistentGrant.whileRunning`).
    public var inUse: Bool

    public init(status: AuthorizationStatus, accuracy: AccuracyAuthorization?, reason: String, standing: Bool = false,
                inUse: Bool = true) {
        self.status = status
        self.accuracy = accuracy
        self.reason = reason
        self.standing = standing
        self.inUse = inUse
    }
}

/// What a client asks the policy for.
public enum PolicyRequest: Hashable, Sendable {
    /// Authorization of a kind, at (at most) an accuracy.
    case authorize(AuthorizationKind, AccuracyAuthorization)
    /// Temporary full accuracy for this connection, citing a purpose key declared for the client.
    case temporaryFullAccuracy(purposeKey: String)
}

/// What the agent is asked (and shown).
public struct AgentQuestion: Hashable, Sendable {
    public enum Subject: Hashable, Sendable {
        case authorization(AuthorizationKind)
        case temporaryFullAccuracy(purposeKey: String)
    }

    public var subject: Subject
    /// The accuracy that would be granted (already capped by the rule).
    public var accuracy: AccuracyAuthorization
    /// The text from the config: the rule's usage text for the kind asked (`UsageTexts`), or the purpose
    /// key's text for temporary full accuracy; nil when the config has none.
    public var purpose: String?
    /// True when a client authorized When In Use asks for Always (`ASK.upgrade`): refusing it leaves the
    /// When-In-Use grant as it is.
    public var upgrade: Bool
    /// True when the client asking runs outside every login session (`ClientIdentity.outsideLoginSessions`):
    /// When In Use stored by this answer applies to such clients while they run (`PersistentGrant.whileRunning`,
    /// `ASK.inUse` `running`); else only while the user has an active login session.
    public var inUseWhileRunning: Bool

    /// What "allow always" stores (`ASK.remembers`): `.persistent` (Always) where Always was asked (in one
    /// question: `Policy.apply`), else `.whenInUse`; nil for temporary full accuracy, which stores nothing.
    public var remembers: AuthorizationKind? {
        guard case .authorization(let kind) = subject else { return nil }
        return kind == .persistent ? .persistent : .whenInUse
    }

    public init(subject: Subject, accuracy: AccuracyAuthorization, purpose: String?, upgrade: Bool = false,
                inUseWhileRunning: Bool = false) {
        self.subject = subject
        self.accuracy = accuracy
        self.purpose = purpose
        self.upgrade = upgrade
        self.inUseWhileRunning = inUseWhileRunning
    }
}

/// An agent's answer (allow once / allow once and from now on without asking / allow always / deny,
/// optionally lowering the accuracy).
public enum AgentAnswer: Hashable, Sendable {
    case allowOnce(AccuracyAuthorization?)
    /// Allow once, and give the program's later connections one-time grants without asking (a standing
    /// approval, CoreLocationUI's `LocationButton` once confirmed).
    case allowOnceStanding(AccuracyAuthorization?)
    case allowAlways(AccuracyAuthorization?)
    case deny
}

/// The policy's decision on a request.
public enum PolicyDecision: Hashable, Sendable {
    /// Nothing to change: the client already has this (or a rule grants it).
    case authorized(AuthorizationState)
    /// Grant a one-time grant for this connection (`once` rule, or a pre-approval: its index in
    /// `GrantSet.preapprovals`, to be used up unless it is a standing approval).
    case grantOnce(AccuracyAuthorization, usingPreapproval: Int?)
    /// Ask an agent.
    case ask(AgentQuestion)
    /// Refused, with the status to report.
    case refuse(AuthorizationStatus, reason: String)
    /// The request itself is wrong (e.g. an undeclared purpose key); the agent is not asked.
    case invalid(String)
}

/// What to change after an agent's answer.
public struct AnswerOutcome: Hashable, Sendable {
    /// The connection's new policy state.
    public var session: SessionAuthorization
    /// A decision to store persistently, if any.
    public var store: PersistentGrant?
    /// A standing approval to store, if any (it replaces the subject's stored decisions).
    public var standing: Preapproval?

    public init(session: SessionAuthorization, store: PersistentGrant? = nil, standing: Preapproval? = nil) {
        self.session = session
        self.store = store
        self.standing = standing
    }
}

/// Core Location's authorization model as a pure function of identity, request, rules, grants and time.
/// No I/O: the daemon stores grants, asks agents and writes the audit.
public enum Policy {
    /// The client's current authorization (Core Location's `authorizationStatus` and
    /// `accuracyAuthorization`). Order: a `deny` rule (restricted) → this connection's one-time grant →
    /// a stored persistent decision → an `always` rule → not determined. The accuracy is the grant's,
    /// capped by the rule's ceiling, raised to full by a temporary full-accuracy grant, and never more
    /// precise than the client asked for (`SessionAuthorization.requestedAccuracy`). A When-In-Use grant
    /// applies while `userInUse`; otherwise the client stays `authorizedWhenInUse` with no accuracy and
    /// `inUse` false: it is sent nothing.
    /// A client outside every login session (`ClientIdentity.outsideLoginSessions`) is also in use while it
    /// runs when the grant says so (`PersistentGrant.whileRunning`: the agent was shown that, or an
    /// administrator granted it) — docs/PROTOCOL.md "When In Use and Always".
    /// - Parameter userInUse: whether the client's user has an active login session (logind's "active").
    public static func state(_ identity: ClientIdentity, session: SessionAuthorization, rules: PolicyRules,
                             grants: GrantSet, now: PolicyTime, userInUse: Bool = true) -> AuthorizationState {
        let rule = rules.effective(for: identity)
        if rule.access == .deny {
            return AuthorizationState(status: .restricted, accuracy: nil, reason: "\(rule.source) denies access")
        }
        var result: AuthorizationState
        if let once = session.once, once.holds(at: now) {
            result = AuthorizationState(status: .authorizedOnce, accuracy: min(once.accuracy, rule.accuracy),
                                        reason: once.standing ? "one-time grant for this connection, from a standing approval"
                                            : "one-time grant for this connection", standing: once.standing)
        } else if let stored = grants.persistent(for: identity, at: now.wall) {
            if !stored.allowed {
                return AuthorizationState(status: .denied, accuracy: nil, reason: "denied by \(stored.decidedBy)")
            }
            if stored.whenInUse {
                let whileRunning = identity.outsideLoginSessions && stored.whileRunning
                guard userInUse || whileRunning else {
                    return AuthorizationState(status: .authorizedWhenInUse, accuracy: nil,
                                              reason: "When In Use, and \(identity.user ?? "uid \(identity.uid)") has no active login session: "
                                                + "nothing is sent until one is active",
                                              inUse: false)
                }
                result = AuthorizationState(status: .authorizedWhenInUse, accuracy: min(stored.accuracy, rule.accuracy),
                                            reason: "When-In-Use grant by \(stored.decidedBy); "
                                                + (whileRunning ? "it runs outside any login session: in use while it runs"
                                                   : "the user has an active login session"))
            } else {
                result = AuthorizationState(status: .authorizedPersistent, accuracy: min(stored.accuracy, rule.accuracy),
                                            reason: "persistent grant by \(stored.decidedBy)")
            }
        } else if rule.access == .always {
            result = AuthorizationState(status: .authorizedPersistent, accuracy: rule.accuracy, reason: "\(rule.source) allows always")
        } else if let once = session.once, !once.holds(at: now) {
            return AuthorizationState(status: .notDetermined, accuracy: nil, reason: "the one-time grant expired")
        } else {
            return AuthorizationState(status: .notDetermined, accuracy: nil, reason: "not authorized yet")
        }
        if session.temporaryFullAccuracy != nil { result.accuracy = .full }
        return capped(result, by: session)
    }

    /// `state` no more precise than the client asked for (`SessionAuthorization.requestedAccuracy`).
    static func capped(_ state: AuthorizationState, by session: SessionAuthorization) -> AuthorizationState {
        guard let allowed = state.accuracy, session.requestedAccuracy < allowed else { return state }
        var result = state
        result.accuracy = session.requestedAccuracy
        result.reason += "; \(session.requestedAccuracy.rawValue) accuracy, as the client asked"
        return result
    }

    /// Decides a request. The request's accuracy is weighed as the session's new ceiling
    /// (`SessionAuthorization.asking(_:)`): the caller keeps that session unless the decision is `invalid`.
    /// One request raises at most one question. Always (`persistent`) asked by a client not yet authorized
    /// is one question whose "allow always" grants Always (Core Location asks When In Use first, then the
    /// upgrade: two prompts, and the second, unanswered, left the program with nothing while its user was
    /// away — issue 33); asked by a client authorized When In Use, the question is the upgrade, and refusing
    /// it (or no answer) leaves When In Use.
    public static func decide(_ request: PolicyRequest, identity: ClientIdentity, session: SessionAuthorization,
                              rules: PolicyRules, grants: GrantSet, now: PolicyTime, userInUse: Bool = true) -> PolicyDecision {
        let session = session.asking(request)
        let current = state(identity, session: session, rules: rules, grants: grants, now: now, userInUse: userInUse)
        let rule = rules.effective(for: identity)
        switch request {
        case let .authorize(kind, requested):
            switch current.status {
            case .restricted:
                return .refuse(.restricted, reason: current.reason)
            case .denied:
                return .refuse(.denied, reason: current.reason + "; not asked again")
            case .authorizedPersistent:
                return .authorized(current)
            case .authorizedOnce where kind == .once:
                return .authorized(current)
            case .authorizedWhenInUse where kind == .persistent && rule.access == .ask:
                // Always only on top of When In Use, as Core Location asks for it: the agent sees an upgrade.
                return .ask(upgradeQuestion(identity, accuracy: min(requested, rule.accuracy), rules: rules))
            case .authorizedWhenInUse:
                return .authorized(current)
            default:
                break
            }
            let accuracy = min(requested, rule.accuracy)
            if rule.access == .always {
                let always = AuthorizationState(status: .authorizedPersistent, accuracy: rule.accuracy, reason: "\(rule.source) allows always")
                return .authorized(capped(always, by: session))
            }
            if let index = grants.preapproval(for: identity, at: now.wall), kind == .once {
                return .grantOnce(min(accuracy, grants.preapprovals[index].accuracy), usingPreapproval: index)
            }
            switch rule.access {
            case .once:
                return .grantOnce(accuracy, usingPreapproval: nil)
            case .ask:
                // The text shown is the administrator's usage text for the kind asked, never the client's.
                let usage = rules.rule(for: identity)?.usage.text(for: kind)
                return .ask(AgentQuestion(subject: .authorization(kind), accuracy: accuracy, purpose: usage,
                                          inUseWhileRunning: identity.outsideLoginSessions))
            case .deny, .always:
                return .refuse(.restricted, reason: current.reason)  // handled above; kept total
            }
        case let .temporaryFullAccuracy(key):
            guard current.status.isAuthorized else {
                return .refuse(current.status, reason: "not authorized: ask for authorization first")
            }
            if current.accuracy == .full { return .authorized(current) }
            guard let text = rule.purposes[key] else {
                return .invalid("purpose key \"\(key)\" is not declared for this client (\(rule.source))")
            }
            return .ask(AgentQuestion(subject: .temporaryFullAccuracy(purposeKey: key), accuracy: .full, purpose: text))
        }
    }

    /// Always asked on top of When In Use, with the rule's `usage.always`.
    static func upgradeQuestion(_ identity: ClientIdentity, accuracy: AccuracyAuthorization, rules: PolicyRules) -> AgentQuestion {
        AgentQuestion(subject: .authorization(.persistent), accuracy: accuracy, purpose: rules.rule(for: identity)?.usage.always, upgrade: true)
    }

    /// Applies an agent's answer to a question about `identity`. A decision to remember ("allow
    /// always", "deny", a standing approval) is stored for the client's user and program together
    /// (`GrantSubject.decision(for:)`), so it never decides for another user's clients.
    /// - Parameters:
    ///   - onceLifetime: seconds a one-time grant lasts at most.
    ///   - decidedBy: who answered, stored with a persistent decision.
    public static func apply(_ answer: AgentAnswer, to question: AgentQuestion, identity: ClientIdentity,
                             session: SessionAuthorization, now: PolicyTime, onceLifetime: Double, decidedBy: String) -> AnswerOutcome {
        var session = session
        switch question.subject {
        case .temporaryFullAccuracy(let key):
            // Temporary full accuracy is full or nothing: an answer that lowers the accuracy to reduced
            // grants no upgrade (the client keeps what it had), as a refusal does.
            switch answer {
            case .deny, .allowOnce(.reduced?), .allowOnceStanding(.reduced?), .allowAlways(.reduced?):
                return AnswerOutcome(session: session, store: nil)
            case .allowOnce, .allowOnceStanding, .allowAlways:
                session.temporaryFullAccuracy = key
                return AnswerOutcome(session: session, store: nil)
            }
        case .authorization:
            if question.upgrade {
                // Refusing Always, or allowing it for this connection only, leaves When In Use as it is.
                guard case .allowAlways(let lowered) = answer else { return AnswerOutcome(session: session) }
                let accuracy = min(question.accuracy, lowered ?? question.accuracy)
                return AnswerOutcome(session: session, store: PersistentGrant(subject: .decision(for: identity), allowed: true,
                                                                              accuracy: accuracy, created: now.wall, decidedBy: decidedBy))
            }
            switch answer {
            case .allowOnce(let lowered):
                let accuracy = min(question.accuracy, lowered ?? question.accuracy)
                session.once = SessionGrant(accuracy: accuracy, at: now, lifetime: onceLifetime)
                return AnswerOutcome(session: session, store: nil)
            case .allowOnceStanding(let lowered):
                let accuracy = min(question.accuracy, lowered ?? question.accuracy)
                // This connection's grant is the agent's answer; the later ones come from the approval.
                session.once = SessionGrant(accuracy: accuracy, at: now, lifetime: onceLifetime)
                return AnswerOutcome(session: session, standing: Preapproval(subject: .decision(for: identity), accuracy: accuracy,
                                                                              created: now.wall, standing: true, decidedBy: decidedBy))
            case .allowAlways(let lowered):
                // Remembered as `question.remembers`: Always only where Always was asked (an Always request, in
                // its one question — a second question for the upgrade, left unanswered, left the program on
                // When In Use with nothing while its user was away: issue 33); "allow always" to When In Use or
                // to one-time access remembers When In Use (found by a helper attacking the daemon: "allow
                // always" to a one-time question stored Always, more than the program asked for).
                let accuracy = min(question.accuracy, lowered ?? question.accuracy)
                return AnswerOutcome(session: session, store: PersistentGrant(subject: .decision(for: identity), allowed: true, accuracy: accuracy,
                                                                              created: now.wall, decidedBy: decidedBy,
                                                                              whenInUse: question.remembers != .persistent,
                                                                              whileRunning: question.inUseWhileRunning))
            case .deny:
                // Remembered, as iOS does not ask again after "Don't Allow".
                return AnswerOutcome(session: session, store: PersistentGrant(subject: .decision(for: identity), allowed: false, accuracy: .reduced,
                                                                              created: now.wall, decidedBy: decidedBy))
            }
        }
    }
}
