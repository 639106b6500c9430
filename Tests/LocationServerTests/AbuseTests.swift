#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import TestSupport
import Testing

/// Issue 12: what an unprivileged local user (another uid, through setpriv) could do to the real
/// daemon, each attack next to a legitimate client that must not be affected.
@Suite("Unprivileged attacks, end to end", .serialized)
struct AbuseTests {
    typealias E2E = PolicyEndToEndTests

    /// Opens argv[2] connections to argv[1], reads each one's first line, prints
    /// `versions refused silent` and the refusal messages seen, then holds them for argv[3] seconds.
    /// With argv[4] `paced`, each connection waits (up to 0.3 s) for its first line before the next is
    /// opened, until one stays silent: a single client that the daemon identifies one by one, never
    /// more than one waiting to be identified.
    static let holdConnections = """
        import select, socket, sys, time
        path, n, hold = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
        paced = len(sys.argv) > 4 and sys.argv[4] == "paced"
        socks = []
        first = {}
        for i in range(n):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect(path)
                socks.append(s)
            except OSError:
                s.close()  # the listen backlog is full: the kernel refused it
                continue
            if paced and len(first) == len(socks) - 1:
                ready, _, _ = select.select([s], [], [], 0.3)
                if ready:
                    try:
                        first[s] = s.recv(4096)
                    except OSError:
                        first[s] = b""

        versions = refused = silent = 0
        messages = set()
        end = time.time() + 1.5
        pending = [s for s in socks if s not in first]
        while pending and time.time() < end:
            ready, _, _ = select.select(pending, [], [], max(0, end - time.time()))
            for s in ready:
                try:
                    first[s] = s.recv(4096)
                except OSError:
                    first[s] = b""
                pending.remove(s)
        for s in socks:
            d = first.get(s, None)
            if d is None: silent += 1
            elif b'"VERSION"' in d: versions += 1
            elif b'"ERROR"' in d:
                refused += 1
                messages.add(d.decode().split('"message":"')[1].split('"')[0])
            else: silent += 1
        print(versions, refused, silent)
        for m in sorted(messages): print(m)
        sys.stdout.flush()
        time.sleep(hold)
        """

    static func hold(_ socket: String, uid: Int, connections: Int, seconds: Double, paced: Bool = false) throws -> E2E.Started {
        let directory = String(socket[..<socket.lastIndex(of: "/")!])
        chmod(directory, 0o755)
        return try E2E.start(["setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/python3", "-c",
                              holdConnections, socket, String(connections), String(seconds)] + (paced ? ["paced"] : []), in: directory)
    }

    /// The first line of a `holdConnections` run: versions, refused, silent.
    static func counts(_ output: String) -> [Int] {
        (output.split(separator: "\n").first ?? "").split(separator: " ").compactMap { Int($0) }
    }

