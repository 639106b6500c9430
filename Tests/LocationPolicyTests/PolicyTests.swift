import LocationCore
import LocationPolicy
import Testing

/// `Policy.decide` over rules × requests × events; each expected outcome is written from issue 5's text
/// (and ARCHITECTURE.md's policy model), not read off the code.
@Suite("Policy decisions")
struct PolicyTests {
    static let navit = ClientIdentity(pid: 100, uid: 1000, gid: 1000, user: "alice", groups: ["alice", "staff"],
                                      executable: "/usr/bin/navit", unit: "navit.service")
    static let stranger = ClientIdentity(pid: 200, uid: 1001, gid: 1001, user: "bob", groups: ["bob"], executable: "/usr/bin/curl")
    static let root = ClientIdentity(pid: 1, uid: 0, gid: 0, user: "root", groups: ["root"], executable: "/usr/bin/sh")
    static let now = PolicyTime(monotonic: .now, wall: 1_800_000_000)

    static func rules(default access: AccessRule = .ask, accuracy: AccuracyAuthorization = .reduced, _ clients: [ClientRule] = []) -> PolicyRules {
        var d = PolicyDefaults()
        d.access = access
        d.accuracy = accuracy
        return PolicyRules(defaults: d, clients: clients)
    }

    static let navRule = ClientRule(name: "navigation", executable: "/usr/bin/navit", access: .always, accuracy: .reduced,
                                    purposes: ["TurnByTurn": "Turn-by-turn directions need your exact position."])

    // MARK: Statuses

    @Test("out of the box: ask, reduced — a new client is notDetermined and an ask goes to the agent at reduced accuracy")
    func defaults() {
        let r = PolicyRules()
        #expect(r.defaults.access == .ask && r.defaults.accuracy == .reduced)
        let s = Policy.state(Self.stranger, session: .init(), rules: r, grants: .init(), now: Self.now)
        #expect(s.status == .notDetermined && s.accuracy == nil)
        let d = Policy.decide(.authorize(.once, .full), identity: Self.stranger, session: .init(), rules: r, grants: .init(), now: Self.now)
        #expect(d == .ask(AgentQuestion(subject: .authorization(.once), accuracy: .reduced, purpose: nil)))
    }

    @Test("root is not exempt unless a rule says so")
    func rootNotExempt() {
        let d = Policy.decide(.authorize(.persistent, .full), identity: Self.root, session: .init(), rules: Self.rules(), grants: .init(), now: Self.now)
        guard case .ask = d else { Issue.record("root got \(d)"); return }
        let r = Self.rules([ClientRule(name: "root", user: "root", access: .always, accuracy: .full)])
        #expect(Policy.state(Self.root, session: .init(), rules: r, grants: .init(), now: Self.now).status == .authorizedPersistent)
    }

    @Test("rule access × request kind", arguments: [
        (AccessRule.deny, AuthorizationKind.once, "refuse:restricted"),
        (.deny, .persistent, "refuse:restricted"),
        (.ask, .once, "ask"),
        (.ask, .persistent, "ask"),
        (.once, .once, "once"),
        (.once, .persistent, "once"),
        (.always, .once, "authorized:authorizedPersistent"),
        (.always, .persistent, "authorized:authorizedPersistent"),
    ])
    func accessTable(access: AccessRule, kind: AuthorizationKind, expected: String) {
        let r = Self.rules(default: access, accuracy: .full)
        let d = Policy.decide(.authorize(kind, .full), identity: Self.stranger, session: .init(), rules: r, grants: .init(), now: Self.now)
        #expect(Self.summary(d) == expected)
    }

    static func summary(_ d: PolicyDecision) -> String {
        switch d {
        case .authorized(let s): return "authorized:\(s.status.rawValue)"
        case .grantOnce: return "once"
        case .ask: return "ask"
        case .refuse(let status, _): return "refuse:\(status.rawValue)"
        case .invalid: return "invalid"
        }
    }

