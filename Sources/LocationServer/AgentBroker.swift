import LocationCore
import LocationPolicy
import LocationWire

/// A question waiting for an agent's answer, and the clients waiting on it.
struct PendingAsk: Sendable {
    let id: Int
    /// Whom the answer is about: the user and program, as an agent's decision is stored.
    let subject: GrantSubject
    let question: AgentQuestion
    /// The request that asked: "AUTHORIZE" or "FULLACCURACY".
    let request: String
    /// The connections waiting: the one that asked, then others of the same user and program that
    /// asked the same while it waited. The answer applies to each.
    var clients: [Int]
    /// When it was asked (the monotonic clock).
    var askedAt: ContinuousClock.Instant
}

/// The agents (`locationctl agent`, run by root or the admin group) and the questions waiting for them:
/// who is registered, what is pending, and the ASK / ANSWERED messages. A value; the server's state owns
/// it and schedules the timeouts.
///
/// Bounds, so that no user can flood the agents or knock them off (issue 12): at most one question per
/// user and program waits at a time (the same question again joins it; another is refused until it is
/// answered), and each user may open `questionsPerMinute` questions a minute.
struct AgentBroker: Sendable {
    /// Registered agents' connection ids, in the order they registered.
    private(set) var agents: [Int] = []
    private var asks: [Int: PendingAsk] = [:]
    /// The waiting question of each user and program.
    private var bySubject: [GrantSubject: Int] = [:]
    /// Questions opened per user in the current minute.
    private var opened: [UInt32: (start: ContinuousClock.Instant, count: Int)] = [:]
    private var nextAsk = 1

    /// Questions one user may open per minute.
    static let questionsPerMinute = 6

    /// What `open` did.
    enum Opening: Sendable {
        /// A new question, to show the agents.
        case opened(PendingAsk)
        /// The same question from the same user and program was waiting: the client waits on it too.
        case joined(Int)
        /// Another question from the same user and program is waiting.
        case busy
        /// The user opened `questionsPerMinute` questions in the last minute.
        case tooMany
    }

    var hasAgents: Bool { !agents.isEmpty }

    func isAgent(_ id: Int) -> Bool { agents.contains(id) }

    /// Registers connection `id` as an agent.
    mutating func register(_ id: Int) {
        if !agents.contains(id) { agents.append(id) }
    }

    /// A connection closed: it is no longer an agent, and it waits on no question; questions nobody
    /// waits on any more are withdrawn (returned).
    mutating func remove(_ id: Int) -> [PendingAsk] {
        agents.removeAll { $0 == id }
        var withdrawn: [PendingAsk] = []
        for askID in asks.keys.sorted() {
            guard var ask = asks[askID], ask.clients.contains(id) else { continue }
            ask.clients.removeAll { $0 == id }
            if ask.clients.isEmpty {
                asks.removeValue(forKey: askID)
                bySubject.removeValue(forKey: ask.subject)
                withdrawn.append(ask)
            } else {
                asks[askID] = ask
            }
        }
        return withdrawn
    }

    /// Opens a question for the agents about `identity`, asked by connection `client` — or joins the
    /// same one already waiting, or refuses (see `Opening`).
    mutating func open(client: Int, identity: ClientIdentity, question: AgentQuestion, request: String,
                       now: ContinuousClock.Instant) -> Opening {
        let subject = GrantSubject.decision(for: identity)
        if let waiting = bySubject[subject], var ask = asks[waiting] {
            guard ask.question == question, ask.request == request else { return .busy }
            if !ask.clients.contains(client) { ask.clients.append(client) }
            asks[waiting] = ask
            return .joined(waiting)
        }
        var rate = opened[identity.uid] ?? (start: now, count: 0)
        if now - rate.start >= .seconds(60) { rate = (start: now, count: 0) }
        guard rate.count < Self.questionsPerMinute else { return .tooMany }
        rate.count += 1
        if opened.count >= 4096 { opened = opened.filter { now - $0.value.start < .seconds(60) } }
        opened[identity.uid] = rate
        let ask = PendingAsk(id: nextAsk, subject: subject, question: question, request: request, clients: [client], askedAt: now)
        nextAsk += 1
        asks[ask.id] = ask
        bySubject[subject] = ask.id
        return .opened(ask)
    }

