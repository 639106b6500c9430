#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import TestSupport
import Testing

/// The real `locationd` on a temporary config, socket and state directory (a minimal copy of
/// Tests/LocationServerTests/DaemonHarness.swift's `DaemonProcess`). Stopped when dropped.
final class Daemon {
    let directory: String
    let socketPath: String
    private var pid: pid_t = 0

    init(config body: String) throws {
        directory = try Tools.temporaryDirectory("locationctl-e2e")
        socketPath = directory + "/locationd.sock"
        let config = """
            [daemon]
            socket = \(socketPath)
            state-directory = \(directory)/state

            \(body)
            """
        _ = FileManager.default.createFile(atPath: directory + "/locationd.conf", contents: Data(config.utf8))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, directory + "/daemon.log", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(Tools.locationd), strdup("--config"),
                                                    strdup(directory + "/locationd.conf"), nil]
        defer { argv.forEach { free($0) } }
        let rc = posix_spawn(&pid, Tools.locationd, &actions, nil, argv, environ)
        guard rc == 0 else { throw Errno(rawValue: rc) }
        let end = monotonicSeconds() + 10
        while monotonicSeconds() < end {
            if ListeningSocket.isLive(socketPath) { return }
            usleep(20_000)
        }
        throw Errno.timedOut
    }

    /// What the daemon logged, for failure messages.
    var log: String {
        FileManager.default.contents(atPath: directory + "/daemon.log").map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    deinit {
        if pid > 0 {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        _ = try? FileManager.default.removeItem(atPath: directory)
    }
}

/// End to end: the real `locationd` and `locationctl` binaries, the permission policy driven by the
/// commands — agent, grant, revoke, audit — and `get` exiting 0 or 77 as the policy says.
@Suite("locationctl and locationd: the permission policy end to end", .serialized)
struct PolicyCommandsTests {
    static var config: String {
        """
        [receiver demo]
        type = replay
        file = \(Tools.repository)/Demo/haicom-305N.log
        rate = 10
        loop = yes

        [policy]
        access = ask
        accuracy = full
        ask-timeout = 10s
        """
    }

    /// `locationctl get` against `daemon`.
    private func get(_ daemon: Daemon) async -> ToolResult {
        await runLocationctl(["get", "--socket", daemon.socketPath, "--timeout", "10"])
    }

    @Test("ask: an agent's answer, no agent, grant, revoke, and the audit trail of it all")
    func policyThroughCommands() async throws {
        let daemon = try Daemon(config: Self.config)
        let socket = ["--socket", daemon.socketPath]

        // An agent answering "once": get works, and the agent leaves after its one answer.
        let agent = try ToolProcess(Tools.locationctl, ["agent", "--answer", "once", "--count", "1"] + socket)
        #expect(await agent.waitForOutput("agent registered"), "agent: \(agent.stdout) \(agent.stderr)")
        let answered = await get(daemon)
        #expect(answered.status == 0, "\(answered)\n\(daemon.log)")
        #expect(answered.stdout.hasPrefix("20"))
        let agentResult = await agent.wait(timeout: 10)
        #expect(agentResult.status == 0, "\(agentResult)")
        #expect(agentResult.stdout.contains("one-time access at full accuracy"))
        #expect(agentResult.stdout.contains(Tools.locationctl.split(separator: "/").last.map(String.init) ?? "locationctl"))
        #expect(agentResult.stdout.contains("locationctl get"))  // the declared name
        #expect(agentResult.stdout.contains("ANSWERED 1: allow once"))

        // No agent: refused at once, with that reason.
        let alone = await get(daemon)
        #expect(alone.status == 77, "\(alone)")
        #expect(alone.stderr.contains("no agent"), "\(alone)")
        #expect(alone.stdout.isEmpty)

        // An administrator's persistent grant for locationctl: get works without an agent.
        let grant = await runLocationctl(["grant", "--executable", Tools.locationctl, "--persistent"] + socket)
        #expect(grant.status == 0, "\(grant)")
        let grants = await runLocationctl(["grants"] + socket)
        #expect(grants.status == 0)
        #expect(grants.stdout.contains("always") && grants.stdout.contains("locationctl"), "\(grants)")
        let granted = await get(daemon)
        #expect(granted.status == 0, "\(granted)\n\(daemon.log)")

        // Revoked: refused again.
        let revoke = await runLocationctl(["revoke", "--executable", Tools.locationctl] + socket)
        #expect(revoke.status == 0, "\(revoke)")
        let revoked = await get(daemon)
        #expect(revoked.status == 77, "\(revoked)")
        #expect((await runLocationctl(["grants"] + socket)).stdout == "no grants\n")

        // When In Use, granted ahead by the administrator, is listed as such (not as "always").
        let whenInUse = await runLocationctl(["grant", "--executable", Tools.locationctl, "--user", "0", "--when-in-use"] + socket)
        #expect(whenInUse.status == 0 && whenInUse.stdout.hasPrefix("granted When In Use access to"), "\(whenInUse)")
        let listed = await runLocationctl(["grants"] + socket)
        let row = listed.stdout.split(separator: "\n").first { $0.contains("locationctl") } ?? ""
        #expect(row.hasPrefix("when in use ") && !row.contains("always"), "\(listed)")
        #expect((await runLocationctl(["revoke", "--executable", Tools.locationctl] + socket)).status == 0)

        // The audit trail: every decision, the deliveries, the grant and the revoke.
        let audit = await runLocationctl(["audit"] + socket)
        #expect(audit.status == 0, "\(audit)")
        let rows = audit.stdout.split(separator: "\n").map(String.init)
        #expect(rows.first?.hasPrefix("TIME") == true)
        // A row, and its reason on the line below (issue 33).
        #expect(rows.indices.contains { rows[$0].contains("decision") && rows[$0].contains("allowed once, full")
                    && rows.indices.contains($0 + 1) && rows[$0 + 1].contains("answered allow once") }, "\(audit.stdout)")
        #expect(rows.indices.contains { rows[$0].contains("decision") && rows[$0].contains("denied")
                    && rows.indices.contains($0 + 1) && rows[$0 + 1].contains("no agent is running") })
        #expect(rows.contains { $0.contains("decision") && $0.contains("always, full") })
        #expect(rows.filter { $0.contains("delivery") }.count == 2)
        #expect(rows.indices.contains { rows[$0].contains(" grant ") && rows.indices.contains($0 + 1) && rows[$0 + 1].contains("GRANT persistent") },
                "\(audit.stdout)")
        #expect(rows.contains { $0.contains(" revoke ") })
        let json = await runLocationctl(["audit", "--json", "--since", "1h"] + socket)
        // One row per event, besides the heading and the note lines below the rows.
        #expect(json.stdout.split(separator: "\n").count == rows.filter { !$0.hasPrefix("  └") }.count - 1)
    }

    @Test("a declared name cannot draw lines or move the cursor on the agent's terminal")
    func forgedNameIsEscaped() async throws {
        let daemon = try Daemon(config: Self.config)
        let agent = try ToolProcess(Tools.locationctl, ["agent", "--answer", "deny", "--count", "1", "--socket", daemon.socketPath])
        #expect(await agent.waitForOutput("agent registered"), "agent: \(agent.stdout) \(agent.stderr)")
        // The security review's forgery: a fake "user:" line, then cursor-up, erase-line and a retitle.
        let client = try LineSocket(daemon.socketPath)
        client.send(#"{"class":"AUTHORIZE","authorization":"once","name":"Maps\"\n  user:     root (uid 0), pid 1\n\u001b[1A\u001b[2K\u001b]0;pwned\u0007"}"#)
        let answered = await agent.wait(timeout: 10)
        #expect(answered.status == 0, "\(answered)")
        #expect(!answered.stdout.contains("\u{1B}") && !answered.stdout.contains("\u{07}"), "\(answered.stdout)")
        // The real "user:" line is there (the test runs as root), the forged one is not.
        #expect(!answered.stdout.split(separator: "\n").contains("  user:     root (uid 0), pid 1"), "\(answered.stdout)")
        // Escaped, and its runs of spaces made one (a name padded to the terminal's width wrapped onto a line of its own).
        #expect(answered.stdout.contains(#"declared name "Maps"\u{A} user: root (uid 0), pid 1\u{A}\u{1B}[1A\u{1B}[2K\u{1B}]0;pwned\u{7}""#),
                "\(answered.stdout)")
    }
}

