import LocationCore
import LocationWire

// The agent's and the administrator's side of the policy (docs/PROTOCOL.md "Agents and
// administrators"): pending questions, answers, grants and the audit trail, as values.

/// Who a client is, as the daemon saw it (`ASK.client`, an audit event's `client`): LocationWire's.
public typealias ClientDescription = LocationWire.ClientDescription

/// A pending authorization request the daemon asks the agents about (`ASK`): LocationWire's
/// `ServerMessage.Ask`, whose members (`id`, `client`, `request`, `accuracy`, `purposeKey`, `purpose`,
/// `timeout`) read through this value, with the line it came in.
@dynamicMemberLookup
public struct AgentQuestion: Hashable, Sendable {
    /// The question as LocationWire decoded it; cite its `id` in `LocationClient.answer(id:answer:accuracy:)`.
    public var message: ServerMessage.Ask
    /// The `ASK` object as the server sent it, one line without the newline; nil for values made in code.
    public var json: String?

    /// Makes a question value from the message.
    public init(_ message: ServerMessage.Ask, json: String? = nil) {
        self.message = message
        self.json = json
    }

    /// The client asking; empty when the daemon described none.
    public var client: ClientDescription { message.client ?? ClientDescription() }

    /// What it asks for: `"once"`, `"persistent"` or `"temporaryFullAccuracy"` (text, so that requests a
    /// newer daemon adds still show); `"?"` when the daemon named none.
    public var request: String { message.request ?? "?" }

    /// A member of the question (`ServerMessage.Ask`), e.g. `question.purposeKey`.
    public subscript<Value>(dynamicMember member: WritableKeyPath<ServerMessage.Ask, Value>) -> Value {
        get { message[keyPath: member] }
        set { message[keyPath: member] = newValue }
    }
}

/// How a question ended (`ANSWERED`), told to every agent: LocationWire's `ServerMessage.Answered`
/// (`answer`: `"allowOnce"`, `"allowOnceStanding"`, `"allowAlways"`, `"deny"`, `"timeout"` — nobody answered within the
/// daemon's `ask-timeout` — or `"withdrawn"`, the client went away).
public typealias AnsweredNotice = ServerMessage.Answered

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

/// The daemon's grants, the reply to `GRANTS`, `GRANT` and `REVOKE`: LocationWire's
/// `ServerMessage.Grants`, whose members (`persistent`, `preapproved`, `once`) read through this value,
/// with the line it came in.
@dynamicMemberLookup
public struct GrantList: Hashable, Sendable {
    /// A stored decision, allowing or refusing (`persistent[]`).
    public typealias Persistent = ServerMessage.Grants.Stored
    /// A pre-approved one-time grant (`preapproved[]`).
    public typealias Preapproval = ServerMessage.Grants.Preapproved
    /// A live one-time grant of a connected client (`once[]`).
    public typealias OneTime = ServerMessage.Grants.OneTime

    /// The grants as LocationWire decoded them.
    public var message: ServerMessage.Grants
    /// The `GRANTS` object as the server sent it, one line without the newline; nil for values made in
    /// code.
    public var json: String?

    /// Makes a grant list from the message.
    public init(_ message: ServerMessage.Grants, json: String? = nil) {
        self.message = message
        self.json = json
    }

    /// Makes a grant list from its entries.
    public init(persistent: [Persistent] = [], preapproved: [Preapproval] = [], once: [OneTime] = [],
                effective: GrantEffect? = nil, revoked: Int? = nil, json: String? = nil) {
        self.init(ServerMessage.Grants(persistent: persistent, preapproved: preapproved, once: once, effective: effective,
                                       revoked: revoked), json: json)
    }

    /// A member of the grants (`ServerMessage.Grants`), e.g. `list.persistent`, `list.effective` (after
    /// `grant(...)`: the accuracy that will apply, and why when that is not the accuracy granted) or
    /// `list.revoked` (after `revoke(...)`: how many grants were removed).
    public subscript<Value>(dynamicMember member: WritableKeyPath<ServerMessage.Grants, Value>) -> Value {
        get { message[keyPath: member] }
        set { message[keyPath: member] = newValue }
    }
}

/// One entry of the daemon's audit trail (`AUDIT.events[]`): a decision, a grant's first delivery of a
/// location, or an administrator's grant or revoke — which program saw the location, when, and how
/// precisely. LocationWire's `AuditRecord`, whose members (`time`, `unixTime`, `event`, `client`,
/// `request`, `status`, `accuracy`, `reason`) read through this value, with the object it came in.
@dynamicMemberLookup
public struct AuditEvent: Hashable, Sendable {
    /// The event as LocationWire decoded it.
    public var record: AuditRecord
    /// The event object as the daemon stored it, without a newline; nil for values made in code.
    public var json: String?

    /// Makes an audit event value from the record.
    public init(_ record: AuditRecord, json: String? = nil) {
        self.record = record
        self.json = json
    }

    /// `"decision"`, `"delivery"`, `"grant"` or `"revoke"` (text, for kinds a newer daemon adds); `"?"`
    /// when the daemon named none.
    public var event: String { record.event ?? "?" }

    /// A member of the event (`AuditRecord`), e.g. `event.reason`.
    public subscript<Value>(dynamicMember member: WritableKeyPath<AuditRecord, Value>) -> Value {
        get { record[keyPath: member] }
        set { record[keyPath: member] = newValue }
    }
}