    /// The questions asked `timeout` or longer before `now`, oldest first.
    func overdue(now: ContinuousClock.Instant, timeout: Duration) -> [Int] {
        asks.values.filter { now - $0.askedAt >= timeout }.map(\.id).sorted()
    }

    /// Takes question `id` out (answered or timed out); nil when it is no longer waiting.
    mutating func take(_ id: Int) -> PendingAsk? {
        guard let ask = asks.removeValue(forKey: id) else { return nil }
        bySubject.removeValue(forKey: ask.subject)
        return ask
    }

    /// The ASK message for the agents (docs/PROTOCOL.md "ASK").
    /// - Parameters:
    ///   - timeout: seconds the agents have to answer.
    static func askMessage(_ ask: PendingAsk, identity: ClientIdentity, name: String?, timeout: Double) -> [UInt8] {
        let client = ClientDescription(pid: Int(identity.pid), uid: Int(identity.uid), user: identity.user,
                                       executable: AuditText.bounded(identity.program),
                                       unit: AuditText.bounded(identity.unit ?? identity.userUnit),
                                       name: AuditText.bounded(name, bytes: DisplayText.maximumNameBytes),
                                       identified: AuditText.bounded(Optional(identity.strength.description)))
        var request: String, purposeKey: String? = nil
        switch ask.question.subject {
        case .authorization(let kind): request = kind.rawValue
        case .temporaryFullAccuracy(let key):
            request = "temporaryFullAccuracy"
            purposeKey = key
        }
        return ServerMessage.ask(ServerMessage.Ask(id: ask.id, client: client, request: request, purposeKey: purposeKey,
                                                   accuracy: ask.question.accuracy, purpose: ask.question.purpose,
                                                   timeout: timeout, upgrade: ask.question.upgrade,
                                                   remembers: ask.question.remembers?.rawValue,
                                                   inUse: ask.question.inUseWhileRunning ? "running" : "activeSession")).encoded()
    }

    /// The ANSWERED message: question `id` was answered (`answer`, by whom), withdrawn or timed out.
    static func answered(_ id: Int, _ answer: String, by: String) -> [UInt8] {
        ServerMessage.answered(ServerMessage.Answered(id: id, answer: answer, by: by)).encoded()
    }
}

/// Asking agents and taking their answers.
extension ServerState {
    /// Sends `message` to every agent; an ASK is tagged with its id so that it can be withdrawn unread.
    mutating func tellAgents(_ message: [UInt8], ask: Int? = nil) {
        for agent in broker.agents { send(agent, message, tag: ask) }
    }

    /// Question `ask` is over (answered, timed out, withdrawn): agents that have not read its ASK yet lose
    /// it from their queue and hear nothing of it; the others get ANSWERED.
    mutating func closeQuestion(_ ask: Int, _ answer: String, by: String) {
        let answered = AgentBroker.answered(ask, answer, by: by)
        for agent in broker.agents where connections[agent]?.output.withdraw(tag: ask) != true {
            send(agent, answered)
        }
    }

    /// Puts a client's question to the agents; with none running, the client is denied at once.
    mutating func ask(_ id: Int, _ question: AgentQuestion, request: String, at now: Moment) {
        guard broker.hasAgents, let subscriber = publisher.subscribers[id] else {
            let reason = "no agent is running to ask"
            audit("decision", id, request: request, status: AuthorizationStatus.denied.rawValue, accuracy: nil, reason: reason, at: now.wall)
            send(id, ServerMessage.authorization(status: .denied, accuracy: nil, reason: reason))
            return
        }
        switch openQuestion(id, question, request: request, at: now) {
        case .opened, .joined, nil:
            break
        case .busy:
            send(id, ServerMessage.error(request: request, message: "another question from this program is waiting for an agent; ask again once it is answered"))
        case .tooMany:
            audit("decision", id, request: request, status: nil, accuracy: nil,
                  reason: "not asked: more than \(AgentBroker.questionsPerMinute) questions a minute from uid \(subscriber.identity.uid)", at: now.wall)
            send(id, ServerMessage.error(request: request, message: "too many questions to agents from uid \(subscriber.identity.uid) (\(AgentBroker.questionsPerMinute) a minute); ask again later"))
        }
    }