    @Test("STATUS counts another user's connections for an admin only")
    func statusCountsOwnUser() throws {
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = ask", clients: E2E.rootSeesAll))
        let holder = try Self.hold(daemon.socketPath, uid: 1, connections: 3, seconds: 3)
        usleep(1_000_000)
        let directory = String(daemon.socketPath[..<daemon.socketPath.lastIndex(of: "/")!])
        let asked = try E2E.start(["setpriv", "--reuid=2", "--regid=2", "--clear-groups", "/usr/bin/python3", "-c", """
            import json, socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(sys.argv[1]); f = s.makefile("rb")
            f.readline()
            s.sendall(b'{"class":"STATUS"}\\n')
            print(json.loads(f.readline())["clients"])
            """, daemon.socketPath], in: directory)
        #expect(E2E.finish(asked).stdout == "1\n", "uid 2 counts its own connection, not uid 1's")
        let root = try RawClient(daemon.socketPath)
        #expect(root.message("VERSION") != nil)
        root.send(#"{"class":"STATUS"}"#)
        #expect(root.message("STATUS")?["clients"]?.number == 4, "uid 1's 3 and root's")
        #expect(Self.counts(E2E.finish(holder).stdout) == [3, 0, 0])
    }

    @Test("one user cannot take every connection: a per-user cap, and room kept for root and agents")
    func connectionCaps() throws {
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = ask", clients: E2E.rootSeesAll),
                                       daemonKeys: "max-clients = 24\nmax-clients-per-user = 8")
        // Three users of the machine each try to take 30 connections and hold them.
        let first = try Self.hold(daemon.socketPath, uid: 1, connections: 30, seconds: 4)
        usleep(1_000_000)
        let second = try Self.hold(daemon.socketPath, uid: 2, connections: 30, seconds: 3)
        usleep(1_000_000)
        let third = try Self.hold(daemon.socketPath, uid: 3, connections: 30, seconds: 2)
        usleep(1_000_000)
        // The administrator and an agent still get in while all of them hold on.
        let root = try RawClient(daemon.socketPath)
        #expect(root.message("VERSION") != nil)
        root.send(#"{"class":"STATUS"}"#)
        let status = root.message("STATUS")
        let clients = status?["clients"]?.number
        #expect(clients == 22, "8 + 8 + 5 attackers' connections, and root's")
        let agent = try RawClient.agent(daemon.socketPath)
        let (a, b, c) = (E2E.finish(first).stdout, E2E.finish(second).stdout, E2E.finish(third).stdout)
        #expect(Self.counts(a) == [8, 22, 0], "\(a)")
        // 30 connections at once: refused by the per-user rate of new connections (a burst of 8 here,
        // `UserConnectionRate`), by the bound on connections waiting to be identified
        // (`PendingIdentifications`, also 8), or by the per-user bound on clients: all uid 1's alone.
        #expect(a.contains("too many clients of uid 1 (8)") || a.contains("waiting to be identified")
                || a.contains("too many new connections of this user"), "\(a)")
        #expect(Self.counts(b) == [8, 22, 0], "\(b)")
        // 24 − 3 kept for administrators = 21 for everyone else: 16 taken, 5 left for the third user.
        #expect(Self.counts(c) == [5, 25, 0], "\(c)")
        #expect(c.contains("of which 3 are kept for administrators"), "\(c)")
    }

