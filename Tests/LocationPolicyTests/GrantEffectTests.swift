import LocationPolicy
import Testing

/// Issue 12: an administrator's grant is answered with what will apply — the rule's ceiling applied, as
/// `Policy.state` applies it — not with the accuracy asked for.
@Suite("What an administrator's grant gives")
struct GrantEffectTests {
    static let kiosk = ClientRule(name: "kiosk", unit: "kiosk.service", access: .deny, accuracy: .full)
    static let navit = ClientRule(name: "navit", executable: "/usr/bin/navit", access: .ask, accuracy: .full)
    static let staff = ClientRule(name: "staff", group: "staff", access: .ask, accuracy: .full)
    static let alice = ClientRule(name: "alice", user: "alice", access: .always, accuracy: .full)

    static func rules(_ accuracy: AccuracyAuthorization, _ clients: [ClientRule]) -> PolicyRules {
        var defaults = PolicyDefaults()
        defaults.accuracy = accuracy
        return PolicyRules(defaults: defaults, clients: clients)
    }

    static let aliases: Set<String> = ["nobody", "65534"]

    @Test("the accuracy that applies, and why", arguments: [
        // The new user's report: `grant --user nobody --once` under `[policy] accuracy = reduced`.
        (rules(.reduced, []), GrantSubject.user("nobody"), AuthorizationKind.once, AccuracyAuthorization.full,
         AccuracyAuthorization?.some(.reduced), String?.some("the [policy] default allows no more than reduced accuracy")),
        (rules(.full, []), .user("nobody"), .persistent, .full, .full, nil),
        (rules(.reduced, []), .user("nobody"), .persistent, .reduced, .reduced, nil),
        // The subject's own rule decides: navit's allows full.
        (rules(.reduced, [navit]), .executable("/usr/bin/navit"), .persistent, .full, .full, nil),
        (rules(.reduced, [navit]), .executable("/usr/bin/navit", user: "65534"), .once, .full, .full, nil),
        // A rule for another program does not apply, but may for some of a user's programs.
        (rules(.reduced, [navit]), .executable("/usr/bin/curl"), .persistent, .full, .reduced,
         "the [policy] default allows no more than reduced accuracy"),
        (rules(.reduced, [navit]), .user("nobody"), .persistent, .full, .reduced,
         "the [policy] default allows no more than reduced accuracy; clients that rule [client navit] matches get full accuracy"),
        // Groups are the process's own: a group rule may apply, never surely.
        (rules(.reduced, [staff]), .executable("/usr/bin/curl"), .persistent, .full, .reduced,
         "the [policy] default allows no more than reduced accuracy; clients that rule [client staff] matches get full accuracy"),
        // A deny rule: restricted whatever is stored.
        (rules(.full, [kiosk]), .unit("kiosk.service"), .persistent, .full, nil, "rule [client kiosk] denies access: the grant does not apply"),
        (rules(.full, [kiosk]), .user("nobody"), .persistent, .full, .full,
         "clients that rule [client kiosk] matches get no access (it denies it)"),
        // A user rule, by name or uid, for the user's grants; not for another user's.
        (rules(.reduced, [alice]), .user("alice"), .persistent, .reduced, .reduced, nil),
        (rules(.reduced, [alice]), .executable("/usr/bin/navit", user: "1000"), .once, .reduced, .full,
         "rule [client alice] allows always, at full accuracy: the pre-approval is not used"),
        (rules(.reduced, [alice]), .user("nobody"), .persistent, .full, .reduced,
         "the [policy] default allows no more than reduced accuracy"),
    ])
    func effect(rules: PolicyRules, subject: GrantSubject, kind: AuthorizationKind, granted: AccuracyAuthorization,
                applies: AccuracyAuthorization?, reason: String?) {
        let aliases: Set<String> = subject.description.contains("alice") || subject.description.contains("1000") ? ["alice", "1000"] : Self.aliases
        let effect = rules.effect(ofGranting: granted, kind: kind, to: subject, userAliases: aliases)
        #expect(effect == GrantEffect(accuracy: applies, reason: reason))
    }

    @Test("it is what Policy.state then gives the subject's client", arguments: [AccuracyAuthorization.full, .reduced])
    func agreesWithTheState(ceiling: AccuracyAuthorization) {
        let rules = Self.rules(ceiling, [])
        let subject = GrantSubject.user("65534")
        let grants = GrantSet(persistent: [PersistentGrant(subject: subject, allowed: true, accuracy: .full, created: 0, decidedBy: "admin")])
        let nobody = ClientIdentity(pid: 9, uid: 65534, gid: 65534, user: "nobody", executable: "/usr/bin/curl")
        let state = Policy.state(nobody, session: .init(), rules: rules, grants: grants, now: PolicyTime(monotonic: .now, wall: 1))
        let effect = rules.effect(ofGranting: .full, kind: .persistent, to: subject, userAliases: Self.aliases)
        #expect(state.accuracy == effect.accuracy && effect.accuracy == ceiling)
    }
}
