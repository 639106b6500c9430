import LocationPolicy
import Testing

/// When In Use vs Always (issue 14), from Core Location's documented behaviour: a When-In-Use app gets
/// locations only while it is in use — here, while its user has an active login session (logind's
/// "active": a session in the foreground) — and Always whether or not; Always is asked for on top of
/// When In Use, and declining the upgrade leaves When In Use. Stores written before keep meaning Always.
@Suite("When In Use and Always")
struct WhenInUseTests {
    static let alice = ClientIdentity(pid: 100, uid: 1000, gid: 1000, user: "alice", groups: ["alice"], executable: "/usr/bin/map")
    static let now = 1_800_000_000.0
    /// `now` on both clocks (one-time grants last on the monotonic one).
    static let time = PolicyTime(monotonic: .now, wall: now)

    static func rules(_ access: AccessRule = .ask, usage: UsageTexts = UsageTexts()) -> PolicyRules {
        var d = PolicyDefaults()
        d.access = access
        d.accuracy = .full
        let rule = ClientRule(name: "map", executable: "/usr/bin/map", access: access, accuracy: .full, usage: usage)
        return PolicyRules(defaults: d, clients: [rule])
    }

    static func grant(whenInUse: Bool) -> GrantSet {
        GrantSet(persistent: [PersistentGrant(subject: .executable("/usr/bin/map", user: "1000"), allowed: true, accuracy: .full,
                                              created: now, decidedBy: "agent root (uid 0)", whenInUse: whenInUse)])
    }

    @Test("a stored grant × the user's session: When In Use sends only while active, Always always", arguments: [
        (true, true, AuthorizationStatus.authorizedWhenInUse, AccuracyAuthorization.full as AccuracyAuthorization?, true),
        (true, false, .authorizedWhenInUse, nil, false),
        (false, true, .authorizedAlways, .full, true),
        (false, false, .authorizedAlways, .full, true),
    ])
    func statusBySession(whenInUse: Bool, active: Bool, status: AuthorizationStatus, accuracy: AccuracyAuthorization?, inUse: Bool) {
        let state = Policy.state(Self.alice, session: .init(), rules: Self.rules(), grants: Self.grant(whenInUse: whenInUse), now: Self.time,
                                 userInUse: active)
        #expect(state.status == status && state.accuracy == accuracy && state.inUse == inUse, "\(state)")
        #expect(state.status.isAuthorized)
    }

    @Test("switching: the session goes inactive and comes back; nothing is sent in between, and the status stays")
    func switching() {
        let grants = Self.grant(whenInUse: true)
        let seen = [true, false, false, true].map {
            Policy.state(Self.alice, session: .init(), rules: Self.rules(), grants: grants, now: Self.time, userInUse: $0)
        }
        #expect(seen.map(\.accuracy) == [.full, nil, nil, .full])
        #expect(seen.allSatisfy { $0.status == .authorizedWhenInUse })
        #expect(seen[1].reason.contains("no active login session"))
    }

    @Test("a grant from a store written before When In Use is Always, in use or not")
    func previousStoreMeansAlways() {
        let old = PersistentGrant(subject: .executable("/usr/bin/map"), allowed: true, accuracy: .full, created: Self.now, decidedBy: "agent")
        #expect(!old.whenInUse)
        let state = Policy.state(Self.alice, session: .init(), rules: Self.rules(), grants: GrantSet(persistent: [old]), now: Self.time,
                                 userInUse: false)
        #expect(state.status == .authorizedPersistent && state.status == .authorizedAlways && state.accuracy == .full)
    }

