import LocationCore
import LocationPolicy
import Testing

/// Issue 12, "Wrong results a new user hit": the accuracy a client asks for is a ceiling. The granted
/// accuracy is the lesser of what the client asked (its last AUTHORIZE) and what the policy allows,
/// whatever authorizes it — a rule, a stored grant, a one-time grant, temporary full accuracy.
@Suite("Requested accuracy is a ceiling")
struct RequestedAccuracyTests {
    static let client = ClientIdentity(pid: 300, uid: 1000, gid: 1000, user: "alice", groups: ["alice"], executable: "/usr/bin/navit")
    static let now = PolicyTime(monotonic: .now, wall: 1_800_000_000)

    /// How the client came to be authorized.
    enum Source: String, CaseIterable, Sendable {
        case alwaysRule, storedGrant, oneTimeGrant
    }

    static func rules(access: AccessRule, accuracy: AccuracyAuthorization) -> PolicyRules {
        var defaults = PolicyDefaults()
        defaults.access = access
        defaults.accuracy = accuracy
        return PolicyRules(defaults: defaults, clients: [
            ClientRule(name: "nav", executable: "/usr/bin/navit", access: access, accuracy: accuracy, purposes: ["Nav": "Directions."]),
        ])
    }

    /// Rules, grants and session for `source`, everything allowing `allowed` accuracy.
    static func setting(_ source: Source, allowed: AccuracyAuthorization) -> (PolicyRules, GrantSet, SessionAuthorization) {
        switch source {
        case .alwaysRule:
            return (rules(access: .always, accuracy: allowed), GrantSet(), SessionAuthorization())
        case .storedGrant:
            let grant = PersistentGrant(subject: .executable("/usr/bin/navit"), allowed: true, accuracy: allowed, created: now.wall - 10,
                                        decidedBy: "administrator root (uid 0)")
            return (rules(access: .ask, accuracy: .full), GrantSet(persistent: [grant]), SessionAuthorization())
        case .oneTimeGrant:
            let once = SessionGrant(accuracy: allowed, at: now + -10, lifetime: 3610)
            return (rules(access: .ask, accuracy: .full), GrantSet(), SessionAuthorization(once: once))
        }
    }

    @Test("AUTHORIZE's accuracy caps what the policy allows, in the reply and in the state WATCH and POLL use",
          arguments: Source.allCases, [
              (AccuracyAuthorization.full, AccuracyAuthorization.full, AccuracyAuthorization.full),
              (.full, .reduced, .reduced),
              (.reduced, .full, .reduced),
              (.reduced, .reduced, .reduced),
          ])
    func ceiling(source: Source, levels: (allowed: AccuracyAuthorization, requested: AccuracyAuthorization, granted: AccuracyAuthorization)) {
        let (rules, grants, session) = Self.setting(source, allowed: levels.allowed)
        let request = PolicyRequest.authorize(.once, levels.requested)
        let decision = Policy.decide(request, identity: Self.client, session: session, rules: rules, grants: grants, now: Self.now)
        guard case .authorized(let replied) = decision else {
            Issue.record("\(source): \(decision)")
            return
        }
        #expect(replied.accuracy == levels.granted, "\(source)")
        // The server keeps the session the request made; the state every later request sees.
        let kept = session.asking(request)
        let state = Policy.state(Self.client, session: kept, rules: rules, grants: grants, now: Self.now)
        #expect(state.accuracy == levels.granted, "\(source)")
        #expect(state == replied, "\(source): the reply and the state WATCH and POLL use agree")
        #expect(state.reason.hasSuffix("as the client asked") == (levels.allowed == .full && levels.requested == .reduced), "\(state.reason)")
    }

    @Test("a later AUTHORIZE changes the ceiling both ways, never above what the policy allows", arguments: Source.allCases)
    func laterRequestChangesIt(source: Source) {
        let (rules, grants, session) = Self.setting(source, allowed: .full)
        var kept = session
        for (requested, granted) in [(AccuracyAuthorization.reduced, AccuracyAuthorization.reduced), (.full, .full), (.reduced, .reduced)] {
            kept = kept.asking(.authorize(.once, requested))
            #expect(Policy.state(Self.client, session: kept, rules: rules, grants: grants, now: Self.now).accuracy == granted)
        }
    }

    @Test("a client that asked for reduced and then for temporary full accuracy gets full: FULLACCURACY asks for full")
    func fullAccuracyLiftsTheCeiling() {
        // Under a rule allowing full, nobody needs asking.
        let (rules, grants, session) = Self.setting(.alwaysRule, allowed: .full)
        let reduced = session.asking(.authorize(.once, .reduced))
        let decision = Policy.decide(.temporaryFullAccuracy(purposeKey: "Nav"), identity: Self.client, session: reduced, rules: rules,
                                     grants: grants, now: Self.now)
        guard case .authorized(let state) = decision else {
            Issue.record("\(decision)")
            return
        }
        #expect(state.accuracy == .full)
        // A temporary full-accuracy grant is still capped by a later AUTHORIZE for reduced.
        let (reducedRules, _, _) = Self.setting(.alwaysRule, allowed: .reduced)
        var temporary = SessionAuthorization(temporaryFullAccuracy: "Nav").asking(.temporaryFullAccuracy(purposeKey: "Nav"))
        #expect(Policy.state(Self.client, session: temporary, rules: reducedRules, grants: grants, now: Self.now).accuracy == .full)
        temporary = temporary.asking(.authorize(.once, .reduced))
        #expect(Policy.state(Self.client, session: temporary, rules: reducedRules, grants: grants, now: Self.now).accuracy == .reduced)
    }

    @Test("grants made on a request carry its accuracy: a once rule, an agent's question, a pre-approval",
          arguments: [AccuracyAuthorization.full, .reduced])
    func newGrantsCarryIt(requested: AccuracyAuthorization) {
        let once = Policy.decide(.authorize(.once, requested), identity: Self.client, session: .init(),
                                 rules: Self.rules(access: .once, accuracy: .full), grants: .init(), now: Self.now)
        #expect(once == .grantOnce(requested, usingPreapproval: nil))
        let ask = Policy.decide(.authorize(.persistent, requested), identity: Self.client, session: .init(),
                                rules: Self.rules(access: .ask, accuracy: .full), grants: .init(), now: Self.now)
        #expect(ask == .ask(AgentQuestion(subject: .authorization(.persistent), accuracy: requested, purpose: nil)))
        let preapproved = GrantSet(preapprovals: [Preapproval(subject: .executable("/usr/bin/navit"), accuracy: .full, created: Self.now.wall)])
        let used = Policy.decide(.authorize(.once, requested), identity: Self.client, session: .init(),
                                 rules: Self.rules(access: .ask, accuracy: .full), grants: preapproved, now: Self.now)
        #expect(used == .grantOnce(requested, usingPreapproval: 0))
    }
}