/// `locationctl agent` at a terminal (a pty): an answer belongs to the question on screen.
@Suite("locationctl agent at a terminal", .serialized)
struct AgentTerminalTests {
    /// Runs argv[1] (`locationctl`) `agent --socket argv[2]` on a pty; once it registered, starts
    /// `locationctl get` (argv[1] again) and answers the question twice: "a" at once when it appears,
    /// then "d" 1.5 s later. Prints everything the agent wrote, then `get`'s exit status.
    static let driver = """
        import os, pty, select, subprocess, sys, time
        ctl, sock = sys.argv[1], sys.argv[2]
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(ctl, [ctl, "agent", "--socket", sock])
        seen = b""
        def read(until, seconds):
            global seen
            end = time.time() + seconds
            while until not in seen and time.time() < end:
                r, _, _ = select.select([fd], [], [], 0.1)
                if r:
                    try: seen += os.read(fd, 4096)
                    except OSError: break
            return until in seen
        read(b"registered", 10)
        os.write(fd, b"o\\n")                       # nothing is asked yet: ignored
        time.sleep(0.3)
        get = subprocess.Popen([ctl, "get", "--socket", sock, "--timeout", "10"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        read(b"[R]educed always? ", 10)
        os.write(fd, b"a\\n")                       # within a second of the question appearing: ignored
        time.sleep(1.5)
        os.write(fd, b"d\\n")
        read(b"ANSWERED", 5)
        status = get.wait(10)
        read(b"never", 0.5)
        os.kill(pid, 9)
        sys.stdout.write(seen.decode(errors="replace"))
        print("\\nget exit", status)
        """

