import LocationCore
import LocationWire

// The agent's and the administrator's side of the policy (docs/PROTOCOL.md "Agents and
// administrators"): pending questions, answers, grants and the audit trail, as values.

/// Who a client is, as the daemon saw it (`ASK.client`, an audit event's `client`): LocationWire's.
public typealias ClientDescription = LocationWire.ClientDescription

/// A pending authorization request the daemon asks the agents about (`ASK`).
public struct AgentQuestion: Hashable, Sendable {
    /// The question's id, to cite in `LocationClient.answer(id:answer:accuracy:)`.
    public var id: Int
    /// The client asking.
    public var client: ClientDescription
    /// What it asks for: `"once"`, `"persistent"` or `"temporaryFullAccuracy"` (kept as text, so that
    /// requests a newer daemon adds still show).
    public var request: String
    /// The accuracy that would be granted (already capped by the client's rule).
    public var accuracy: AccuracyAuthorization?
    /// For temporary full accuracy: the purpose key the client cited.
    public var purposeKey: String?
    /// For temporary full accuracy: the purpose text the configuration declares for that key.
    public var purpose: String?
    /// Seconds the daemon waits for an answer before refusing the client.
    public var timeout: Double?
    /// The `ASK` object as the server sent it, one line without the newline; nil for values made in code.
    public var json: String?

    /// Makes a question value.
    public init(id: Int, client: ClientDescription, request: String, accuracy: AccuracyAuthorization? = nil,
                purposeKey: String? = nil, purpose: String? = nil, timeout: Double? = nil, json: String? = nil) {
        self.id = id
        self.client = client
        self.request = request
        self.accuracy = accuracy
        self.purposeKey = purposeKey
        self.purpose = purpose
        self.timeout = timeout
        self.json = json
    }
}

/// How a question ended (`ANSWERED`), told to every agent.
public struct AnsweredNotice: Hashable, Sendable {
    /// The question's id.
    public var id: Int
    /// `"allowOnce"`, `"allowAlways"`, `"deny"`, `"timeout"` (nobody answered within the daemon's
    /// `ask-timeout`) or `"withdrawn"` (the client went away).
    public var answer: String
    /// Who answered, e.g. `"root (uid 0)"`, `"nobody"` on a timeout.
    public var by: String?

    /// Makes a notice value.
    public init(id: Int, answer: String, by: String? = nil) {
        self.id = id
        self.answer = answer
        self.by = by
    }
}

/// What an agent is told (`LocationClient.registerAgent()`).
public enum AgentEvent: Hashable, Sendable {
    /// A client waits for an answer.
    case ask(AgentQuestion)
    /// A question was answered (by this agent or another), timed out or was withdrawn.
    case answered(AnsweredNotice)
}

/// Whom a grant is about (`GRANT`/`REVOKE` and the stored grants): LocationWire's `GrantTarget`.
public typealias GrantSubject = GrantTarget

/// What a grant gives its subject's clients under the daemon's rules (`GRANTS.effective`):
/// LocationWire's `ServerMessage.Grants.Effective` — `accuracy` (nil: a rule denies them access) and
/// `reason`.
public typealias GrantEffect = ServerMessage.Grants.Effective

/// The daemon's grants: the reply to `GRANTS`, `GRANT` and `REVOKE`.
public struct GrantList: Hashable, Sendable {
    /// A stored decision, allowing or refusing (`persistent[]`).
    public struct Persistent: Hashable, Sendable {
        /// Whom it is about.
        public var subject: GrantSubject
        /// True for a grant, false for a remembered refusal.
        public var allowed: Bool
        /// The accuracy granted.
        public var accuracy: AccuracyAuthorization?
        /// When it was made, UTC.
        public var created: UTCTime?
        /// When it expires, UTC; nil: never.
        public var expires: UTCTime?
        /// Who decided, e.g. `"agent root (uid 0)"`, `"administrator root (uid 0)"`.
        public var decidedBy: String?

        /// Makes a stored-decision value.
        public init(subject: GrantSubject, allowed: Bool, accuracy: AccuracyAuthorization? = nil,
                    created: UTCTime? = nil, expires: UTCTime? = nil, decidedBy: String? = nil) {
            self.subject = subject
            self.allowed = allowed
            self.accuracy = accuracy
            self.created = created
            self.expires = expires
            self.decidedBy = decidedBy
        }
    }

