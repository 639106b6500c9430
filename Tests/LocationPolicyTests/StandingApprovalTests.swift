import LocationPolicy
import Testing

/// The LocationButton's standing approval (issue 14): CoreLocationUI's `LocationButton` asks the user to
/// confirm on the first tap; once confirmed, every later tap gives the app one-time access without asking
/// again, and each grant still ends when the app stops using it. The expected outcomes are written from
/// that description, not read off the code.
@Suite("Standing approvals")
struct StandingApprovalTests {
    static let alicesMap = ClientIdentity(pid: 100, uid: 1000, gid: 1000, user: "alice", groups: ["alice"], executable: "/usr/bin/map")
    static let bobsMap = ClientIdentity(pid: 200, uid: 1001, gid: 1001, user: "bob", groups: ["bob"], executable: "/usr/bin/map")
    static let alicesCurl = ClientIdentity(pid: 300, uid: 1000, gid: 1000, user: "alice", groups: ["alice"], executable: "/usr/bin/curl")
    static let now = 1_800_000_000.0
    /// `now` on both clocks (one-time grants last on the monotonic one).
    static let time = PolicyTime(monotonic: .now, wall: now)
    static let lifetime = 3600.0

    static func rules(_ access: AccessRule = .ask, accuracy: AccuracyAuthorization = .full) -> PolicyRules {
        var d = PolicyDefaults()
        d.access = access
        d.accuracy = accuracy
        return PolicyRules(defaults: d)
    }

    /// What an agent's "allow once, and from now on without asking" for alice's map leaves in the store.
    static let approval = Preapproval(subject: .executable("/usr/bin/map", user: "1000"), accuracy: .full, created: now,
                                      standing: true, decidedBy: "agent root (uid 0)")

    @Test("the agent's answer grants the asking connection once, and stores a standing approval for that user's program only")
    func answerStoresApproval() {
        let question = AgentQuestion(subject: .authorization(.once), accuracy: .full, purpose: nil)
        let outcome = Policy.apply(.allowOnceStanding(nil), to: question, identity: Self.alicesMap, session: .init(), now: Self.time,
                                   onceLifetime: Self.lifetime, decidedBy: "agent root (uid 0)")
        #expect(outcome.session.once == SessionGrant(accuracy: .full, at: Self.time, lifetime: Self.lifetime))
        #expect(outcome.store == nil, "a standing approval is never a persistent grant")
        #expect(outcome.standing == Self.approval)
        let state = Policy.state(Self.alicesMap, session: outcome.session, rules: Self.rules(), grants: .init(), now: Self.time)
        #expect(state.status == .authorizedOnce && state.accuracy == .full && !state.standing, "this connection's grant came from asking")
    }

    @Test("lowering the accuracy in the answer lowers the approval too")
    func loweredAnswer() {
        let question = AgentQuestion(subject: .authorization(.once), accuracy: .full, purpose: nil)
        let outcome = Policy.apply(.allowOnceStanding(.reduced), to: question, identity: Self.alicesMap, session: .init(), now: Self.time,
                                   onceLifetime: Self.lifetime, decidedBy: "agent root (uid 0)")
        #expect(outcome.session.once?.accuracy == .reduced && outcome.standing?.accuracy == .reduced)
    }

    @Test("temporary full accuracy is for one connection: a standing answer to it stores nothing", arguments: [
        (AgentAnswer.allowOnceStanding(nil), "TurnByTurn" as String?),
        (.allowOnceStanding(.reduced), nil),
    ])
    func temporaryFullAccuracyAnswer(answer: AgentAnswer, upgraded: String?) {
        let question = AgentQuestion(subject: .temporaryFullAccuracy(purposeKey: "TurnByTurn"), accuracy: .full, purpose: "text")
        let outcome = Policy.apply(answer, to: question, identity: Self.alicesMap, session: .init(), now: Self.time,
                                   onceLifetime: Self.lifetime, decidedBy: "agent root (uid 0)")
        #expect(outcome.standing == nil && outcome.store == nil)
        #expect(outcome.session.temporaryFullAccuracy == upgraded)
    }