    /// CPU seconds a process has used (utime + stime from /proc/PID/stat).
    static func cpuSeconds(_ pid: pid_t) -> Double {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/stat") else { return 0 }
        let text = String(decoding: data, as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the name: state is field 3, utime 14, stime 15 (proc(5)); here index 0 is field 3.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    @Test("at the open-file limit the daemon backs off accepting instead of spinning, logs a bounded amount, and recovers")
    func descriptorExhaustion() throws {
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = ask", clients: E2E.rootSeesAll, rate: "1"),
                                       daemonKeys: "max-clients-per-user = 1000",
                                       launcher: ["prlimit", "--nofile=48:48", "--"])
        // The warning is logged around the time the socket starts listening: wait for it (slow under sanitizers).
        #expect(daemon.waitForLog(timeout: 5) { $0.contains("the open-file limit is below what max-clients needs") })
        let logBefore = daemon.log.utf8.count
        // Paced, so that the bound on connections waiting to be identified (8 per user) refuses none of
        // them: else, on a loaded machine, it refuses so many that the descriptors never run out.
        let attack = try Self.hold(daemon.socketPath, uid: 1, connections: 80, seconds: 4, paced: true)
        let began = monotonic()
        // Measured from the moment the daemon is at its limit (it refuses a connection it has no descriptors to
        // identify, or an accept fails), not after a guessed second: under a sanitizer the connections before
        // it take 1.5 s, and their passes (~70 ms each there) are the cost of admitting clients, not of the limit.
        #expect(daemon.waitForLog(timeout: 20) { $0.contains("out of file descriptors") || $0.contains("accept failed") },
                "the daemon never ran out of descriptors")
        let cpuBefore = Self.cpuSeconds(daemon.pid)
        usleep(2_000_000)
        let cpu = Self.cpuSeconds(daemon.pid) - cpuBefore
        // The security review measured ~90 % of a CPU and ~35 MB of log in 10 s; a pass at the limit cost
        // 30–50 ms under AddressSanitizer until the daemon looked for free descriptors before it
        // (`IdentificationBatch.outOfDescriptors(count:)`): 0.8 s in 2 s there.
        #expect(cpu < 0.3, "daemon used \(cpu) s of CPU in 2 s at the descriptor limit")
        let out = E2E.finish(attack).stdout
        let lasted = monotonic() - began
        #expect((Self.counts(out).first ?? 0) > 0, "\(out)")
        let logged = daemon.log.utf8.count - logBefore
        let failures = daemon.log.components(separatedBy: "accept failed").count - 1
        // At most one line per 10 s while the attack lasts, with the count of failures.
        // It did reach the limit: accepts failed, or connections were closed unanswered (out of
        // descriptors to identify them) or waited in the backlog.
        #expect(failures >= 1 || (Self.counts(out).last ?? 0) > 0, "\(out)")
        #expect(!out.contains("exited before it could be identified"), "not the clients' doing: \(out)")
        #expect(failures <= 1 + Int(lasted / 10), "\(failures) accept-failure lines in \(lasted) s")
        #expect(logged < 200_000, "\(logged) bytes of log")
        // The attacker is gone: everyone gets in again. (It did not when no timer had been armed before the
        // descriptors ran out: libdispatch could not make the timerfd of the one that resumes accepting,
        // and it never fired — NativeFront.start.)
        usleep(1_200_000)
        let root = try RawClient(daemon.socketPath)
        #expect(root.message("VERSION") != nil)
    }