    @Test("a line typed while no question is shown, or at once when one appears, is not taken as its answer")
    func staleLinesIgnored() async throws {
        let daemon = try Daemon(config: PolicyCommandsTests.config)
        let run = try await ToolProcess("/usr/bin/python3", ["-c", Self.driver, Tools.locationctl, daemon.socketPath]).wait(timeout: 40)
        let out = run.stdout
        #expect(out.contains("\"o\" ignored: no request was waiting"), "\(out)")
        #expect(out.contains("\"a\" ignored: request 1 had just been shown"), "\(out)")
        #expect(out.contains("ANSWERED 1: deny"), "\(out)")
        #expect(out.contains("get exit 77"), "denied, not allowed always: \(out)")
    }
    /// Issue 33's typed-ahead key: argv[1] `agent` on a pty; a `d` typed (echoed, so in the terminal's
    /// queue) while nothing is asked; then `locationctl get` asks, Enter is pressed, and after the rule's
    /// second "o" is typed. Prints what the agent wrote, whether `get` was still waiting before "o", and
    /// `get`'s exit status.
    static let typedAheadDriver = """
        import os, pty, select, subprocess, sys, time
        ctl, sock = sys.argv[1], sys.argv[2]
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(ctl, [ctl, "agent", "--socket", sock])
        seen = b""
        def read(until, seconds):
            global seen
            end = time.time() + seconds
            while until not in seen and time.time() < end:
                r, _, _ = select.select([fd], [], [], 0.1)
                if r:
                    try: seen += os.read(fd, 4096)
                    except OSError: break
            return until in seen
        read(b"waiting for requests\\r\\n", 10)
        os.write(fd, b"d")                          # typed ahead, no Enter
        read(b"waiting for requests\\r\\nd", 5)      # echoed: the terminal holds it
        get = subprocess.Popen([ctl, "get", "--socket", sock, "--timeout", "20"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        read(b"[R]educed always? ", 10)
        shown = time.time()
        os.write(fd, b"\\n")                         # Enter: the "d" before it was discarded
        read(b"ignored", 5)
        print("pending before answer:", get.poll() is None and b"ANSWERED" not in seen)
        time.sleep(max(0, shown + 1.3 - time.time()))  # the rule's second after a question appears
        os.write(fd, b"o\\n")
        read(b"ANSWERED", 5)
        status = get.wait(15)
        read(b"never", 0.3)
        os.kill(pid, 9)
        sys.stdout.write(seen.decode(errors="replace"))
        print("\\nget exit", status)
        """

    @Test("a key typed while no question is shown does not answer the next one; an answer typed after it appeared is taken")
    func typedAheadKeyDiscarded() async throws {
        let daemon = try Daemon(config: PolicyCommandsTests.config)
        let run = try await ToolProcess("/usr/bin/python3", ["-c", Self.typedAheadDriver, Tools.locationctl, daemon.socketPath]).wait(timeout: 50)
        let out = run.stdout
        // The line read after the question appeared is empty: the "d" typed before it was flushed.
        #expect(out.contains("(\"\" ignored: request 1 had just been shown"), "\(out)")
        #expect(!out.contains(#""d" ignored"#) && !out.contains("please answer"), "\(out)")
        #expect(out.contains("pending before answer: True"), "not denied: \(out)")
        #expect(out.contains("ANSWERED 1: allow once by root"), "\(out)")
        #expect(out.contains("get exit 0"), "allowed once: \(out)")
    }
}

