import LocationPolicy
import LocationWire

/// A question waiting for an agent's answer.
struct PendingAsk: Sendable {
    let id: Int
    /// The client that asked.
    let client: Int
    let question: AgentQuestion
    /// The request that asked: "AUTHORIZE" or "FULLACCURACY".
    let request: String
}

/// The agents (`locationctl agent`, run by root or the admin group) and the questions waiting for them:
/// who is registered, what is pending, and the ASK / ANSWERED messages. A value; the server's state owns
/// it and schedules the timeouts.
struct AgentBroker: Sendable {
    /// Registered agents' connection ids, in the order they registered.
    private(set) var agents: [Int] = []
    private var asks: [Int: PendingAsk] = [:]
    private var nextAsk = 1

    var hasAgents: Bool { !agents.isEmpty }

    func isAgent(_ id: Int) -> Bool { agents.contains(id) }

    /// Registers connection `id` as an agent.
    mutating func register(_ id: Int) {
        if !agents.contains(id) { agents.append(id) }
    }

    /// A connection closed: it is no longer an agent, and its questions are withdrawn (returned).
    mutating func remove(_ id: Int) -> [PendingAsk] {
        agents.removeAll { $0 == id }
        let withdrawn = asks.values.filter { $0.client == id }.sorted { $0.id < $1.id }
        for ask in withdrawn { asks.removeValue(forKey: ask.id) }
        return withdrawn
    }

    /// Opens a question for the agents.
    mutating func open(client: Int, question: AgentQuestion, request: String) -> PendingAsk {
        let ask = PendingAsk(id: nextAsk, client: client, question: question, request: request)
        nextAsk += 1
        asks[ask.id] = ask
        return ask
    }

    /// Takes question `id` out (answered or timed out); nil when it is no longer waiting.
    mutating func take(_ id: Int) -> PendingAsk? {
        asks.removeValue(forKey: id)
    }

    /// The ASK message for the agents (docs/PROTOCOL.md "ASK").
    /// - Parameters:
    ///   - timeout: seconds the agents have to answer.
    static func askMessage(_ ask: PendingAsk, identity: ClientIdentity, name: String?, timeout: Double) -> [UInt8] {
        var m = JSONMembers()
        m.integer("id", ask.id)
        var client = JSONMembers()
        client.integer("pid", Int(identity.pid))
        client.integer("uid", Int(identity.uid))
        client.string("user", identity.user)
        client.string("exe", AuditText.bounded(identity.executable))
        client.string("unit", AuditText.bounded(identity.unit))
        client.string("name", AuditText.bounded(name, bytes: DisplayText.maximumNameBytes))
        m.object("client", client)
        switch ask.question.subject {
        case .authorization(let kind): m.string("request", kind.rawValue)
        case .temporaryFullAccuracy(let key):
            m.string("request", "temporaryFullAccuracy")
            m.string("purposeKey", key)
        }
        m.string("accuracy", ask.question.accuracy.rawValue)
        m.string("purpose", ask.question.purpose)
        m.number("timeout", timeout)
        return ServerMessage.object("ASK", members: m.bytes)
    }

    /// The ANSWERED message: question `id` was answered (`answer`, by whom), withdrawn or timed out.
    static func answered(_ id: Int, _ answer: String, by: String) -> [UInt8] {
        var m = JSONMembers()
        m.integer("id", id)
        m.string("answer", answer)
        m.string("by", by)
        return ServerMessage.object("ANSWERED", members: m.bytes)
    }
}

/// Asking agents and taking their answers.
extension ServerState {
    /// Sends `message` to every agent.
    mutating func tellAgents(_ message: [UInt8]) {
        for agent in broker.agents { send(agent, message) }
    }

    /// Puts a client's question to the agents; with none running, the client is denied at once.
    mutating func ask(_ id: Int, _ question: AgentQuestion, request: String, at now: Moment) {
        guard broker.hasAgents, let subscriber = publisher.subscribers[id] else {
            let reason = "no agent is running to ask"
            audit("decision", id, request: request, status: AuthorizationStatus.denied.rawValue, accuracy: nil, reason: reason, at: now.wall)
            send(id, ServerMessage.authorization(status: .denied, accuracy: nil, reason: reason))
            return
        }
        let timeout = publisher.policy.rules.defaults.askTimeout
        let pending = broker.open(client: id, question: question, request: request)
        effects.append(.schedule(.askTimeout(ask: pending.id), after: .seconds(timeout)))
        tellAgents(AgentBroker.askMessage(pending, identity: subscriber.identity, name: subscriber.displayName, timeout: timeout))
    }

    /// No agent answered in time: the client is denied.
    mutating func askTimedOut(_ ask: Int, at now: Moment) {
        guard let pending = broker.take(ask) else { return }
        let timeout = publisher.policy.rules.defaults.askTimeout
        let reason = "no answer from an agent within \(Self.seconds(.seconds(timeout)))"
        audit("decision", pending.client, request: pending.request, status: AuthorizationStatus.denied.rawValue, accuracy: nil,
              reason: reason, at: now.wall)
        send(pending.client, ServerMessage.authorization(status: .denied, accuracy: nil, reason: reason))
        tellAgents(AgentBroker.answered(ask, "timeout", by: "nobody"))
    }

    /// ANSWER from an agent: the client's session (and, for "allow always", the grant store) change, the
    /// client is told, and every agent hears that the question was answered.
    mutating func answer(_ ask: Int, _ answer: AnswerChoice, accuracy: AccuracyAuthorization?, from agent: Int, by: String,
                         at now: Moment) {
        guard broker.isAgent(agent) else {
            send(agent, ServerMessage.error(request: "ANSWER", message: "register with AGENT first"))
            return
        }
        guard let pending = broker.take(ask) else {
            send(agent, ServerMessage.error(request: "ANSWER", message: "no question \(ask) is waiting (answered, withdrawn or timed out)"))
            return
        }
        let parsed: AgentAnswer
        switch answer {
        case .allowOnce: parsed = .allowOnce(accuracy)
        case .allowAlways: parsed = .allowAlways(accuracy)
        case .deny: parsed = .deny
        }
        let client = pending.client
        if let subscriber = publisher.subscribers[client] {
            let outcome = Policy.apply(parsed, to: pending.question, identity: subscriber.identity, session: subscriber.session,
                                       now: now.wall, onceLifetime: publisher.policy.rules.defaults.onceLifetime,
                                       decidedBy: "agent \(by)")
            publisher.changeSession(of: client) { $0 = outcome.session }
            if let once = outcome.session.once, once != subscriber.session.once {
                effects.append(.schedule(.onceExpiry(client: client), after: .seconds(max(0, once.expires - now.wall)) + .milliseconds(10)))
            }
            if let stored = outcome.store {
                changeGrants(reply: nil, request: "ANSWER") {
                    $0.persistent.removeAll { $0.subject == stored.subject }
                    $0.persistent.append(stored)
                }
            }
            let state = publisher.authorization(of: client, at: now.wall)
            audit("decision", client, request: pending.request, status: state.status.rawValue, accuracy: state.accuracy?.rawValue,
                  reason: "agent \(by) answered \(answer.rawValue)", at: now.wall)
            announce(client, state, at: now.wall)
            if parsed == .deny, pending.request == "FULLACCURACY" {
                send(client, ServerMessage.error(request: "FULLACCURACY", message: "temporary full accuracy denied by the agent"))
            }
            if outcome.store != nil { deliver(publisher.reevaluateAll(because: nil, at: now.wall), at: now.wall) }
        }
        tellAgents(AgentBroker.answered(ask, answer.rawValue, by: by))
    }
}
