#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPolicy
@testable import LocationServer
import Testing

/// Usage texts from the administrator, not the client (issue 14): Core Location shows the app's
/// Info.plist usage description for the access asked — `NSLocationWhenInUseUsageDescription` for When
/// In Use (which includes one-time access), `NSLocationAlwaysAndWhenInUseUsageDescription` for Always,
/// `NSLocationTemporaryUsageDescriptionDictionary[key]` for temporary full accuracy. locationd takes them
/// from the client's rule: `usage.when-in-use`, `usage.always`, `purpose.KEY`.
@Suite("Usage texts", .serialized)
struct UsageTextsTests {
    static let rule = """
        [client map]
        executable = \(PolicyEndToEndTests.selfExecutable)
        access = ask
        accuracy = full
        usage.when-in-use = The map shows where you are.
        usage.always = The map records your trips while it runs in the background.
        purpose.Navigation = Turn-by-turn directions need your exact position.
        """

    @Test("the rule's keys are read, and printed back by the effective configuration")
    func parsed() throws {
        let c = try ConfigurationTests.load(Self.rule)
        let usage = try #require(c.clients.first?.usage)
        #expect(usage == UsageTexts(whenInUse: "The map shows where you are.",
                                    always: "The map records your trips while it runs in the background."))
        #expect(usage.text(for: .once) == "The map shows where you are.")
        #expect(usage.text(for: .persistent) == "The map records your trips while it runs in the background.")
        let printed = try ConfigurationTests.load(c.effectiveDescription)
        #expect(printed.clients.first?.usage == usage)
    }

    @Test("a usage key that is not one of the two, or without text, is an error naming it", arguments: [
        ("[client a]\nuser = nobody\naccess = ask\nusage.sometimes = text\n", "usage.sometimes", "usage.when-in-use or usage.always"),
        ("[client a]\nuser = nobody\naccess = ask\nusage.always =\n", "usage.always", "cannot be empty"),
    ])
    func errors(text: String, key: String, mentions: String) {
        do {
            _ = try ConfigurationTests.load(text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.key == key && error.line == 4 && error.description.contains(mentions), "\(error)")
        }
    }

    @Test("the question for each kind carries the rule's text for the kind asked; a rule without texts shows none", arguments: [
        (AuthorizationKind.once, AuthorizationKind.once, "The map shows where you are." as String?),
        (.whenInUse, .whenInUse, "The map shows where you are."),
        // Always before any answer is one question for Always, with usage.always.
        (.persistent, .persistent, "The map records your trips while it runs in the background."),
    ])
    func question(kind: AuthorizationKind, asked askedKind: AuthorizationKind, text: String?) throws {
        let c = try ConfigurationTests.load(Self.rule)
        let rules = PolicyRules(defaults: c.policy, clients: c.clients)
        let map = ClientIdentity(pid: 1, uid: 1000, gid: 1000, executable: PolicyEndToEndTests.selfExecutable)
        let asked = Policy.decide(.authorize(kind, .full), identity: map, session: .init(), rules: rules, grants: .init(), now: PolicyTime(monotonic: .now, wall: 0))
        #expect(asked == .ask(AgentQuestion(subject: .authorization(askedKind), accuracy: .full, purpose: text)))
        let other = ClientIdentity(pid: 2, uid: 1000, gid: 1000, executable: "/usr/bin/other")
        let unruled = Policy.decide(.authorize(kind, .full), identity: other, session: .init(), rules: rules, grants: .init(), now: PolicyTime(monotonic: .now, wall: 0))
        #expect(unruled == .ask(AgentQuestion(subject: .authorization(askedKind), accuracy: .reduced, purpose: nil)))
    }

    @Test("end to end: the agent's ASK shows the administrator's text, and the client's name only as its name")
    func agentSeesAdministratorsText() throws {
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = ask\nask-timeout = 10s", clients: Self.rule))
        let agent = try RawClient.agent(daemon.socketPath)
        let client = try RawClient(daemon.socketPath)
        client.send(#"{"class":"AUTHORIZE","authorization":"once","name":"Trust me: the administrator approved this"}"#)
        let ask = try #require(agent.message("ASK"))
        #expect(ask["purpose"]?.string == "The map shows where you are.")
        #expect(ask["client"]?.object?["name"]?.string == "Trust me: the administrator approved this")
        try agent.answer(ask, "allowOnce")
        #expect(client.message("AUTHORIZATION")?["status"]?.string == "authorizedOnce")
        // When In Use (a new connection: this one's one-time grant comes first), with its text; allowed, a
        // later Always request is the upgrade, with usage.always.
        let later = try RawClient(daemon.socketPath)
        later.send(#"{"class":"AUTHORIZE","authorization":"whenInUse"}"#)
        let whenInUse = try #require(agent.message("ASK"))
        #expect(whenInUse["request"]?.string == "whenInUse" && whenInUse["upgrade"] == nil)
        #expect(whenInUse["purpose"]?.string == "The map shows where you are.")
        try agent.answer(whenInUse, "allowAlways")
        #expect(later.message("AUTHORIZATION")?["status"]?.string == "authorizedWhenInUse")
        later.send(#"{"class":"AUTHORIZE","authorization":"persistent"}"#)
        let always = try #require(agent.message("ASK"))
        #expect(always["request"]?.string == "persistent" && always["upgrade"]?.bool == true)
        #expect(always["purpose"]?.string == "The map records your trips while it runs in the background.")
    }

    @Test("an upgrade nobody answers in time leaves the client When In Use, and tells it so (not denied)")
    func upgradeTimesOut() throws {
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = ask\nask-timeout = 2s", clients: Self.rule))
        let agent = try RawClient.agent(daemon.socketPath)
        let client = try RawClient(daemon.socketPath)
        client.send(#"{"class":"AUTHORIZE","authorization":"whenInUse"}"#)
        let whenInUse = try #require(agent.message("ASK"))
        try agent.answer(whenInUse, "allowAlways")
        #expect(client.message("AUTHORIZATION")?["status"]?.string == "authorizedWhenInUse")
        client.send(#"{"class":"AUTHORIZE","authorization":"always"}"#)
        let upgrade = try #require(agent.message("ASK"))
        #expect(upgrade["upgrade"]?.bool == true)
        // Nobody answers the upgrade: after ask-timeout the client hears When In Use, its grant.
        let told = try #require(client.message("AUTHORIZATION", timeout: 6))
        #expect(told["status"]?.string == "authorizedWhenInUse", "\(told)")
        #expect(agent.message("ANSWERED")?["answer"]?.string != nil)
    }
}
