import LocationCore
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
        return UserDatabase.userID(named: user).map { String($0) }
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
            if let id = UInt32(uid), let name = UserDatabase.name(ofUser: id) { names.insert(name) }
        }
        return names
    }

    /// Why an administrator's GRANT cannot be made, or nil: a user that does not exist (a uid as digits
    /// always does) would match no client, and the administrator would believe it granted.
    static func refusal(_ target: GrantTarget) -> String? {
        guard let user = user(of: target), uidDigits(user) == nil else { return nil }
        return "no such user \"\(user)\" (give a user name or a uid as digits)"
    }

    /// Who did it, for the audit and the stored grant: "alice (uid 1000)".
    static func by(_ identity: ClientIdentity) -> String {
        "\(identity.user ?? "uid \(identity.uid)") (uid \(identity.uid))"
    }

    /// The GRANTS message: persistent grants, pre-approvals, and the live one-time grants.
    /// - Parameter rules: the rules in force: a stored grant a rule caps or denies is listed with what applies
    ///   (`effective`; issue 33: `grants` showed the accuracy granted, not the one its clients got).
    static func grantsMessage(_ grants: GrantSet, once: [(identity: ClientIdentity, session: SessionAuthorization)],
                              rules: PolicyRules, at now: Moment) -> ServerMessage.Grants {
        func target(_ s: GrantSubject) -> GrantTarget {
            switch s {
            case let .executable(e, user): return .executable(e, user: user)
            case let .unit(u, user): return .unit(u, user: user)
            case .user(let u): return .user(u)
            }
        }
        func time(_ unix: Double) -> UTCTime { UTCTime(unixSeconds: unix) }
        // An expired grant no longer applies (the policy skips it): not listed either, though it stays in the
        // store until the next change (a new user found `grants` listing them, with no mark).
        let live = { (expires: Double?) in expires.map { $0 > now.wall } ?? true }
        return ServerMessage.Grants(
            persistent: grants.persistent.filter { live($0.expires) }.map { g in
                var effective: ServerMessage.Grants.Effective?
                if g.allowed {
                    let effect = rules.effect(ofGranting: g.accuracy, kind: g.whenInUse ? .whenInUse : .persistent, to: g.subject,
                                              userAliases: aliases(of: user(of: target(g.subject))))
                    if effect.accuracy != g.accuracy { effective = .init(accuracy: effect.accuracy, reason: effect.reason) }
                }
                return ServerMessage.Grants.Stored(subject: target(g.subject), allowed: g.allowed, accuracy: g.accuracy,
                                                   created: time(g.created), expires: g.expires.map(time), decidedBy: g.decidedBy,
                                                   whenInUse: g.whenInUse, whileRunning: g.whileRunning, effective: effective)
            },
            preapproved: grants.preapprovals.filter { live($0.expires) }.map { p in
                ServerMessage.Grants.Preapproved(subject: target(p.subject), accuracy: p.accuracy, created: time(p.created),
                                                 expires: p.expires.map(time), standing: p.standing, decidedBy: p.decidedBy)
            },
            once: once.compactMap { client in
                guard let grant = client.session.once, grant.holds(at: now) else { return nil }
                // When it ends as the wall clock reads now: the lifetime runs on the monotonic clock.
                let ends = now.wall + (grant.ends - now.monotonic).inSeconds
                return ServerMessage.Grants.OneTime(
                    pid: Int(client.identity.pid), uid: Int(client.identity.uid), executable: client.identity.program,
                    unit: client.identity.unit ?? client.identity.userUnit,
                    accuracy: client.session.temporaryFullAccuracy != nil ? .full : grant.accuracy,
                    granted: time(grant.granted), expires: time(ends), identified: client.identity.strength.description)
            })
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
