#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import TestSupport
import Testing

/// Issue 12, holes 4–7: what a reduced client could learn from timing, and memory a user could take —
/// the real daemon on the bundled capture, attackers as other uids (setpriv).
@Suite("Unprivileged attacks on timing and memory, end to end", .serialized)
struct AbuseTimingTests {
    typealias E2E = PolicyEndToEndTests

    /// Rules: `daemon` (uid 1) and `bin` (uid 2) see the location at reduced accuracy; root at full.
    static let reducedUsers = """
        [client reduced]
        user = daemon
        access = always
        accuracy = reduced

        [client reduced2]
        user = bin
        access = always
        accuracy = reduced

        \(E2E.rootSeesAll)
        """

    /// Connects to argv[1], sends argv[3] as a line, and for argv[2] seconds prints each line received
    /// as `SECONDS LINE` (CLOCK_MONOTONIC seconds, so that two clients' times compare).
    static let timedClient = """
        import socket, sys, time
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sys.argv[1])
        start = time.monotonic()
        s.sendall(sys.argv[3].encode() + b"\\n")
        s.settimeout(0.2)
        buf = b""
        while time.monotonic() - start < float(sys.argv[2]):
            try:
                d = s.recv(65536)
                if not d: break
                buf += d
                while b"\\n" in buf:
                    line, buf = buf.split(b"\\n", 1)
                    print("%.3f %s" % (time.monotonic(), line.decode()))
            except socket.timeout:
                pass
        """

    static func timed(_ socket: String, uid: Int, request: String, seconds: Double, cgroup: String? = nil) throws -> E2E.Started {
        let directory = String(socket[..<socket.lastIndex(of: "/")!])
        chmod(directory, 0o755)
        var command = ["setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/python3", "-c", timedClient,
                       socket, String(seconds), request]
        if let cgroup {
            // Enter a cgroup of the attacker's choosing first, as `systemd-run --user --scope` would.
            command = ["sh", "-c", "echo $$ > \(cgroup)/cgroup.procs && exec \"$@\"", "sh"] + command
        }
        return try E2E.start(command, in: directory)
    }