    @Test("the most specific matching rule wins; on a tie the first")
    func specificity() {
        let general = ClientRule(name: "staff", group: "staff", access: .deny, accuracy: .reduced)
        let specific = ClientRule(name: "navit-alice", executable: "/usr/bin/navit", user: "alice", access: .always, accuracy: .full)
        let r = Self.rules([general, specific])
        #expect(r.rule(for: Self.navit)?.name == "navit-alice")
        let tieA = ClientRule(name: "a", user: "alice", access: .deny, accuracy: .full)
        let tieB = ClientRule(name: "b", group: "staff", access: .always, accuracy: .full)
        #expect(Self.rules([tieA, tieB]).rule(for: Self.navit)?.name == "a")
        // A rule with a key that does not match does not apply at all.
        let other = ClientRule(name: "x", executable: "/usr/bin/navit", unit: "other.service", access: .always, accuracy: .full)
        #expect(Self.rules([other]).rule(for: Self.navit) == nil)
    }

    @Test("the accuracy asked for is capped by the rule")
    func accuracyCap() {
        let r = Self.rules(default: .once, accuracy: .reduced)
        #expect(Policy.decide(.authorize(.once, .full), identity: Self.stranger, session: .init(), rules: r, grants: .init(), now: Self.now)
            == .grantOnce(.reduced, usingPreapproval: nil))
    }

    // MARK: Events

    @Test("one-time grant: valid for its connection, ends on disconnect and after once-lifetime")
    func oneTimeLifecycle() {
        let r = Self.rules()
        let q = AgentQuestion(subject: .authorization(.once), accuracy: .reduced, purpose: nil)
        let outcome = Policy.apply(.allowOnce(nil), to: q, identity: Self.stranger, session: .init(), now: Self.now, onceLifetime: 3600, decidedBy: "agent")
        #expect(outcome.store == nil)  // never stored
        #expect(Policy.state(Self.stranger, session: outcome.session, rules: r, grants: .init(), now: Self.now + 10).status == .authorizedOnce)
        // Disconnect: the new connection has a fresh session.
        #expect(Policy.state(Self.stranger, session: .init(), rules: r, grants: .init(), now: Self.now + 20).status == .notDetermined)
        // Lifetime.
        #expect(Policy.state(Self.stranger, session: outcome.session, rules: r, grants: .init(), now: Self.now + 3601).status == .notDetermined)
    }

    @Test("persistent grant: stored, survives a restart (a new session), revoke ends it, expiry ends it")
    func persistentLifecycle() {
        let r = Self.rules()
        let q = AgentQuestion(subject: .authorization(.persistent), accuracy: .reduced, purpose: nil)
        let outcome = Policy.apply(.allowAlways(nil), to: q, identity: Self.navit, session: .init(), now: Self.now, onceLifetime: 3600, decidedBy: "agent")
        var grants = GrantSet()
        grants.persistent.append(try! #require(outcome.store))
        #expect(outcome.store?.subject == .executable("/usr/bin/navit", user: "1000"))
        #expect(Policy.state(Self.navit, session: .init(), rules: r, grants: grants, now: Self.now + 86400).status == .authorizedPersistent)
        grants.persistent.removeAll()  // revoke
        #expect(Policy.state(Self.navit, session: .init(), rules: r, grants: grants, now: Self.now).status == .notDetermined)
        var expiring = try! #require(outcome.store)
        expiring.expires = Self.now.wall + 60
        #expect(Policy.state(Self.navit, session: .init(), rules: r, grants: GrantSet(persistent: [expiring]), now: Self.now + 61).status == .notDetermined)
    }

    @Test("a stored deny: the agent is not asked again")
    func storedDeny() {
        let q = AgentQuestion(subject: .authorization(.once), accuracy: .reduced, purpose: nil)
        let outcome = Policy.apply(.deny, to: q, identity: Self.stranger, session: .init(), now: Self.now, onceLifetime: 3600, decidedBy: "agent")
        let grants = GrantSet(persistent: [try! #require(outcome.store)])
        #expect(Policy.state(Self.stranger, session: .init(), rules: Self.rules(), grants: grants, now: Self.now).status == .denied)
        let d = Policy.decide(.authorize(.once, .reduced), identity: Self.stranger, session: .init(), rules: Self.rules(), grants: grants, now: Self.now)
        #expect(Self.summary(d) == "refuse:denied")
    }

    @Test("a deny rule is restricted even with a stored grant; a rule change (reload) applies at once")
    func restrictedBeatsGrants() {
        let grant = PersistentGrant(subject: .executable("/usr/bin/navit"), allowed: true, accuracy: .full, created: Self.now.wall, decidedBy: "agent")
        let deny = Self.rules([ClientRule(name: "no-navit", executable: "/usr/bin/navit", access: .deny, accuracy: .full)])
        #expect(Policy.state(Self.navit, session: .init(), rules: deny, grants: GrantSet(persistent: [grant]), now: Self.now).status == .restricted)
        #expect(Policy.state(Self.navit, session: .init(), rules: Self.rules(), grants: GrantSet(persistent: [grant]), now: Self.now).status == .authorizedPersistent)
    }

    @Test("an administrator's pre-approval grants the next one-time request without asking")
    func preapproval() {
        let grants = GrantSet(preapprovals: [Preapproval(subject: .executable("/usr/bin/curl"), accuracy: .full, created: Self.now.wall)])
        let d = Policy.decide(.authorize(.once, .full), identity: Self.stranger, session: .init(), rules: Self.rules(default: .ask, accuracy: .full), grants: grants, now: Self.now)
        #expect(d == .grantOnce(.full, usingPreapproval: 0))
    }

    @Test("agent answers with lowered accuracy")
    func loweredAccuracy() {
        let q = AgentQuestion(subject: .authorization(.persistent), accuracy: .full, purpose: nil)
        let o = Policy.apply(.allowAlways(.reduced), to: q, identity: Self.navit, session: .init(), now: Self.now, onceLifetime: 3600, decidedBy: "agent")
        #expect(o.store?.accuracy == .reduced)
    }

    // MARK: Persistent decisions are per user and program

    /// Two users running the same interpreter (security review: an agent's answer for one user's
    /// python used to be stored for the executable alone, so it decided for every user's python).
    static let bobPython = ClientIdentity(pid: 300, uid: 1000, gid: 1000, user: "bob", groups: ["bob"], executable: "/usr/bin/python3")
    static let malloryPython = ClientIdentity(pid: 301, uid: 1002, gid: 1002, user: "mallory", groups: ["mallory"],
                                              executable: "/usr/bin/python3")
    static let alicePython = ClientIdentity(pid: 302, uid: 1001, gid: 1001, user: "alice", groups: ["alice"], executable: "/usr/bin/python3")
    static let askPersistent = AgentQuestion(subject: .authorization(.persistent), accuracy: .full, purpose: nil)

    @Test("allow always for bob's python authorizes bob's python, not mallory's (same executable, another uid)")
    func allowAlwaysIsPerUser() throws {
        let r = Self.rules(default: .ask, accuracy: .full)
        let outcome = Policy.apply(.allowAlways(nil), to: Self.askPersistent, identity: Self.bobPython, session: .init(), now: Self.now,
                                   onceLifetime: 3600, decidedBy: "agent root (uid 0)")
        let stored = try #require(outcome.store)
        #expect(stored.subject == .executable("/usr/bin/python3", user: "1000"))
        let grants = GrantSet(persistent: [stored])
        let bob = Policy.state(Self.bobPython, session: .init(), rules: r, grants: grants, now: Self.now + 86400)
        #expect(bob == AuthorizationState(status: .authorizedPersistent, accuracy: .full, reason: "persistent grant by agent root (uid 0)"))
        // A later session of bob's python (a new pid, after a restart) too.
        var bobLater = Self.bobPython
        bobLater.pid = 4000
        #expect(Policy.state(bobLater, session: .init(), rules: r, grants: grants, now: Self.now + 86400).status == .authorizedPersistent)
        // Mallory's python is not authorized: her request goes to the agent.
        let mallory = Policy.state(Self.malloryPython, session: .init(), rules: r, grants: grants, now: Self.now + 1)
        #expect(mallory == AuthorizationState(status: .notDetermined, accuracy: nil, reason: "not authorized yet"))
        let d = Policy.decide(.authorize(.persistent, .full), identity: Self.malloryPython, session: .init(), rules: r, grants: grants,
                              now: Self.now + 1)
        // Always asked before any answer is one question, for Always (issue 33: not When In Use, then the upgrade).
        #expect(d == .ask(AgentQuestion(subject: .authorization(.persistent), accuracy: .full, purpose: nil)))
    }

    @Test("a deny for mallory's python refuses her only: bob keeps his grant, alice's always rule still applies")
    func denyIsPerUser() throws {
        let aliceRule = ClientRule(name: "alice", user: "alice", access: .always, accuracy: .full)
        let r = Self.rules(default: .ask, accuracy: .full, [aliceRule])
        let bobAllowed = try #require(Policy.apply(.allowAlways(nil), to: Self.askPersistent, identity: Self.bobPython, session: .init(),
                                                   now: Self.now, onceLifetime: 3600, decidedBy: "agent").store)
        // Mallory's denial is the newer decision: before, as the newest for the executable, it won for everyone.
        let malloryDenied = try #require(Policy.apply(.deny, to: Self.askPersistent, identity: Self.malloryPython, session: .init(),
                                                      now: Self.now + 60, onceLifetime: 3600, decidedBy: "agent").store)
        #expect(malloryDenied.subject == .executable("/usr/bin/python3", user: "1002"))
        #expect(!malloryDenied.allowed)
        let grants = GrantSet(persistent: [bobAllowed, malloryDenied])
        let now = Self.now + 120
        #expect(Policy.state(Self.malloryPython, session: .init(), rules: r, grants: grants, now: now).status == .denied)
        let again = Policy.decide(.authorize(.persistent, .full), identity: Self.malloryPython, session: .init(), rules: r, grants: grants, now: now)
        #expect(again == .refuse(.denied, reason: "denied by agent; not asked again"))
        #expect(Policy.state(Self.bobPython, session: .init(), rules: r, grants: grants, now: now)
                == AuthorizationState(status: .authorizedPersistent, accuracy: .full, reason: "persistent grant by agent"))
        #expect(Policy.state(Self.alicePython, session: .init(), rules: r, grants: grants, now: now)
                == AuthorizationState(status: .authorizedPersistent, accuracy: .full, reason: "rule [client alice] allows always"))
    }

    @Test("a decision for a client without an executable is keyed on its unit and uid, else on the uid alone")
    func decisionSubjectFallbacks() {
        let unitOnly = ClientIdentity(pid: 400, uid: 1000, gid: 1000, user: "bob", unit: "weather.service")
        #expect(GrantSubject.decision(for: unitOnly) == .unit("weather.service", user: "1000"))
        let bare = ClientIdentity(pid: 401, uid: 1000, gid: 1000, user: "bob")
        #expect(GrantSubject.decision(for: bare) == .user("1000"))
        var otherUsersUnit = unitOnly
        otherUsersUnit.uid = 1002
        otherUsersUnit.user = "mallory"
        #expect(!GrantSubject.decision(for: unitOnly).matches(otherUsersUnit))
        #expect(GrantSubject.decision(for: unitOnly).matches(unitOnly))
    }

    @Test("subjects without a user — an administrator's choice, or a store written before — match every user, as before")
    func programWithoutUserMatchesEveryone() {
        let legacy = PersistentGrant(subject: .executable("/usr/bin/python3"), allowed: false, accuracy: .reduced, created: Self.now.wall,
                                     decidedBy: "agent")
        let grants = GrantSet(persistent: [legacy])
        for client in [Self.bobPython, Self.malloryPython] {
            #expect(Policy.state(client, session: .init(), rules: Self.rules(), grants: grants, now: Self.now).status == .denied)
        }
        // An administrator names bob with the program: only bob's python (by name or by uid).
        #expect(GrantSubject.executable("/usr/bin/python3", user: "bob").matches(Self.bobPython))
        #expect(GrantSubject.executable("/usr/bin/python3", user: "1000").matches(Self.bobPython))
        #expect(!GrantSubject.executable("/usr/bin/python3", user: "bob").matches(Self.malloryPython))
    }

    @Test("revoking covers: a program alone takes its grants for every user; a program of a user only that user's; a user all of theirs",
          arguments: [
              (GrantSubject.executable("/usr/bin/python3"), GrantSubject.executable("/usr/bin/python3", user: "1000"), true),
              (.executable("/usr/bin/python3"), .executable("/usr/bin/python3"), true),
              (.executable("/usr/bin/python3", user: "1000"), .executable("/usr/bin/python3", user: "1000"), true),
              (.executable("/usr/bin/python3", user: "1000"), .executable("/usr/bin/python3", user: "1002"), false),
              (.executable("/usr/bin/python3", user: "1000"), .executable("/usr/bin/python3"), false),
              (.executable("/usr/bin/python3"), .unit("python3", user: "1000"), false),
              (.unit("navit.service"), .unit("navit.service", user: "alice"), true),
              (.user("1000"), .executable("/usr/bin/python3", user: "1000"), true),
              (.user("1000"), .unit("navit.service", user: "1000"), true),
              (.user("1000"), .executable("/usr/bin/python3"), false),
              (.user("1000"), .executable("/usr/bin/python3", user: "1002"), false),
          ])
    func revokeCovers(target: GrantSubject, stored: GrantSubject, covered: Bool) {
        #expect(target.covers(stored) == covered)
    }

    // MARK: Temporary full accuracy

    @Test("temporary full accuracy: declared key asks the agent with its text; undeclared key is an error; granted for the connection")
    func temporaryFull() {
        let r = Self.rules([Self.navRule])
        #expect(Policy.state(Self.navit, session: .init(), rules: r, grants: .init(), now: Self.now).accuracy == .reduced)
        let d = Policy.decide(.temporaryFullAccuracy(purposeKey: "TurnByTurn"), identity: Self.navit, session: .init(), rules: r, grants: .init(), now: Self.now)
        let question = AgentQuestion(subject: .temporaryFullAccuracy(purposeKey: "TurnByTurn"), accuracy: .full,
                                     purpose: "Turn-by-turn directions need your exact position.")
        #expect(d == .ask(question))
        let undeclared = Policy.decide(.temporaryFullAccuracy(purposeKey: "Ads"), identity: Self.navit, session: .init(), rules: r, grants: .init(), now: Self.now)
        #expect(Self.summary(undeclared) == "invalid")
        let o = Policy.apply(.allowOnce(nil), to: question, identity: Self.navit, session: .init(), now: Self.now, onceLifetime: 3600, decidedBy: "agent")
        #expect(o.store == nil)
        #expect(Policy.state(Self.navit, session: o.session, rules: r, grants: .init(), now: Self.now).accuracy == .full)
        #expect(Policy.state(Self.navit, session: .init(), rules: r, grants: .init(), now: Self.now).accuracy == .reduced)
        // Without authorization first, it is refused.
        let unauthorized = Policy.decide(.temporaryFullAccuracy(purposeKey: "TurnByTurn"), identity: Self.stranger, session: .init(),
                                         rules: Self.rules(), grants: .init(), now: Self.now)
        #expect(Self.summary(unauthorized) == "refuse:notDetermined")
    }

    @Test("temporary full accuracy answered at reduced accuracy grants no upgrade (a new user got full that way)",
          arguments: [AgentAnswer.allowOnce(.reduced), .allowAlways(.reduced), .deny])
    func temporaryFullLowered(answer: AgentAnswer) {
        let r = Self.rules([Self.navRule])
        let question = AgentQuestion(subject: .temporaryFullAccuracy(purposeKey: "TurnByTurn"), accuracy: .full,
                                     purpose: "Turn-by-turn directions need your exact position.")
        let o = Policy.apply(answer, to: question, identity: Self.navit, session: .init(), now: Self.now, onceLifetime: 3600, decidedBy: "agent")
        #expect(o.store == nil)
        #expect(o.session.temporaryFullAccuracy == nil)
        #expect(Policy.state(Self.navit, session: o.session, rules: r, grants: .init(), now: Self.now).accuracy == .reduced)
    }
}