    // Under a sanitizer 60 python clients and their identification do not fit their 8 s (CI's run under
    // AddressSanitizer heard 2 of the 6 questions, and so did one under ThreadSanitizer): a throughput test,
    // run by the plain suite only.
    @Test("a flood of AUTHORIZE from one user reaches the agent as a handful of questions; the agent stays and answers others",
          .disabled(if: Sanitizers.any, "timing under a sanitizer: the plain suite runs it"))
    func agentFlood() throws {
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = ask\nask-timeout = 20s"))
        let directory = String(daemon.socketPath[..<daemon.socketPath.lastIndex(of: "/")!])
        chmod(directory, 0o755)
        let agent = try RawClient.agent(daemon.socketPath)
        // The attacker runs 20 copies of python (20 "programs"), each with 3 connections asking again
        // and again, with names of zero-width joiners.
        let python = try E2E.pythonAllowed().python
        let name = String(repeating: "\u{200D}", count: 300)
        var attackers: [E2E.Started] = []
        for i in 0..<20 {
            let copy = directory + "/py\(i)"
            _ = try E2E.run(["cp", python, copy], in: directory)
            for _ in 0..<3 {
                let lines = Array(repeating: #"{"class":"AUTHORIZE","authorization":"persistent","name":"\#(name)"}"#, count: 30)
                // Each lives 8 s: long enough to be identified and heard under a sanitizer on a loaded machine.
                attackers.append(try E2E.start(["setpriv", "--reuid=1", "--regid=1", "--clear-groups", copy, "-c", E2E.pythonClient,
                                                daemon.socketPath, "8"] + lines, in: directory))
            }
        }
        var asks = 0
        while let ask = agent.message("ASK", timeout: 4) {
            #expect(ask["client"]?.object?["uid"]?.number == 1)
            asks += 1
        }
        // One question per program at a time, six a minute per user.
        #expect(asks == 6, "\(asks) questions reached the agent")
        for attacker in attackers { _ = E2E.finish(attacker) }
        // Another user's question still reaches the agent, which answers it.
        let legit = try E2E.startPython(daemon.socketPath, uid: 2, lines: [#"{"class":"AUTHORIZE","authorization":"once"}"#,
                                                                           "wait:authorizedOnce"], seconds: 5)
        var answered = false
        while let ask = agent.message("ASK", timeout: 5) {
            guard ask["client"]?.object?["uid"]?.number == 2, let id = ask["id"]?.number else { continue }
            agent.send(#"{"class":"ANSWER","id":\#(Int(id)),"answer":"allowOnce"}"#)
            answered = true
            break
        }
        #expect(answered)
        let out = E2E.finish(legit).stdout
        #expect(out.contains(#""status":"authorizedOnce""#), "\(out.suffix(500))")
    }

    @Test("hole 8: admin rights come from the connecting process's own groups, not /etc/group")
    func adminByKernelGroups() throws {
        // A group that lists `daemon` (uid 1) as a member in /etc/group, made for this test.
        let group = "lctest\(getpid() % 100000)"
        let directory = "/tmp"
        #expect(try E2E.run(["groupadd", group], in: directory).status == 0)
        defer { _ = try? E2E.run(["groupdel", group], in: directory) }
        #expect(try E2E.run(["gpasswd", "-a", "daemon", group], in: directory).status == 0)
        let gid = try #require(getgrnam(group)?.pointee.gr_gid)
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = ask"), daemonKeys: "admin-group = \(group)")
        let socketDirectory = String(daemon.socketPath[..<daemon.socketPath.lastIndex(of: "/")!])
        chmod(socketDirectory, 0o755)
        func grants(_ groups: [String]) throws -> String {
            try E2E.run(["setpriv", "--reuid=1", "--regid=1"] + groups + ["/usr/bin/python3", "-c", E2E.pythonClient,
                        daemon.socketPath, "0.5", #"{"class":"GRANTS"}"#], in: socketDirectory).stdout
        }
        // The process dropped its groups: /etc/group still lists daemon as a member, the kernel does not.
        let dropped = try grants(["--clear-groups"])
        #expect(dropped.contains("permission denied"), "\(dropped)")
        // With the group among its own: admin.
        let kept = try grants(["--groups=\(gid)"])
        #expect(kept.contains(#""class":"GRANTS""#), "\(kept)")
    }

    /// Connects to argv[1]; a child keeps the socket and POLLs through it, printing what it gets, while the
    /// process that connected execs argv[2] (a program the policy trusts).
    static let execRace = """
        import os, socket, sys, time
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.set_inheritable(True)
        s.connect(sys.argv[1])
        if os.fork() == 0:
            time.sleep(0.3)
            s.sendall(b'{"class":"POLL","timeout":2}\\n')
            s.settimeout(0.5)
            out = b""
            end = time.time() + 3
            while time.time() < end:
                try:
                    d = s.recv(65536)
                    if not d: break
                    out += d
                except OSError:
                    pass
            sys.stdout.buffer.write(out)
            sys.stdout.flush()
            os._exit(0)
        os.execv(sys.argv[2], [sys.argv[2], "4"])
        """

    @Test("the process that connected cannot exec a trusted program and leave its socket to another (an exec race)")
    func execRaceGetsNothing() throws {
        let trusted = "/usr/bin/sleep"
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = ask", clients: """
            [client trusted]
            executable = \(trusted)
            access = always
            accuracy = full
            """, rate: "4"))
        let directory = String(daemon.socketPath[..<daemon.socketPath.lastIndex(of: "/")!])
        chmod(directory, 0o755)
        usleep(3_000_000)  // a fix by now
        for attempt in 0..<3 {
            let out = try E2E.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                                   Self.execRace, daemon.socketPath, trusted], in: directory).stdout
            #expect(out.contains("requests must come from the process that connected"), "attempt \(attempt): \(out)")
            #expect(!out.contains(#""lat""#) && !out.contains("TPV"), "attempt \(attempt): \(out)")
        }
    }
}