    /// The times (s) of the lines of `class` in a `timedClient` output.
    static func times(_ output: String, of name: String) -> [Double] {
        output.split(separator: "\n").compactMap { line in
            guard line.contains(#""class":"\#(name)""#) else { return nil }
            return Double(line.prefix { $0 != " " })
        }
    }

    /// Waits (up to 10 s) until root, watching, gets a TPV with a position: the replay has a fix.
    static func waitForFix(_ root: RawClient) throws {
        root.send(#"{"class":"WATCH"}"#)
        let end = monotonic() + 10
        while let tpv = root.message("TPV", timeout: max(0, end - monotonic())) { if tpv["lat"] != nil { return } }
        Issue.record("no fix within 10 s")
    }

    @Test("hole 4: a reduced client's reports come on the cadence whatever its filters (no grid-line timing)")
    func reducedCadence() throws {
        // At 8× the capture has a fix from ~1.1 s to ~10 s after the start (it loops every 10 s): the clients watch
        // within that. A 1.5 s cadence with its 0.15 s slack, more than the 0.125 s between epochs at 8× (with less,
        // reports could drift late in their slots; `ReducedPacing`).
        let interval = 1.5, slack = interval / 10
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = ask\nreduced-interval = 1500ms", clients: Self.reducedUsers,
                                                          rate: "8"))
        try Self.waitForFix(try RawClient(daemon.socketPath))  // past the capture's first epochs without a fix
        // One watches with a distance filter no reduced position could pass, the other with none. Each watches four
        // intervals: enough for three reports however late it joined its slot (up to an interval to the next slot,
        // then two more), with 1.5 s to spare for being identified and for the epochs' offsets in their slots.
        let seconds = 4 * interval
        let filtered = try Self.timed(daemon.socketPath, uid: 1, request: #"{"class":"WATCH","distanceFilter":1000000,"minInterval":0.5}"#,
                                      seconds: seconds)
        let plain = try Self.timed(daemon.socketPath, uid: 2, request: #"{"class":"WATCH"}"#, seconds: seconds)
        let a = Self.times(E2E.finish(filtered).stdout, of: "TPV"), b = Self.times(E2E.finish(plain).stdout, of: "TPV")
        // On the cadence, for both: before issue 12 the filtered one got a report only when the reduced
        // position changed cell — at the moment the true position crossed a grid line. One grid for both users
        // (issue 32, finding 4): the same reports at the same moments, one per slot — consecutive ones at least the
        // interval less the slack apart, a report and the next but one more than the interval (0.1 s for the clients'
        // reading). Whichever connected first may have had a report of its own before the other joined (a late joiner
        // waits for the next slot); every later one went to both.
        #expect(a.count >= 3 && abs(a.count - b.count) <= 1, "filtered \(a), plain \(b)")
        func shared(_ x: Double, _ other: [Double]) -> Bool { other.contains { abs($0 - x) < 0.2 } }
        #expect(a.dropFirst().allSatisfy { shared($0, b) } && b.dropFirst().allSatisfy { shared($0, a) }, "filtered \(a), plain \(b)")
        var moments: [Double] = []
        for t in (a + b).sorted() where moments.last.map({ t - $0 >= 0.2 }) ?? true { moments.append(t) }
        for (x, y) in zip(moments, moments.dropFirst()) { #expect(y - x >= interval - slack - 0.1, "\(moments)") }
        for (x, z) in zip(moments, moments.dropFirst(2)) { #expect(z - x >= interval - 0.1, "\(moments)") }
    }

    @Test("hole 5: a fresh systemd unit (cgroup) per connection gets no fresh reduced report")
    func pacingIgnoresUnit() throws {
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = ask\nreduced-interval = 60s", clients: Self.reducedUsers,
                                                          rate: "max"))
        var counts: [Int] = []
        for i in 0..<3 {
            let cgroup = "/sys/fs/cgroup/unified/locationd-attack-\(getpid())-\(i).scope"
            try #require(mkdir(cgroup, 0o755) == 0, "cannot make a cgroup: \(Errno.current)")
            defer { rmdir(cgroup) }
            let out = E2E.finish(try Self.timed(daemon.socketPath, uid: 1, request: #"{"class":"WATCH"}"#, seconds: 0.8, cgroup: cgroup)).stdout
            counts.append(Self.times(out, of: "TPV").count)
        }
        #expect(counts == [1, 0, 0])
        #expect(daemon.log.contains("locationd-attack-\(getpid())-1.scope"), "the daemon saw the units")
    }

    @Test("hole 6: a reduced client learns of fix loss no sooner than its paced reports would tell it")
    func reducedFixLoss() throws {
        // At 40× the capture loops every ~2 s, each loop starting without a fix for ~0.2 s. The reduced client
        // watches from the first fix for 5 s: through two losses, the second 1 s or more before it stops.
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = ask\nreduced-interval = 60s", clients: Self.reducedUsers,
                                                          rate: "40"))
        let root = try RawClient(daemon.socketPath)
        try Self.waitForFix(root)
        let reduced = try Self.timed(daemon.socketPath, uid: 1, request: #"{"class":"WATCH"}"#, seconds: 5)
        var rootLost = false
        let end = monotonic() + 5
        while monotonic() < end, !rootLost {
            if let state = root.message("STATE", timeout: 1), state["fix"]?.bool == false { rootLost = true }
        }
        let out = E2E.finish(reduced).stdout
        #expect(rootLost, "the full client is told of the loss at once")
        #expect(Self.times(out, of: "TPV").count == 1, "\(out)")
        #expect(!out.contains(#""fix":false"#), "\(out)")
    }

    /// The daemon's resident set, kB (/proc/PID/status VmRSS).
    static func residentKilobytes(_ pid: pid_t) -> Int {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/status") else { return 0 }
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// Opens argv[2] connections to argv[1] and sends argv[3] POLLs on each as fast as it can; prints how
    /// many ERRORs of each message came back.
    static let pollFlood = """
        import socket, sys, time, collections
        path, n, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
        line = b'{"class":"POLL","timeout":300}\\n'
        seen = collections.Counter()
        socks = []
        for i in range(n):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            s.settimeout(2)
            try:
                s.sendall(line * k)
            except OSError:
                pass
            socks.append(s)
        time.sleep(1)
        for s in socks:
            s.setblocking(False)
            try:
                d = s.recv(1 << 20)
            except OSError:
                d = b""
            for l in d.split(b"\\n"):
                if b'"ERROR"' in l: seen[l.decode().split('"message":"')[1].split('"')[0]] += 1
        for m, c in sorted(seen.items()): print(c, m)
        """

    /// Connects to argv[1], sends argv[2] as a line, and prints what it receives until a whole line has argv[3] in it
    /// (up to 10 s) or the daemon closes.
    static let untilLine = """
        import socket, sys, time
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sys.argv[1])
        s.sendall(sys.argv[2].encode() + b"\\n")
        s.settimeout(0.2)
        out, end = b"", time.monotonic() + 10
        while time.monotonic() < end and not any(sys.argv[3].encode() in l for l in out.split(b"\\n")[:-1]):
            try:
                d = s.recv(65536)
                if not d: break
                out += d
            except socket.timeout:
                pass
        sys.stdout.buffer.write(out)
        """

    @Test("hole 7: POLLs queued by one user are bounded; the daemon's memory stays flat")
    func pollMemory() throws {
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = ask", clients: Self.reducedUsers, rate: "4"),
                                       daemonKeys: "max-clients-per-user = 64")
        let directory = String(daemon.socketPath[..<daemon.socketPath.lastIndex(of: "/")!])
        chmod(directory, 0o755)
        usleep(500_000)
        let before = Self.residentKilobytes(daemon.pid)
        // The security review queued ~500 000 POLLs and took the daemon from 17 MB to ~400 MB.
        let out = try E2E.run(["setpriv", "--reuid=1", "--regid=1", "--clear-groups", "/usr/bin/python3", "-c", Self.pollFlood,
                               daemon.socketPath, "60", "900"], in: directory).stdout
        let after = Self.residentKilobytes(daemon.pid)
        #expect(out.contains("too many POLLs waiting"), "\(out)")
        // Under AddressSanitizer RSS measures its allocator, not the daemon: freed blocks wait in a quarantine
        // of up to 256 MB (measured +29 MB and, with more code on the path, +180 MB there), so no bound below
        // the original hole's ~400 MB would hold. The plain run checks the bound; LeakSanitizer the leaks.
        if !Sanitizers.address {
            #expect(after - before < 10_000, "RSS \(before) kB → \(after) kB")
        }
        // Another user still polls (the capture has a fix after its first ~2.5 s at 4×: the POLL waits for it).
        let other = try E2E.run(["setpriv", "--reuid=2", "--regid=2", "--clear-groups", "/usr/bin/python3", "-c", Self.untilLine,
                                 daemon.socketPath, #"{"class":"POLL","timeout":5}"#, #""class":"POLL""#], in: directory).stdout
        #expect(other.contains(#""class":"POLL""#), "\(other)")
        print("hole 7: daemon RSS \(before) kB before, \(after) kB after 60 × 900 POLLs")
    }
}
