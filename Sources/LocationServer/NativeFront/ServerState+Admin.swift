import LocationCore
import LocationPolicy
import LocationPosix
import LocationWire

/// The administrators' requests (AGENT, ANSWER, GRANTS, GRANT, REVOKE, AUDIT) in the server's turn: `AdminService`
/// decides, this carries it out on the connections, the Publisher and the grant store.
extension ServerState {
    mutating func admin(_ request: Request, from id: Int, at now: Moment) {
        guard let identity = connections[id]?.identity else { return }
        guard publisher.policy.isAdmin(identity) else {
            send(id, ServerMessage.error(request: request.className,
                                         message: "permission denied: needs root or group \(publisher.policy.adminGroup)"))
            return
        }
        let by = AdminService.by(identity)
        switch request {
        case .agent:
            broker.register(id)
            context.log.notice("agent registered", ["agent.pid": String(identity.pid), "agent.uid": String(identity.uid)])
            send(id, ServerMessage.agent.encoded())
        case let .answer(ask, answer, accuracy):
            self.answer(ask, answer, accuracy: accuracy, from: id, by: by, at: now)
        case .grants:
            send(id, ServerMessage.grants(grantsMessage(at: now)).encoded())
        case let .grant(target, kind, accuracy, expires, standing):
            if let why = AdminService.refusal(target) {
                send(id, ServerMessage.error(request: "GRANT", message: why))
                return
            }
            let subject = AdminService.subject(target)
            let level = accuracy
            let until = expires.map { now.wall + $0 }
            let effect = publisher.policy.rules.effect(ofGranting: level, kind: kind, to: subject,
                                                       userAliases: AdminService.aliases(of: AdminService.user(of: target)))
            changeGrants(reply: id, request: "GRANT",
                         extra: ServerMessage.Grants(effective: ServerMessage.Grants.Effective(accuracy: effect.accuracy, reason: effect.reason))) {
                if standing {
                    // A standing approval replaces the subject's stored decisions, as an agent's does.
                    $0.replaceDecision(withStanding: Preapproval(subject: subject, accuracy: level, created: now.wall, expires: until,
                                                                 standing: true, decidedBy: "administrator \(by)"))
                } else if kind == .once {
                    $0.preapprovals.append(Preapproval(subject: subject, accuracy: level, created: now.wall, expires: until,
                                                       decidedBy: "administrator \(by)"))
                } else {
                    $0.replaceDecision(with: PersistentGrant(subject: subject, allowed: true, accuracy: level, created: now.wall,
                                                             expires: until, decidedBy: "administrator \(by)", whenInUse: kind == .whenInUse,
                                                             // An administrator's grant names its subject knowingly: for a
                                                             // system service, When In Use is while it runs.
                                                             whileRunning: kind == .whenInUse))
                }
            }
            context.store.record(AuditEvent(event: "grant", identity: identity, request: "GRANT \(kind.rawValue)\(standing ? " standing" : "") \(subject) \(level.rawValue)",
                                            status: nil, accuracy: level, reason: "by administrator \(by)"), at: now.wall)
            deliver(publisher.reevaluateAll(because: nil, at: now), at: now.wall)
        case let .revoke(target):
            let subject = AdminService.subject(target)
            // A program without a user takes that program's decisions for every user with it, a user
            // alone every decision about that user's programs (agents store those under the uid).
            var alias: GrantSubject? = nil
            if case .user(let name) = subject, let uid = AdminService.uidDigits(name), uid != name { alias = .user(uid) }
            let revoked = { (stored: GrantSubject) in subject.covers(stored) || alias?.covers(stored) == true }
            // How many grants go, so that the reply can say when there was nothing to revoke.
            var count = publisher.subscribers.filter {
                subject.matches($0.identity) && ($0.session.once?.holds(at: now) == true || $0.session.temporaryFullAccuracy != nil)
            }.count
            let stored = publisher.policy.grants.persistent.count + publisher.policy.grants.preapprovals.count
            let kept = publisher.policy.grants.persistent.filter { !revoked($0.subject) }.count
                + publisher.policy.grants.preapprovals.filter { !revoked($0.subject) }.count
            count += stored - kept
            changeGrants(reply: id, request: "REVOKE", extra: ServerMessage.Grants(revoked: count)) {
                $0.persistent.removeAll { revoked($0.subject) }
                $0.preapprovals.removeAll { revoked($0.subject) }
            }
            for subscriber in publisher.subscribers where subject.matches(subscriber.identity) {
                // The grants end; the accuracy the client asked for still caps what a rule may give it.
                publisher.changeSession(of: subscriber.id) { $0 = SessionAuthorization(requestedAccuracy: $0.requestedAccuracy) }
            }
            context.store.record(AuditEvent(event: "revoke", identity: identity, request: "REVOKE \(subject)", status: nil,
                                            accuracy: nil, reason: "by administrator \(by)" + (count == 0 ? "; there was nothing to revoke" : "")),
                                 at: now.wall)
            deliver(publisher.reevaluateAll(because: "revoked by administrator \(by)", at: now), at: now.wall)
        case let .audit(since, cursor, limit):
            var after: AuditCursor? = nil
            if let cursor {
                guard let read = AuditCursor(cursor) else {
                    send(id, ServerMessage.error(request: "AUDIT", message: "cursor must be an AUDIT reply's next, not \"\(AuditText.name(cursor))\""))
                    return
                }
                after = read
            }
            effects.append(.readAudit(reply: id, since: since, cursor: after, limit: limit))
        default:
            break
        }
    }

    /// The GRANTS message as the grants stand now.
    func grantsMessage(at now: Moment) -> ServerMessage.Grants {
        let once = publisher.subscribers.ids.sorted().compactMap { id in
            publisher.subscribers[id].map { (identity: $0.identity, session: $0.session) }
        }
        var message = AdminService.grantsMessage(publisher.policy.grants, once: once, rules: publisher.policy.rules, at: now)
        message.uplinks = publisher.uplinkGrants(at: now.wall)
        return message
    }
}
