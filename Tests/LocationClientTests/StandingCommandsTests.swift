import TestSupport
import Testing

/// The standing approval through the commands (issue 14), with the real `locationd` and `locationctl`:
/// the agent's `standing` answer, `grants`, `revoke`, and `grant --once --standing`.
@Suite("locationctl: standing approvals end to end", .serialized)
struct StandingCommandsTests {
    /// `locationctl get` against `daemon` (it asks for one-time access).
    private func get(_ daemon: Daemon) async -> ToolResult {
        await runLocationctl(["get", "--socket", daemon.socketPath, "--timeout", "10"])
    }

    @Test("an agent's standing answer lets later gets through with no agent running, until revoked; an administrator's too")
    func standingThroughCommands() async throws {
        let daemon = try Daemon(config: PolicyCommandsTests.config)
        let socket = ["--socket", daemon.socketPath]
        let agent = try ToolProcess(Tools.locationctl, ["agent", "--answer", "standing", "--count", "1"] + socket)
        #expect(await agent.waitForOutput("agent registered"), "agent: \(agent.stdout) \(agent.stderr)")
        let first = await get(daemon)
        #expect(first.status == 0, "\(first)\n\(daemon.log)")
        let agentResult = await agent.wait(timeout: 10)
        #expect(agentResult.stdout.contains("ANSWERED 1: allow once, standing"), "\(agentResult)")

        // No agent runs now: each later get is granted once, without a question.
        for attempt in 1...3 {
            let later = await get(daemon)
            #expect(later.status == 0 && later.stdout.hasPrefix("20"), "attempt \(attempt): \(later)\n\(daemon.log)")
        }
        let grants = await runLocationctl(["grants"] + socket)
        let row = grants.stdout.split(separator: "\n").first { $0.hasPrefix("once, standing") }
        #expect(row?.contains("locationctl of user 0") == true && row?.contains("agent root (uid 0)") == true, "\(grants)")

        // Revoked: refused again (no agent to ask).
        let revoke = await runLocationctl(["revoke", "--executable", Tools.locationctl, "--user", "0"] + socket)
        #expect(revoke.status == 0, "\(revoke)")
        #expect((await get(daemon)).status == 77)

        // An administrator's standing approval; --standing is for --once only.
        let wrong = await runLocationctl(["grant", "--executable", Tools.locationctl, "--persistent", "--standing"] + socket)
        #expect(wrong.status == 64 && wrong.stderr.contains("--standing goes with --once"), "\(wrong)")
        let grant = await runLocationctl(["grant", "--executable", Tools.locationctl, "--once", "--standing"] + socket)
        #expect(grant.status == 0 && grant.stdout.hasPrefix("standing approval of one-time access"), "\(grant)")
        for attempt in 1...2 {
            #expect((await get(daemon)).status == 0, "attempt \(attempt)")
        }
        let audit = await runLocationctl(["audit"] + socket)
        #expect(audit.stdout.contains("answered allow once, standing") && audit.stdout.contains("GRANT once standing"), "\(audit.stdout)")
    }
}