    /// Opens (or joins) a question for client `id` and shows a new one to the agents, with its timeout;
    /// nil when the client is gone.
    private mutating func openQuestion(_ id: Int, _ question: AgentQuestion, request: String, at now: Moment) -> AgentBroker.Opening? {
        guard let subscriber = publisher.subscribers[id] else { return nil }
        let opening = broker.open(client: id, identity: subscriber.identity, question: question, request: request, now: now.monotonic)
        if case .opened(let pending) = opening {
            let timeout = publisher.policy.rules.defaults.askTimeout
            effects.append(.schedule(.askTimeout(ask: pending.id), after: .seconds(timeout)))
            tellAgents(AgentBroker.askMessage(pending, identity: subscriber.identity, name: subscriber.displayName, timeout: timeout),
                       ask: pending.id)
        }
        return opening
    }

    /// No agent answered in time: the clients waiting are denied (an upgrade's keep When In Use).
    mutating func askTimedOut(_ ask: Int, at now: Moment) {
        guard let pending = broker.take(ask) else { return }
        let timeout = publisher.policy.rules.defaults.askTimeout
        let reason = "no answer from an agent within \(DurationText.seconds(.seconds(timeout)))"
        for client in pending.clients {
            if pending.question.upgrade {
                // Not upgraded: the client keeps When In Use, and is told so.
                let state = publisher.authorization(of: client, at: now)
                audit("decision", client, request: pending.request, status: state.status.rawValue, accuracy: state.accuracy,
                      reason: reason + "; the upgrade to Always was not made", at: now.wall)
                announce(client, state, at: now.wall)
                continue
            }
            audit("decision", client, request: pending.request, status: AuthorizationStatus.denied.rawValue, accuracy: nil,
                  reason: reason, at: now.wall)
            send(client, ServerMessage.authorization(status: .denied, accuracy: nil, reason: reason))
        }
        closeQuestion(ask, "timeout", by: "nobody")
    }

    /// ANSWER from an agent: the waiting clients' sessions (and, for "allow always", "deny" and a
    /// standing approval, the grant store)
    /// change, the clients are told, and every agent hears that the question was answered.
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
        case .allowOnceStanding: parsed = .allowOnceStanding(accuracy)
        case .allowAlways: parsed = .allowAlways(accuracy)
        case .deny: parsed = .deny
        }
        var stored = false
        for client in pending.clients {
            guard let subscriber = publisher.subscribers[client] else { continue }
            let outcome = Policy.apply(parsed, to: pending.question, identity: subscriber.identity, session: subscriber.session,
                                       now: now, onceLifetime: publisher.policy.rules.defaults.onceLifetime,
                                       decidedBy: "agent \(by)")
            publisher.changeSession(of: client) { $0 = outcome.session }
            if let once = outcome.session.once, once != subscriber.session.once {
                scheduleOnceCheck(once.ends, at: now)
            }
            // A decision replaces the subject's earlier ones: stored decisions and standing approvals.
            if let grant = outcome.store, !stored {
                stored = true
                changeGrants(reply: nil, request: "ANSWER") { $0.replaceDecision(with: grant) }
                if !grant.allowed { endStandingGrants(of: grant.subject) }
            }
            if let standing = outcome.standing, !stored {
                stored = true
                changeGrants(reply: nil, request: "ANSWER") { $0.replaceDecision(withStanding: standing) }
            }
            let state = publisher.authorization(of: client, at: now)
            audit("decision", client, request: pending.request, status: state.status.rawValue, accuracy: state.accuracy,
                  reason: "agent \(by) answered \(answer.rawValue)", at: now.wall)
            announce(client, state, at: now.wall)
            if parsed == .deny, pending.request == "FULLACCURACY" {
                send(client, ServerMessage.error(request: "FULLACCURACY", message: "temporary full accuracy denied by the agent"))
            }
        }
        if stored { deliver(publisher.reevaluateAll(because: nil, at: now), at: now.wall) }
        closeQuestion(ask, answer.rawValue, by: by)
    }

    /// A denial replaced the subject's standing approval: the one-time grants it gave live connections end
    /// too, as a REVOKE ends them (found by a helper attacking the daemon: they lasted up to once-lifetime).
    private mutating func endStandingGrants(of subject: GrantSubject) {
        for subscriber in publisher.subscribers where subject.matches(subscriber.identity) && subscriber.session.once?.standing == true {
            publisher.changeSession(of: subscriber.id) { $0 = SessionAuthorization(requestedAccuracy: $0.requestedAccuracy) }
        }
    }

}
