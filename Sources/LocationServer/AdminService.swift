import LocationPolicy
import LocationPosix
import LocationWire

/// The administrator's requests — AGENT, ANSWER, GRANTS, GRANT, REVOKE, AUDIT — for root and the config's
/// `admin-group` only; anyone else gets a permission ERROR. Grant changes hold in memory at once and are
/// written off the fan-out path; the reply (GRANTS, or an ERROR when the store could not be written)
/// follows the write. AUDIT is read off the fan-out path too.
enum AdminService {
    /// The stored subject for an administrator's target. A user given with a program is stored as its
    /// uid when the name resolves, as an agent's decisions are, so that GRANT and REVOKE by name meet
    /// the agent's entries; a user alone is kept as given.
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

    /// The user a target names, if any.
    static func user(of target: GrantTarget) -> String? {
        switch target {
        case let .executable(_, user), let .unit(_, user): return user
        case .user(let user): return user
        }
    }

    /// The names `user` goes by, as rules name users: as given, its uid as digits and its user name.
    static func aliases(of user: String?) -> Set<String> {
        guard let user else { return [] }
        var names: Set<String> = [user]
        if let uid = uidDigits(user) {
            names.insert(uid)
            if let id = UInt32(uid), let name = ClientIdentity.userName(id) { names.insert(name) }
        }
        return names
    }

    /// Why an administrator's GRANT cannot be made, or nil: a user that does not exist (a uid as digits
    /// always does) would match no client, and the administrator would believe it granted.
    static func refusal(_ target: GrantTarget) -> String? {
        guard let user = user(of: target), uidDigits(user) == nil else { return nil }
        return "no such user \"\(user)\" (give a user name or a uid as digits)"
    }

    /// The `effective` member of the reply to GRANT.
    static func effectiveMembers(_ effect: GrantEffect) -> [UInt8] {
        var inner = JSONMembers()
        inner.string("accuracy", effect.accuracy?.rawValue)
        inner.string("reason", effect.reason)
        var m = JSONMembers()
        m.object("effective", inner)
        return m.bytes
    }

    /// Who did it, for the audit and the stored grant: "alice (uid 1000)".
    static func by(_ identity: ClientIdentity) -> String {
        "\(identity.user ?? "uid \(identity.uid)") (uid \(identity.uid))"
    }

    /// The GRANTS members: persistent grants, pre-approvals, and the live one-time grants.
    static func grantsMembers(_ grants: GrantSet, once: [(identity: ClientIdentity, session: SessionAuthorization)],
                              at wall: Double) -> [UInt8] {
        func subjectMembers(_ s: GrantSubject, into m: inout JSONMembers) {
            switch s {
            case let .executable(e, user): m.string("executable", e); m.string("user", user)
            case let .unit(u, user): m.string("unit", u); m.string("user", user)
            case .user(let u): m.string("user", u)
            }
        }
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
        m.objects("once", once.compactMap { client -> JSONMembers? in
            guard let grant = client.session.once, wall < grant.expires else { return nil }
            var item = JSONMembers()
            item.integer("pid", Int(client.identity.pid))
            item.integer("uid", Int(client.identity.uid))
            item.string("exe", client.identity.executable)
            item.string("unit", client.identity.unit)
            item.string("accuracy", (client.session.temporaryFullAccuracy != nil ? AccuracyAuthorization.full : grant.accuracy).rawValue)
            item.string("granted", isoTime(grant.granted))
            item.string("expires", isoTime(grant.expires))
            return item
        })
        return m.bytes
    }
}

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
            send(id, ServerMessage.object("GRANTS", members: grantsMembers(at: now.wall)))
        case let .grant(target, kind, accuracy, expires):
            if let why = AdminService.refusal(target) {
                send(id, ServerMessage.error(request: "GRANT", message: why))
                return
            }
            let subject = AdminService.subject(target)
            let level = accuracy
            let until = expires.map { now.wall + $0 }
            let effect = publisher.policy.rules.effect(ofGranting: level, kind: kind, to: subject,
                                                       userAliases: AdminService.aliases(of: AdminService.user(of: target)))
            changeGrants(reply: id, request: "GRANT", members: AdminService.effectiveMembers(effect)) {
                if kind == .once {
                    $0.preapprovals.append(Preapproval(subject: subject, accuracy: level, created: now.wall, expires: until))
                } else {
                    $0.persistent.removeAll { $0.subject == subject }
                    $0.persistent.append(PersistentGrant(subject: subject, allowed: true, accuracy: level, created: now.wall,
                                                         expires: until, decidedBy: "administrator \(by)"))
                }
            }
            context.store.record(AuditEvent(event: "grant", identity: identity, request: "GRANT \(kind.rawValue) \(subject) \(level.rawValue)",
                                            status: nil, accuracy: level.rawValue, reason: "by administrator \(by)"), at: now.wall)
            deliver(publisher.reevaluateAll(because: nil, at: now.wall), at: now.wall)
        case let .revoke(target):
            let subject = AdminService.subject(target)
            // A program without a user takes that program's decisions for every user with it, a user
            // alone every decision about that user's programs (agents store those under the uid).
            var alias: GrantSubject? = nil
            if case .user(let name) = subject, let uid = AdminService.uidDigits(name), uid != name { alias = .user(uid) }
            let revoked = { (stored: GrantSubject) in subject.covers(stored) || alias?.covers(stored) == true }
            // How many grants go, so that the reply can say when there was nothing to revoke.
            var count = publisher.subscribers.values.filter {
                subject.matches($0.identity) && ($0.session.once.map { now.wall < $0.expires } == true || $0.session.temporaryFullAccuracy != nil)
            }.count
            let stored = publisher.policy.grants.persistent.count + publisher.policy.grants.preapprovals.count
            let kept = publisher.policy.grants.persistent.filter { !revoked($0.subject) }.count
                + publisher.policy.grants.preapprovals.filter { !revoked($0.subject) }.count
            count += stored - kept
            var members = JSONMembers()
            members.integer("revoked", count)
            changeGrants(reply: id, request: "REVOKE", members: members.bytes) {
                $0.persistent.removeAll { revoked($0.subject) }
                $0.preapprovals.removeAll { revoked($0.subject) }
            }
            for (client, subscriber) in publisher.subscribers where subject.matches(subscriber.identity) {
                // The grants end; the accuracy the client asked for still caps what a rule may give it.
                publisher.changeSession(of: client) { $0 = SessionAuthorization(requestedAccuracy: $0.requestedAccuracy) }
            }
            context.store.record(AuditEvent(event: "revoke", identity: identity, request: "REVOKE \(subject)", status: nil,
                                            accuracy: nil, reason: "by administrator \(by)" + (count == 0 ? "; there was nothing to revoke" : "")),
                                 at: now.wall)
            deliver(publisher.reevaluateAll(because: "revoked by administrator \(by)", at: now.wall), at: now.wall)
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

    /// The GRANTS members as the grants stand now.
    func grantsMembers(at wall: Double) -> [UInt8] {
        let once = publisher.subscribers.keys.sorted().compactMap { id in
            publisher.subscribers[id].map { (identity: $0.identity, session: $0.session) }
        }
        return AdminService.grantsMembers(publisher.policy.grants, once: once, at: wall)
    }
}
