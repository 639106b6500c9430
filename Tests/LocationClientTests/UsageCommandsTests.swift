import TestSupport
import Testing

/// `locationctl agent` shows the administrator's usage text for what a program asks (issue 14), with the
/// real `locationd` and `locationctl`.
@Suite("locationctl agent: usage texts end to end", .serialized)
struct UsageCommandsTests {
    @Test("the agent prints the rule's usage.when-in-use for one-time access, beside the program's declared name")
    func agentShowsUsage() async throws {
        let daemon = try Daemon(config: PolicyCommandsTests.config + """

            [client locationctl]
            executable = \(Tools.locationctl)
            access = ask
            accuracy = full
            usage.when-in-use = The shell prints where this machine is.
            usage.always = Never shown here: get asks for one-time access.
            """)
        let socket = ["--socket", daemon.socketPath]
        let agent = try ToolProcess(Tools.locationctl, ["agent", "--answer", "once", "--count", "1"] + socket)
        #expect(await agent.waitForOutput("agent registered"), "agent: \(agent.stdout) \(agent.stderr)")
        let got = await runLocationctl(["get", "--timeout", "10"] + socket)
        #expect(got.status == 0, "\(got)\n\(daemon.log)")
        let shown = await agent.wait(timeout: 10).stdout
        #expect(shown.contains("  usage:    The shell prints where this machine is.\n"), "\(shown)")
        #expect(!shown.contains("Never shown here"), "\(shown)")
        #expect(shown.contains(#"declared name "locationctl get""#), "\(shown)")
    }
}