    @Test("asking again: When In Use is kept; Always on top of it goes to the agent as an upgrade with usage.always", arguments: [
        (AuthorizationKind.whenInUse, AccessRule.ask, "authorized"),
        (.once, .ask, "authorized"),
        (.always, .ask, "upgrade"),
        (.always, .once, "authorized"),  // a rule, not the agent, decides: nothing to ask
    ])
    func askingAgain(kind: AuthorizationKind, access: AccessRule, expected: String) {
        let usage = UsageTexts(whenInUse: "Shows where you are.", always: "Records your trips in the background.")
        let decision = Policy.decide(.authorize(kind, .full), identity: Self.alice, session: .init(), rules: Self.rules(access, usage: usage),
                                     grants: Self.grant(whenInUse: true), now: Self.time)
        switch decision {
        case .authorized(let state): #expect(expected == "authorized" && state.status == .authorizedWhenInUse)
        case .ask(let question):
            #expect(expected == "upgrade")
            #expect(question == AgentQuestion(subject: .authorization(.always), accuracy: .full, purpose: "Records your trips in the background.",
                                              upgrade: true))
        default: Issue.record("\(decision)")
        }
    }

    @Test("a client with no grant asking When In Use is asked about with usage.when-in-use, not as an upgrade")
    func firstAsk() {
        let usage = UsageTexts(whenInUse: "Shows where you are.", always: "Records your trips in the background.")
        let decision = Policy.decide(.authorize(.whenInUse, .full), identity: Self.alice, session: .init(), rules: Self.rules(usage: usage),
                                     grants: GrantSet(), now: Self.time)
        #expect(decision == .ask(AgentQuestion(subject: .authorization(.whenInUse), accuracy: .full, purpose: "Shows where you are.")))
    }

    @Test("Always asked before any answer is one question: allow always stores Always, allow once gives this connection only")
    func alwaysIsOneQuestion() throws {
        // Core Location shows the When In Use prompt first and the upgrade later: two prompts for one request,
        // and a second left unanswered kept the program on When In Use, with nothing on a box nobody logs in
        // to (issue 33). Here the person sees Always asked, with usage.always, once.
        let usage = UsageTexts(whenInUse: "Shows where you are.", always: "Records your trips in the background.")
        let rules = Self.rules(usage: usage)
        let first = Policy.decide(.authorize(.always, .full), identity: Self.alice, session: .init(), rules: rules, grants: GrantSet(), now: Self.time)
        let question = AgentQuestion(subject: .authorization(.always), accuracy: .full, purpose: "Records your trips in the background.")
        #expect(first == .ask(question))
        #expect(question.remembers == .persistent)
        let stored = try #require(Policy.apply(.allowAlways(nil), to: question, identity: Self.alice, session: .init(), now: Self.time,
                                               onceLifetime: 3600, decidedBy: "agent root (uid 0)").store)
        #expect(!stored.whenInUse && stored.allowed && stored.accuracy == .full)
        let grants = GrantSet(persistent: [stored])
        #expect(Policy.state(Self.alice, session: .init(), rules: rules, grants: grants, now: Self.time, userInUse: false).status == .authorizedPersistent)
        // Allow once: this connection only, nothing stored.
        let once = Policy.apply(.allowOnce(nil), to: question, identity: Self.alice, session: .init(), now: Self.time,
                                onceLifetime: 3600, decidedBy: "agent root (uid 0)")
        #expect(once.store == nil && once.session.once != nil)
        // Asked for When In Use itself: its question remembers When In Use.
        let whenInUse = Policy.decide(.authorize(.whenInUse, .full), identity: Self.alice, session: .init(), rules: rules, grants: GrantSet(),
                                      now: Self.time)
        #expect(whenInUse == .ask(AgentQuestion(subject: .authorization(.whenInUse), accuracy: .full, purpose: "Shows where you are.")))
        let once2 = AgentQuestion(subject: .authorization(.once), accuracy: .full, purpose: nil)
        #expect(once2.remembers == .whenInUse)
    }

    @Test("When In Use outside every login session applies while it runs when granted so; a grant made in a session keeps following it")
    func outsideLoginSessions() throws {
        let rules = Self.rules()
        var service = Self.alice
        service.outsideLoginSessions = true
        // The agent was asked about the program outside every login session (a system service, a program on a
        // box nobody logs in to) and shown "whenever it runs": the grant says so.
        let asked = Policy.decide(.authorize(.whenInUse, .full), identity: service, session: .init(), rules: rules, grants: GrantSet(),
                                  now: Self.time)
        guard case .ask(let question) = asked else { Issue.record("\(asked)"); return }
        #expect(question.inUseWhileRunning)
        let stored = try #require(Policy.apply(.allowAlways(nil), to: question, identity: service, session: .init(), now: Self.time,
                                               onceLifetime: 3600, decidedBy: "agent root (uid 0)").store)
        #expect(stored.whenInUse && stored.whileRunning)
        let running = Policy.state(service, session: .init(), rules: rules, grants: GrantSet(persistent: [stored]), now: Self.time,
                                   userInUse: false)
        #expect(running.status == .authorizedWhenInUse && running.accuracy == .full && running.inUse)
        #expect(running.reason.hasSuffix("it runs outside any login session: in use while it runs"), "\(running.reason)")
        // The same program in alice's session follows her session, whatever the grant.
        let away = Policy.state(Self.alice, session: .init(), rules: rules, grants: GrantSet(persistent: [stored]), now: Self.time,
                                userInUse: false)
        #expect(away.accuracy == nil && !away.inUse)
        #expect(away.reason.hasPrefix("When In Use, and alice has no active login session"), "\(away.reason)")

        // Asked about in alice's session ("while alice has an active login session"): the same program outside
        // every session — her cron or at job — follows her session too, not "while it runs" (found by a helper
        // attacking the daemon: a job got When In Use around the clock).
        let inSession = Policy.decide(.authorize(.whenInUse, .full), identity: Self.alice, session: .init(), rules: rules, grants: GrantSet(),
                                      now: Self.time)
        guard case .ask(let sessionQuestion) = inSession else { Issue.record("\(inSession)"); return }
        #expect(!sessionQuestion.inUseWhileRunning)
        let sessionGrant = try #require(Policy.apply(.allowAlways(nil), to: sessionQuestion, identity: Self.alice, session: .init(),
                                                     now: Self.time, onceLifetime: 3600, decidedBy: "agent root (uid 0)").store)
        #expect(sessionGrant.whenInUse && !sessionGrant.whileRunning)
        let job = Policy.state(service, session: .init(), rules: rules, grants: GrantSet(persistent: [sessionGrant]), now: Self.time,
                               userInUse: false)
        #expect(job.accuracy == nil && !job.inUse, "\(job)")
        let jobWhileAliceIsThere = Policy.state(service, session: .init(), rules: rules, grants: GrantSet(persistent: [sessionGrant]),
                                                now: Self.time, userInUse: true)
        #expect(jobWhileAliceIsThere.accuracy == .full)
    }

    @Test("the agent's answers: allow always to When In Use stores When In Use; to the upgrade, Always; refusing the upgrade keeps When In Use",
          arguments: [
        (false, AgentAnswer.allowAlways(nil), "whenInUse"),
        (true, .allowAlways(nil), "always"),
        (true, .deny, "nothing"),
        (true, .allowOnce(nil), "nothing"),
        (true, .allowOnceStanding(nil), "nothing"),
    ])
    func answers(upgrade: Bool, answer: AgentAnswer, stored: String) {
        let question = AgentQuestion(subject: .authorization(upgrade ? .always : .whenInUse), accuracy: .full, purpose: nil, upgrade: upgrade)
        let outcome = Policy.apply(answer, to: question, identity: Self.alice, session: .init(), now: Self.time, onceLifetime: 3600,
                                   decidedBy: "agent root (uid 0)")
        switch stored {
        case "nothing":
            #expect(outcome.store == nil && outcome.standing == nil && outcome.session == SessionAuthorization())
        default:
            #expect(outcome.store == PersistentGrant(subject: .executable("/usr/bin/map", user: "1000"), allowed: true, accuracy: .full,
                                                     created: Self.now, decidedBy: "agent root (uid 0)", whenInUse: stored == "whenInUse"))
        }
    }

    @Test("'allow always' remembers When In Use for every question but Always's: one-time access included")
    func allowAlwaysToOnce() throws {
        // Found by a helper attacking the daemon: "allow always" to a one-time question stored Always,
        // with no upgrade question; Always comes only on top of When In Use.
        for (kind, whenInUse) in [(AuthorizationKind.once, true), (.whenInUse, true), (.persistent, false)] {
            let question = AgentQuestion(subject: .authorization(kind), accuracy: .full, purpose: nil, upgrade: false)
            let stored = try #require(Policy.apply(.allowAlways(nil), to: question, identity: Self.alice, session: .init(), now: Self.time,
                                                   onceLifetime: 3600, decidedBy: "agent root (uid 0)").store)
            #expect(stored.whenInUse == whenInUse, "\(kind)")
        }
    }

    @Test("'always' and 'persistent' are one kind, Always; 'whenInUse' is its own")
    func spellings() {
        #expect(AuthorizationKind(spelling: "always") == .persistent && AuthorizationKind.always == .persistent)
        #expect(AuthorizationKind(spelling: "persistent") == .persistent)
        #expect(AuthorizationKind(spelling: "whenInUse") == .whenInUse)
        #expect(AuthorizationKind(spelling: "when-in-use") == nil)
    }
}
