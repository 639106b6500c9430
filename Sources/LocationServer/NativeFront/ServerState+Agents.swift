import LocationCore
import LocationPolicy
import LocationWire

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
