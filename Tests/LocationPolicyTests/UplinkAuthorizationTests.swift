import LocationPolicy
import Testing

/// Issue 17: an uplink is a client identified as the daemon's own service; its `[uplink]` section is the
/// administrator's Always grant at its accuracy, capped by the rule that applies to the daemon.
@Suite("Policy: uplink authorization")
struct UplinkAuthorizationTests {
    static let daemon = ClientIdentity(pid: 100, uid: 0, gid: 0, user: "root", groups: ["root"],
                                       executable: "/usr/sbin/locationd", unit: "locationd.service")

    static func rules(_ access: AccessRule, _ accuracy: AccuracyAuthorization, rule: ClientRule? = nil) -> PolicyRules {
        var defaults = PolicyDefaults()
        defaults.access = access
        defaults.accuracy = accuracy
        return PolicyRules(defaults: defaults, clients: rule.map { [$0] } ?? [])
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var rules: PolicyRules
        var requested: AccuracyAuthorization
        var status: AuthorizationStatus
        var accuracy: AccuracyAuthorization?
        var reason: String
        var testDescription: String { reason }
    }

    static let cases: [Case] = [
        Case(rules: rules(.ask, .reduced), requested: .full, status: .authorizedPersistent, accuracy: .reduced,
             reason: "[policy] default allows no more than reduced accuracy"),
        Case(rules: rules(.ask, .full), requested: .full, status: .authorizedPersistent, accuracy: .full,
             reason: "full accuracy, as the [uplink] section asks; [policy] default allows it"),
        Case(rules: rules(.once, .full), requested: .reduced, status: .authorizedPersistent, accuracy: .reduced,
             reason: "reduced accuracy, as the [uplink] section asks; [policy] default allows it"),
        Case(rules: rules(.deny, .full), requested: .reduced, status: .restricted, accuracy: nil,
             reason: "[policy] default denies access: nothing is published"),
        Case(rules: rules(.deny, .reduced, rule: ClientRule(name: "fleet", unit: "locationd.service", access: .always, accuracy: .full)),
             requested: .full, status: .authorizedPersistent, accuracy: .full,
             reason: "full accuracy, as the [uplink] section asks; rule [client fleet] allows it"),
        Case(rules: rules(.always, .full, rule: ClientRule(name: "no-fleet", executable: "/usr/sbin/locationd", access: .deny, accuracy: .full)),
             requested: .full, status: .restricted, accuracy: nil, reason: "rule [client no-fleet] denies access: nothing is published"),
        Case(rules: rules(.always, .full, rule: ClientRule(name: "root", user: "root", access: .always, accuracy: .reduced)),
             requested: .full, status: .authorizedPersistent, accuracy: .reduced, reason: "rule [client root] allows no more than reduced accuracy"),
        // A rule for another program does not match the daemon.
        Case(rules: rules(.ask, .reduced, rule: ClientRule(name: "navit", executable: "/usr/bin/navit", access: .always, accuracy: .full)),
             requested: .full, status: .authorizedPersistent, accuracy: .reduced, reason: "[policy] default allows no more than reduced accuracy"),
    ]

    @Test("the rule matching the daemon (else [policy]) caps or denies the section's accuracy", arguments: cases)
    func capped(_ c: Case) {
        let state = Policy.uplinkState(Self.daemon, requested: c.requested, rules: c.rules)
        #expect(state.status == c.status)
        #expect(state.accuracy == c.accuracy)
        #expect(state.reason == c.reason)
    }
}