    /// A pre-approved one-time grant: the next connection of the subject asking for one-time access
    /// gets it without an agent (`preapproved[]`).
    public struct Preapproval: Hashable, Sendable {
        /// Whom it is about.
        public var subject: GrantSubject
        /// The accuracy it grants.
        public var accuracy: AccuracyAuthorization?
        /// When it was made, UTC.
        public var created: UTCTime?
        /// When it lapses unused, UTC; nil: never.
        public var expires: UTCTime?

        /// Makes a pre-approval value.
        public init(subject: GrantSubject, accuracy: AccuracyAuthorization? = nil, created: UTCTime? = nil,
                    expires: UTCTime? = nil) {
            self.subject = subject
            self.accuracy = accuracy
            self.created = created
            self.expires = expires
        }
    }

    /// A live one-time grant of a connected client (`once[]`).
    public struct OneTime: Hashable, Sendable {
        /// The client's process id.
        public var pid: Int?
        /// The client's user id.
        public var uid: Int?
        /// The client's executable.
        public var executable: String?
        /// The client's systemd unit.
        public var unit: String?
        /// The accuracy it gets now.
        public var accuracy: AccuracyAuthorization?
        /// When it was granted, UTC.
        public var granted: UTCTime?
        /// When it ends at the latest (the daemon's `once-lifetime`), UTC.
        public var expires: UTCTime?

        /// Makes a one-time grant value.
        public init(pid: Int? = nil, uid: Int? = nil, executable: String? = nil, unit: String? = nil,
                    accuracy: AccuracyAuthorization? = nil, granted: UTCTime? = nil, expires: UTCTime? = nil) {
            self.pid = pid
            self.uid = uid
            self.executable = executable
            self.unit = unit
            self.accuracy = accuracy
            self.granted = granted
            self.expires = expires
        }
    }

    /// Stored decisions, in the daemon's order.
    public var persistent: [Persistent]
    /// Pre-approved one-time grants.
    public var preapproved: [Preapproval]
    /// Live one-time grants.
    public var once: [OneTime]
    /// After `grant(...)`: the accuracy that will apply to the subject's clients, the daemon's rules
    /// applied, and why when that is not the accuracy granted; nil from a daemon that does not say.
    public var effective: GrantEffect?
    /// After `revoke(...)`: how many grants were removed (stored decisions, pre-approvals, live
    /// one-time grants); 0 when the subject had none; nil from a daemon that does not say.
    public var revoked: Int?
    /// The `GRANTS` object as the server sent it, one line without the newline; nil for values made in
    /// code.
    public var json: String?

    /// Makes a grant list.
    public init(persistent: [Persistent] = [], preapproved: [Preapproval] = [], once: [OneTime] = [],
                effective: GrantEffect? = nil, revoked: Int? = nil, json: String? = nil) {
        self.persistent = persistent
        self.preapproved = preapproved
        self.once = once
        self.effective = effective
        self.revoked = revoked
        self.json = json
    }
}

/// One entry of the daemon's audit trail (`AUDIT.events[]`): a decision, a grant's first delivery of a
/// location, or an administrator's grant or revoke — which program saw the location, when, and how
/// precisely.
public struct AuditEvent: Hashable, Sendable {
    /// When it happened, UTC.
    public var time: UTCTime?
    /// When it happened, Unix seconds (`unix`).
    public var unixTime: Double?
    /// `"decision"`, `"delivery"`, `"grant"` or `"revoke"` (kept as text for kinds a newer daemon adds).
    public var event: String
    /// The client concerned (for `grant` and `revoke`: the administrator).
    public var client: ClientDescription?
    /// The request: `"AUTHORIZE"`, `"FULLACCURACY"`, `"WATCH"`, `"POLL"`, or the grant made or revoked,
    /// e.g. `"REVOKE executable /usr/bin/navit"`.
    public var request: String?
    /// The resulting status (an `AuthorizationStatus` raw value), when there is one.
    public var status: String?
    /// The accuracy granted or delivered.
    public var accuracy: AccuracyAuthorization?
    /// Why, in the daemon's words.
    public var reason: String?
    /// The event object as the daemon stored it, without a newline; nil for values made in code.
    public var json: String?

    /// Makes an audit event value.
    public init(time: UTCTime? = nil, unixTime: Double? = nil, event: String, client: ClientDescription? = nil,
                request: String? = nil, status: String? = nil, accuracy: AccuracyAuthorization? = nil,
                reason: String? = nil, json: String? = nil) {
        self.time = time
        self.unixTime = unixTime
        self.event = event
        self.client = client
        self.request = request
        self.status = status
        self.accuracy = accuracy
        self.reason = reason
        self.json = json
    }
}