    /// Who asks for what later, under the approval: only the same user's program asking for one-time
    /// access gets it without a question; anyone else is asked, as before.
    @Test("a later connection under the approval", arguments: [
        (alicesMap, AuthorizationKind.once, "once"),
        (alicesMap, .persistent, "ask"),  // more than one-time access: the agent decides
        (bobsMap, .once, "ask"),  // another user's copy of the program
        (alicesCurl, .once, "ask"),  // another program of the same user
    ])
    func laterConnection(identity: ClientIdentity, kind: AuthorizationKind, expected: String) {
        let grants = GrantSet(preapprovals: [Self.approval])
        let decision = Policy.decide(.authorize(kind, .full), identity: identity, session: .init(), rules: Self.rules(), grants: grants,
                                     now: Self.time + 60)
        switch decision {
        case let .grantOnce(accuracy, index): #expect(expected == "once" && accuracy == .full && index == 0)
        case .ask: #expect(expected == "ask")
        default: Issue.record("\(decision)")
        }
    }

    @Test("used: each grant is one-time, says it came from the approval, and ends with its connection")
    func used() {
        // The daemon keeps a standing approval (it removes only a single one): the end-to-end test checks that.
        let grants = GrantSet(preapprovals: [Self.approval])
        for connection in 0..<3 {
            let at = Self.time + Double(connection) * 100
            guard case let .grantOnce(accuracy, index?) = Policy.decide(.authorize(.once, .full), identity: Self.alicesMap, session: .init(),
                                                                         rules: Self.rules(), grants: grants, now: at) else {
                Issue.record("connection \(connection) was not granted once"); return
            }
            #expect(grants.preapprovals[index].standing)
            let session = SessionAuthorization(once: SessionGrant(accuracy: accuracy, at: at, lifetime: Self.lifetime, standing: true))
            let state = Policy.state(Self.alicesMap, session: session, rules: Self.rules(), grants: grants, now: at)
            #expect(state.status == .authorizedOnce && state.standing && state.accuracy == .full)
            #expect(state.reason.contains("standing approval"))
            // The connection closes: a new one is not authorized until it asks (no persistent status).
            let fresh = Policy.state(Self.alicesMap, session: .init(), rules: Self.rules(), grants: grants, now: at + 1)
            #expect(fresh.status == .notDetermined)
        }
    }

    @Test("revoked: the subject's REVOKE covers it, and the program is asked again")
    func revoked() {
        for revoke in [GrantSubject.executable("/usr/bin/map"), .executable("/usr/bin/map", user: "1000"), .user("1000")] {
            #expect(revoke.covers(Self.approval.subject), "\(revoke)")
        }
        #expect(!GrantSubject.executable("/usr/bin/map", user: "1001").covers(Self.approval.subject))
        let decision = Policy.decide(.authorize(.once, .full), identity: Self.alicesMap, session: .init(), rules: Self.rules(),
                                     grants: GrantSet(), now: Self.time)
        #expect(decision == .ask(AgentQuestion(subject: .authorization(.once), accuracy: .full, purpose: nil)))
    }

    @Test("the rules still rule: deny restricts, the rule's ceiling caps, an always rule needs no approval", arguments: [
        (AccessRule.deny, AccuracyAuthorization.full, "refuse:restricted"),
        (.ask, .reduced, "once:reduced"),
        (.always, .full, "authorized:authorizedPersistent"),
    ])
    func rulesStillApply(access: AccessRule, ceiling: AccuracyAuthorization, expected: String) {
        let decision = Policy.decide(.authorize(.once, .full), identity: Self.alicesMap, session: .init(),
                                     rules: Self.rules(access, accuracy: ceiling), grants: GrantSet(preapprovals: [Self.approval]), now: Self.time)
        let summary: String
        switch decision {
        case .grantOnce(let accuracy, _): summary = "once:\(accuracy.rawValue)"
        case .refuse(let status, _): summary = "refuse:\(status.rawValue)"
        case .authorized(let state): summary = "authorized:\(state.status.rawValue)"
        default: summary = "\(decision)"
        }
        #expect(summary == expected)
    }

    @Test("an administrator's single pre-approval is used before a standing approval, which stays")
    func singleBeforeStanding() {
        let single = Preapproval(subject: .executable("/usr/bin/map"), accuracy: .reduced, created: Self.now)
        let grants = GrantSet(preapprovals: [Self.approval, single])
        #expect(grants.preapproval(for: Self.alicesMap, at: Self.now) == 1)
        #expect(GrantSet(preapprovals: [Self.approval]).preapproval(for: Self.alicesMap, at: Self.now) == 0)
    }
}
