import LocationCore
import LocationPolicy
import LocationPosix
import LocationWire

/// The agent and the administrator's requests: AGENT, ANSWER, GRANTS, GRANT, REVOKE, AUDIT — for root and
/// the config's `admin-group` only; anyone else gets a permission ERROR.
extension SocketServer {
    func admin(_ request: Request, _ session: ClientSession) {
        guard policy.isAdmin(session.identity) else {
            send(session, ServerMessage.error(request: request.className,
                                              message: "permission denied: needs root or group \(policy.adminGroup)"))
            return
        }
        let by = "\(session.identity.user ?? "uid \(session.identity.uid)") (uid \(session.identity.uid))"
        switch request {
        case .agent:
            agents[session.id] = session
            log.notice("agent registered", ["agent.pid": String(session.identity.pid), "agent.uid": String(session.identity.uid)])
            send(session, ServerMessage.object("AGENT", members: JSONMembers().bytes))
        case let .answer(id, answer, accuracy):
            answerAsk(id: id, answer: answer, accuracy: accuracy, from: session, by: by)
        case .grants:
            send(session, ServerMessage.object("GRANTS", members: grantsMembers()))
        case let .grant(target, kind, accuracy, expires):
            let now = wallClockSeconds()
            let subject = Self.subject(target)
            let level = accuracy
            let until = expires.map { now + $0 }
            if kind == .once {
                persist { $0.preapprovals.append(Preapproval(subject: subject, accuracy: level, created: now, expires: until)) }
            } else {
                persist {
                    $0.persistent.removeAll { $0.subject == subject }
                    $0.persistent.append(PersistentGrant(subject: subject, allowed: true, accuracy: level, created: now,
                                                         expires: until, decidedBy: "administrator \(by)"))
                }
            }
            policy.record("grant", identity: session.identity, request: "GRANT \(kind.rawValue) \(subject) \(level.rawValue)",
                          status: nil, accuracy: level.rawValue, reason: "by administrator \(by)")
            reevaluateAll()
            send(session, ServerMessage.object("GRANTS", members: grantsMembers()))
        case let .revoke(target):
            let subject = Self.subject(target)
            // A program without a user takes that program's decisions for every user with it, a user
            // alone every decision about that user's programs (agents store those under the uid).
            var alias: GrantSubject? = nil
            if case .user(let name) = subject, let uid = Self.uidDigits(name), uid != name { alias = .user(uid) }
            let revoked = { (stored: GrantSubject) in subject.covers(stored) || alias?.covers(stored) == true }
            persist {
                $0.persistent.removeAll { revoked($0.subject) }
                $0.preapprovals.removeAll { revoked($0.subject) }
            }
            for other in sessions.values where subject.matches(other.identity) {
                other.policy = SessionAuthorization()
            }
            policy.record("revoke", identity: session.identity, request: "REVOKE \(subject)", status: nil, accuracy: nil,
                          reason: "by administrator \(by)")
            reevaluateAll(because: "revoked by administrator \(by)")
            send(session, ServerMessage.object("GRANTS", members: grantsMembers()))
        case let .audit(since):
            var m = JSONMembers()
            m.rawArray("events", policy.audit.lines(since: since))
            send(session, ServerMessage.object("AUDIT", members: m.bytes))
        default:
            break
        }
    }

