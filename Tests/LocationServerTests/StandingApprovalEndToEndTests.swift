#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import TestSupport
import Testing

/// The LocationButton's standing approval with the real daemon (issue 14): once an agent answers "allow
/// once, and from now on without asking", each later connection of that user's program that asks for
/// one-time access gets a one-time grant with no question, which ends when it disconnects.
@Suite("Standing approvals, end to end", .serialized)
struct StandingApprovalEndToEndTests {
    static let once = #"{"class":"AUTHORIZE","authorization":"once"}"#

    /// Ends a connection, as a client that quits does (the socket itself closes when the value goes).
    static func hangUp(_ client: RawClient) { shutdown(client.fd, Int32(SHUT_RDWR)) }

    /// The GRANTS reply's `key` array, as objects.
    static func entries(_ grants: [String: JSONValue], _ key: String) -> [[String: JSONValue]] {
        guard case .array(let items)? = grants[key] else { return [] }
        return items.compactMap(\.object)
    }

    @Test("three later connections get a one-time grant each without a question, each ending on disconnect; revoke asks again")
    func standingApproval() throws {
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = ask\naccuracy = full\nask-timeout = 10s"))
        let me = PolicyEndToEndTests.selfExecutable
        let agent = try RawClient.agent(daemon.socketPath)

        // The first tap: the agent is asked, and answers allow once and from now on without asking.
        let first = try RawClient(daemon.socketPath)
        first.send(Self.once)
        let ask = try #require(agent.message("ASK"))
        #expect(ask["request"]?.string == "once")
        try agent.answer(ask, "allowOnceStanding")
        #expect(agent.message("ANSWERED")?["answer"]?.string == "allowOnceStanding")
        let firstState = try #require(first.message("AUTHORIZATION"))
        #expect(firstState["status"]?.string == "authorizedOnce")
        #expect(firstState["standing"] == nil, "the first grant was asked for")
        Self.hangUp(first)

        let admin = try RawClient(daemon.socketPath)
        for connection in 1...3 {
            let client = try RawClient(daemon.socketPath)
            client.send(#"{"class":"AUTHORIZATION"}"#)
            #expect(client.message("AUTHORIZATION")?["status"]?.string == "notDetermined", "connection \(connection) before asking")
            client.send(Self.once)
            let state = try #require(client.message("AUTHORIZATION"))
            #expect(state["status"]?.string == "authorizedOnce" && state["accuracy"]?.string == "full", "connection \(connection)")
            #expect(state["standing"]?.bool == true, "connection \(connection)")
            client.send(#"{"class":"WATCH"}"#)
            #expect(client.message("TPV") != nil, "connection \(connection) receives locations")
            admin.send(#"{"class":"GRANTS"}"#)
            let live = try #require(admin.message("GRANTS"))
            #expect(Self.entries(live, "once").count == 1, "connection \(connection)'s one-time grant is live")
            Self.hangUp(client)
            // It ends on disconnect: no live one-time grant is left, and no persistent one was made.
            var ended = false
            for _ in 0..<50 where !ended {
                admin.send(#"{"class":"GRANTS"}"#)
                let after = try #require(admin.message("GRANTS"))
                ended = Self.entries(after, "once").isEmpty
                if ended { #expect(Self.entries(after, "persistent").isEmpty) } else { usleep(20_000) }
            }
            #expect(ended, "connection \(connection)'s one-time grant outlived it")
        }
        #expect(agent.message("ASK", timeout: 0.5) == nil, "the agent saw a question after the standing approval")

        // Listed, and stored for this user and program, as a standing pre-approval; never as persistent.
        admin.send(#"{"class":"GRANTS"}"#)
        let grants = try #require(admin.message("GRANTS"))
        let standing = Self.entries(grants, "preapproved")
        #expect(standing.count == 1)
        #expect(standing.first?["executable"]?.string == me && standing.first?["user"]?.string == "0")
        #expect(standing.first?["standing"]?.bool == true && standing.first?["decidedBy"]?.string?.hasPrefix("agent ") == true)
        let stored = try #require(FileManager.default.contents(atPath: daemon.directory + "/state/grants.json"))
        let file = try #require(JSONValue.object(String(decoding: stored, as: UTF8.self)))
        #expect(Self.entries(file, "persistent").isEmpty && Self.entries(file, "preapprovals").first?["standing"]?.bool == true)

        // Revoked: a live grant it gave ends at once, and the next connection is asked about again.
        let live = try RawClient(daemon.socketPath)
        live.send(Self.once)
        #expect(live.message("AUTHORIZATION")?["standing"]?.bool == true)
        admin.send(#"{"class":"REVOKE","executable":"\#(me)","user":"0"}"#)
        #expect(admin.message("GRANTS")?["revoked"]?.number == 2)  // the approval and the live grant
        #expect(live.message("AUTHORIZATION")?["status"]?.string == "notDetermined")
        let again = try RawClient(daemon.socketPath)
        again.send(Self.once)
        #expect(agent.message("ASK") != nil, "after the revoke the program is asked about again")

        // The audit has the answer, the grants without asking and the revoke.
        admin.send(#"{"class":"AUDIT"}"#)
        let audit = try #require(admin.line(timeout: 5))
        #expect(audit.contains("answered allowOnceStanding"))
        #expect(audit.components(separatedBy: "from a standing approval by agent").count - 1 == 4)
        #expect(audit.contains("\"event\":\"revoke\""))
    }

    @Test("a denial that replaces a standing approval ends the live grants it gave, as a revoke does")
    func denialEndsLiveStandingGrants() throws {
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = ask\naccuracy = full\nask-timeout = 10s"))
        let agent = try RawClient.agent(daemon.socketPath)
        let first = try RawClient(daemon.socketPath)
        first.send(Self.once)
        let ask = try #require(agent.message("ASK"))
        try agent.answer(ask, "allowOnceStanding")
        #expect(first.message("AUTHORIZATION")?["status"]?.string == "authorizedOnce")
        // A later connection streams on a grant from the approval.
        let live = try RawClient(daemon.socketPath)
        live.send(Self.once)
        #expect(live.message("AUTHORIZATION")?["standing"]?.bool == true)
        live.send(#"{"class":"WATCH"}"#)
        #expect(live.message("TPV") != nil)
        // Another connection of the program asks for When In Use; the agent denies: the stored decision
        // for this user and program is now a denial, and the approval is gone.
        let other = try RawClient(daemon.socketPath)
        other.send(#"{"class":"AUTHORIZE","authorization":"whenInUse"}"#)
        let second = try #require(agent.message("ASK"))
        try agent.answer(second, "deny")
        #expect(other.message("AUTHORIZATION")?["status"]?.string == "denied")
        // Found by a helper attacking the daemon: the live grant went on for up to once-lifetime.
        let told = try #require(live.message("AUTHORIZATION"))
        #expect(told["status"]?.string == "denied", "\(told)")
        var after = 0
        while let line = live.line(timeout: 1) { if line.contains("\"TPV\"") { after += 1 } }
        #expect(after <= 1, "at most one report already on its way")
    }

    @Test("an administrator's standing approval (GRANT kind once standing) is not used up")
    func administratorsStandingApproval() throws {
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = ask\naccuracy = full"))
        let admin = try RawClient(daemon.socketPath)
        admin.send(#"{"class":"GRANT","executable":"\#(PolicyEndToEndTests.selfExecutable)","kind":"persistent","standing":true}"#)
        #expect(admin.message("ERROR")?["message"]?.string == #"standing needs kind "once""#)
        admin.send(#"{"class":"GRANT","executable":"\#(PolicyEndToEndTests.selfExecutable)","kind":"once","standing":true}"#)
        let granted = try #require(admin.message("GRANTS"))
        #expect(Self.entries(granted, "preapproved").first?["standing"]?.bool == true)
        for connection in 1...2 {
            let client = try RawClient(daemon.socketPath)
            client.send(Self.once)
            let state = try #require(client.message("AUTHORIZATION"))
            #expect(state["status"]?.string == "authorizedOnce" && state["standing"]?.bool == true, "connection \(connection)")
            #expect(state["reason"]?.string?.contains("from a standing approval") == true)
        }
    }
}
