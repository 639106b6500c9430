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