    private func answerAsk(id: Int, answer: AnswerChoice, accuracy: AccuracyAuthorization?, from agent: ClientSession, by: String) {
        guard agents[agent.id] != nil else {
            send(agent, ServerMessage.error(request: "ANSWER", message: "register with AGENT first"))
            return
        }
        guard let pending = asks.removeValue(forKey: id) else {
            send(agent, ServerMessage.error(request: "ANSWER", message: "no question \(id) is waiting (answered, withdrawn or timed out)"))
            return
        }
        pending.timeout.cancel()
        let parsed: AgentAnswer
        switch answer {
        case .allowOnce: parsed = .allowOnce(accuracy)
        case .allowAlways: parsed = .allowAlways(accuracy)
        case .deny: parsed = .deny
        }
        let session = pending.session
        let now = wallClockSeconds()
        let outcome = Policy.apply(parsed, to: pending.question, identity: session.identity, session: session.policy, now: now,
                                   onceLifetime: policy.rules.defaults.onceLifetime, decidedBy: "agent \(by)")
        session.policy = outcome.session
        if let stored = outcome.store {
            persist {
                $0.persistent.removeAll { $0.subject == stored.subject }
                $0.persistent.append(stored)
            }
        }
        let state = authorization(of: session, now: now)
        policy.record("decision", identity: session.identity, name: session.displayName, request: pending.request,
                      status: state.status.rawValue, accuracy: state.accuracy?.rawValue, reason: "agent \(by) answered \(answer.rawValue)")
        if !session.closed {
            announce(session, state, force: true)
            if parsed == .deny, pending.request == "FULLACCURACY" {
                send(session, ServerMessage.error(request: "FULLACCURACY", message: "temporary full accuracy denied by the agent"))
            }
        }
        send(agent, ServerMessage.object("ANSWERED", members: answeredMembers(id, answer.rawValue, by: by)))
        tellAgents(ServerMessage.object("ANSWERED", members: answeredMembers(id, answer.rawValue, by: by)), except: agent)
        if outcome.store != nil { reevaluateAll() }
    }

    /// The stored subject for an administrator's target. A user given with a program is stored as its
    /// uid when the name resolves, as an agent's decisions are, so that GRANT and REVOKE by name meet
    /// the agent's entries; a user alone is kept as given, as it always was.
    static func subject(_ target: GrantTarget) -> GrantSubject {
        switch target {
        case let .executable(e, user): return .executable(e, user: user.map { uidDigits($0) ?? $0 })
        case let .unit(u, user): return .unit(u, user: user.map { uidDigits($0) ?? $0 })
        case .user(let u): return .user(u)
        }
    }

    /// `user` as a uid in digits: itself when it is digits, else the uid of the user of that name; nil
    /// when there is no such user.
    static func uidDigits(_ user: String) -> String? {
        if !user.isEmpty, user.allSatisfy(\.isASCII), UInt32(user) != nil { return user }
        return ClientIdentity.userID(user).map { String($0) }
    }

    private func grantsMembers() -> [UInt8] {
        func subjectMembers(_ s: GrantSubject, into m: inout JSONMembers) {
            switch s {
            case let .executable(e, user): m.string("executable", e); m.string("user", user)
            case let .unit(u, user): m.string("unit", u); m.string("user", user)
            case .user(let u): m.string("user", u)
            }
        }
        let grants = policy.store.grants
        var m = JSONMembers()
        m.objects("persistent", grants.persistent.map { g in
            var item = JSONMembers()
            subjectMembers(g.subject, into: &item)
            item.bool("allowed", g.allowed)
            item.string("accuracy", g.accuracy.rawValue)
            item.string("created", isoTime(g.created))
            item.string("expires", g.expires.map(isoTime))
            item.string("decidedBy", g.decidedBy)
            return item
        })
        m.objects("preapproved", grants.preapprovals.map { p in
            var item = JSONMembers()
            subjectMembers(p.subject, into: &item)
            item.string("accuracy", p.accuracy.rawValue)
            item.string("created", isoTime(p.created))
            item.string("expires", p.expires.map(isoTime))
            return item
        })
        let now = wallClockSeconds()
        m.objects("once", sessions.values.compactMap { s -> JSONMembers? in
            guard let once = s.policy.once, now < once.expires else { return nil }
            var item = JSONMembers()
            item.integer("pid", Int(s.identity.pid))
            item.integer("uid", Int(s.identity.uid))
            item.string("exe", s.identity.executable)
            item.string("unit", s.identity.unit)
            item.string("accuracy", (s.policy.temporaryFullAccuracy != nil ? AccuracyAuthorization.full : once.accuracy).rawValue)
            item.string("granted", isoTime(once.granted))
            item.string("expires", isoTime(once.expires))
            return item
        })
        return m.bytes
    }
}
