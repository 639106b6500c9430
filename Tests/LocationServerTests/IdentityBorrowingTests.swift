#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import Testing

/// Issue 32, findings 1–3: an attack on the release build as unprivileged local users borrowed a trusted
/// program's identity three ways. Each test runs the real daemon, a rule trusting `/usr/bin/sleep` (which
/// never speaks for itself), and the attack as it was made, with real processes of other uids (setpriv).
@Suite("Identity that cannot be borrowed", .serialized, .enabled(if: getuid() == 0, "needs root to run clients as other users"))
struct IdentityBorrowingTests {
    typealias E2E = PolicyEndToEndTests
    static let trusted = "/usr/bin/sleep"
    static let rule = "[client trusted]\nexecutable = \(trusted)\naccess = always\naccuracy = full\n"

    /// A daemon whose rule gives `trusted` full accuracy and everyone else nothing, with the gpsd front on
    /// loopback; its socket directory open to other users.
    static func daemon() throws -> (DaemonProcess, port: UInt16, directory: String) {
        let port = try GpsdFrontEndToEndTests.freePort()
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = deny", clients: rule, rate: "4"),
                                       daemonKeys: "gpsd-listen = 127.0.0.1:\(port) [::1]:\(port)\n")
        _ = waitUntil(seconds: 10) { daemon.log.contains(" started socket=") }
        let directory = String(daemon.socketPath[..<daemon.socketPath.lastIndex(of: "/")!])
        chmod(directory, 0o777)
        return (daemon, port, directory)
    }

    /// Waits (bounded) until `condition` holds, looking every 10 ms; whether it did.
    static func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
        let end = monotonic() + seconds
        while monotonic() < end {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    /// The command name of `pid` (/proc/PID/comm).
    static func command(_ pid: pid_t) -> String? {
        guard case .success(let bytes) = FileDescriptorOps.readFile(atPath: "/proc/\(pid)/comm", maximumBytes: 64) else { return nil }
        return String(decoding: bytes.filter { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }

    // MARK: - Finding 1

    /// As uid B: listens on argv[1]; takes the TCP socket uid A sends, waits until A runs `sleep`, connects
    /// it to argv[2]:argv[3], watches, and prints what it reads for at most argv[4] seconds.
    static let borrower = """
        import os, socket, sys, time
        path, host, port, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        os.chmod(path, 0o777)
        srv.listen(1)
        c, _ = srv.accept()
        msg, fds, _, _ = socket.recv_fds(c, 32, 1)
        lender = int(msg)
        end = time.time() + 10
        while time.time() < end and open(f"/proc/{lender}/comm").read().strip() != "sleep":
            time.sleep(0.01)
        tcp = socket.socket(fileno=fds[0])
        tcp.connect((host, port))
        out, end = b"", time.time() + seconds
        try:
            tcp.sendall(b'?WATCH={"enable":true,"json":true};\\n')
            tcp.settimeout(0.5)
            while time.time() < end:
                try:
                    d = tcp.recv(65536)
                    if not d:
                        break
                    out += d
                except socket.timeout:
                    pass
        except OSError as e:
            out += f"[{e}]".encode()
        sys.stdout.buffer.write(out + b"[done]")
        """

    /// As uid A: makes a TCP socket (family of argv[2]), hands it to the borrower at argv[1], and execs the
    /// trusted program argv[3], keeping the socket.
    static let lender = """
        import os, socket, sys, time
        path, host, trusted = sys.argv[1], sys.argv[2], sys.argv[3]
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        s.set_inheritable(True)
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        u.connect(path)
        socket.send_fds(u, [str(os.getpid()).encode()], [s.fileno()])
        os.execv(trusted, [trusted, "8"])
        """

    @Test("finding 1: a second uid cannot borrow a trusted program's identity through a socket handed over SCM_RIGHTS",
          arguments: ["127.0.0.1", "::1"])
    func secondUserBorrows(host: String) throws {
        let (daemon, port, directory) = try Self.daemon()
        defer { daemon.stop() }
        let path = directory + "/handover-\(host == "::1" ? 6 : 4).sock"
        let borrower = try E2E.start(["setpriv", "--reuid=2", "--regid=2", "--clear-groups", "/usr/bin/python3", "-c", Self.borrower,
                                      path, host, String(port), "4"], in: directory)
        #expect(Self.waitUntil(seconds: 10) { access(path, F_OK) == 0 })
        let lender = try E2E.start(["setpriv", "--reuid=1", "--regid=1", "--clear-groups", "/usr/bin/python3", "-c", Self.lender,
                                    path, host, Self.trusted], in: directory)
        defer { kill(lender.pid, SIGKILL); _ = E2E.finish(lender) }
        let (_, out, errors) = E2E.finish(borrower)
        #expect(out.contains("[done]"), "the borrower did not run to its end: \(out) \(errors)")
        #expect(!out.contains(#""lat""#) && !out.contains(#""class":"SKY""#), "uid 2 read as /usr/bin/sleep: \(out.prefix(800))")
        #expect(daemon.log.contains("processes of other users hold the other end"), "\(daemon.log.suffix(1500))")
    }

    // MARK: - Finding 2

    /// As one uid: connects to argv[1]:argv[2] and watches, parks a duplicate of the socket in flight
    /// (SCM_RIGHTS on a socket pair, not received), and execs the trusted program argv[3]; a child picks the
    /// duplicate up once the file argv[4] exists, then reads until the daemon closes it (at most 8 s) and
    /// prints `picked up; closed after SECONDS` or `picked up; open`.
    static let parker = """
        import os, socket, sys, time
        host, port, trusted, go = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
        s = socket.create_connection((host, port))
        s.sendall(b'?WATCH={"enable":true,"json":true};\\n')
        a, b = socket.socketpair()
        socket.send_fds(a, [b"x"], [s.fileno()])
        if os.fork() == 0:
            s.close(); a.close()
            while not os.path.exists(go):
                time.sleep(0.01)
            _, fds, _, _ = socket.recv_fds(b, 8, 1)
            picked = time.time()
            t = socket.socket(fileno=fds[0])
            t.settimeout(0.2)
            while time.time() < picked + 8:
                try:
                    if not t.recv(65536):
                        print(f"picked up; closed after {time.time() - picked:.3f}", flush=True)
                        os._exit(0)
                except socket.timeout:
                    pass
            print("picked up; open", flush=True)
            os._exit(0)
        b.close()
        s.set_inheritable(True)
        os.execv(trusted, [trusted, "20"])
        """

    @Test("finding 2: a descriptor parked in flight and picked up after the trusted program was identified is cut off")
    func inFlightDescriptor() throws {
        let (daemon, port, directory) = try Self.daemon()
        defer { daemon.stop() }
        let go = directory + "/go"
        // The daemon stopped while the attacker connects, parks and execs: it identifies the connection only once
        // the trusted program alone holds it — the race the attacker wins by other means.
        kill(daemon.pid, SIGSTOP)
        let parker = try E2E.start(["setpriv", "--reuid=1", "--regid=1", "--clear-groups", "/usr/bin/python3", "-c", Self.parker,
                                    "127.0.0.1", String(port), Self.trusted, go], in: directory)
        defer { kill(parker.pid, SIGKILL); _ = E2E.finish(parker) }
        let running = Self.waitUntil(seconds: 10) { Self.command(parker.pid) == "sleep" }
        kill(daemon.pid, SIGCONT)
        try #require(running, "\(E2E.finish(parker))")
        // Identified as the trusted program, and served.
        #expect(Self.waitUntil(seconds: 10) { daemon.log.contains("client.exe=\(Self.trusted)") && daemon.log.contains("client connected") },
                "\(daemon.log.suffix(1500))")
        FileManager.default.createFile(atPath: go, contents: Data())
        let read = { FileManager.default.contents(atPath: parker.output).map { String(decoding: $0, as: UTF8.self) } ?? "" }
        #expect(Self.waitUntil(seconds: 12) { read().contains("picked up") })
        let out = read()
        let closed = out.split(whereSeparator: { $0 == " " || $0 == "\n" }).last.flatMap { Double($0) }
        #expect(out.contains("closed after"), "the connection stayed open after another program picked it up: \(out)")
        // The holders are looked at every second (the sweep), and a look takes a few ms here.
        #expect((closed ?? 99) < 2.5, "\(out)")
        #expect(daemon.log.contains("the processes holding this connection changed"), "\(daemon.log.suffix(1500))")
    }

    @Test("a user rule's gpsd client that runs another program with the socket inherited keeps its location")
    func inheritedByChildKeepsUserGrant() throws {
        let port = try GpsdFrontEndToEndTests.freePort()
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = deny", clients: "[client daemon]\nuser = daemon\naccess = always\naccuracy = full\n",
                                                          rate: "4"),
                                       daemonKeys: "gpsd-listen = 127.0.0.1:\(port)\n")
        defer { daemon.stop() }
        _ = Self.waitUntil(seconds: 10) { daemon.log.contains(" started socket=") }
        let directory = String(daemon.socketPath[..<daemon.socketPath.lastIndex(of: "/")!])
        chmod(directory, 0o777)
        // As libgps's socket is (not close-on-exec), a hook program started with system() holds it too.
        let out = try E2E.run(["setpriv", "--reuid=1", "--regid=1", "--clear-groups", "/usr/bin/python3", "-c", """
            import os, socket, sys, time
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
            s.set_inheritable(True)
            s.sendall(b'?WATCH={"enable":true,"json":true};\\n')
            os.system("/usr/bin/sleep 3")
            s.settimeout(0.5)
            out, end = b"", time.time() + 2
            while time.time() < end:
                try:
                    d = s.recv(65536)
                    if not d:
                        out += b"[closed]"
                        break
                    out += d
                except socket.timeout:
                    pass
            sys.stdout.buffer.write(out)
            """, String(port)], in: directory).stdout
        #expect(out.contains(#""lat""#) && !out.contains("[closed]"), "\(out.suffix(600))\n\(daemon.log.suffix(1500))")
        #expect(!daemon.log.contains("the processes holding this connection changed"), "\(daemon.log.suffix(1500))")
    }

    @Test("finding 2, what a parked descriptor collects: a gpsd client that reads nothing is cut after client-timeout")
    func tcpNonReaderCut() throws {
        let port = try GpsdFrontEndToEndTests.freePort()
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = always\naccuracy = full", rate: "4"),
                                       daemonKeys: "gpsd-listen = 127.0.0.1:\(port)\nclient-timeout = 2s\n")
        defer { daemon.stop() }
        _ = Self.waitUntil(seconds: 10) { daemon.log.contains(" started socket=") }
        let directory = String(daemon.socketPath[..<daemon.socketPath.lastIndex(of: "/")!])
        // Watches and never reads: on loopback what the daemon sends lands in its receive queue, acknowledged.
        let sleeper = try E2E.start(["/usr/bin/python3", "-c", """
            import socket, sys, time
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
            s.sendall(b'?WATCH={"enable":true,"json":true};\\n')
            time.sleep(30)
            """, String(port)], in: directory)
        defer { kill(sleeper.pid, SIGKILL); _ = E2E.finish(sleeper) }
        // Before, it was seen only once its receive buffer was full: minutes of reports at this rate.
        #expect(Self.waitUntil(seconds: 15) { daemon.log.contains("read nothing for 2 s") }, "\(daemon.log.suffix(1500))")
    }

    // MARK: - Finding 3

    /// A library whose constructor, in any program it is preloaded into, POLLs the daemon at $LOCATIOND_SOCKET and
    /// prints the answer; with $SCRUB set it first blanks its own LD_ variables in the environment block, so that
    /// only the memory map shows it.
    static let preload = #"""
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/socket.h>
        #include <sys/un.h>
        #include <unistd.h>
        extern char **environ;
        __attribute__((constructor)) static void speak(void) {
            const char *path = getenv("LOCATIOND_SOCKET");
            if (!path) return;
            if (getenv("SCRUB"))
                for (char **e = environ; *e; e++)
                    if (strncmp(*e, "LD_", 3) == 0) memset(*e, 'X', strlen(*e));
            int fd = socket(AF_UNIX, SOCK_STREAM, 0);
            struct sockaddr_un a = { .sun_family = AF_UNIX };
            strncpy(a.sun_path, path, sizeof a.sun_path - 1);
            if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { perror("connect"); _exit(2); }
            const char *ask = "{\"class\":\"POLL\",\"timeout\":5}\n";
            if (write(fd, ask, strlen(ask)) < 0) _exit(3);
            char buf[65536];
            ssize_t n;
            while ((n = read(fd, buf, sizeof buf - 1)) > 0) {
                buf[n] = 0;
                fputs(buf, stdout);
                fflush(stdout);
                if (strstr(buf, "\"POLL\"") || strstr(buf, "ERROR")) break;
            }
            _exit(0);
        }
        """#

    @Test("finding 3: LD_PRELOAD does not make code the trusted executable (the variable, or only the mapped library)",
          arguments: [false, true])
    func preloadedCode(scrubbed: Bool) throws {
        let (daemon, _, directory) = try Self.daemon()
        defer { daemon.stop() }
        // The attacker's own library, in a directory of its own (uid 1), as it would build it.
        let source = directory + "/x.c", library = directory + "/x.so"
        FileManager.default.createFile(atPath: source, contents: Data(Self.preload.utf8))
        let built = try E2E.run(["cc", "-shared", "-fPIC", "-o", library, source], in: directory)
        try #require(built.status == 0, "\(built.stderr)")
        chown(library, 1, 1)
        var environment = ["env", "LOCATIOND_SOCKET=\(daemon.socketPath)", "LD_PRELOAD=\(library)"]
        if scrubbed { environment.append("SCRUB=1") }
        let out = try E2E.run(["setpriv", "--reuid=1", "--regid=1", "--clear-groups"] + environment + [Self.trusted, "5"], in: directory).stdout
        #expect(out.contains(#""class":"VERSION""#), "the preloaded code did not reach the daemon: \(out)")
        #expect(!out.contains(#""lat""#), "preloaded code got the location as /usr/bin/sleep: \(out.prefix(800))")
        let why = scrubbed ? "runs code from \(library), owned by uid 1" : "LD_PRELOAD in its environment"
        #expect(daemon.log.contains(why), "\(daemon.log.suffix(1500))")
    }

    // MARK: - Identity strength, shown

    @Test("status, the agent's question and the audit say how each client was identified")
    func strengthShown() throws {
        let (daemon, _, directory) = try Self.daemon()
        defer { daemon.stop() }
        // locationctl, root's and cleanly loaded: a verified executable.
        let status = try E2E.run([AuditFloodTests.locationctl, "--socket", daemon.socketPath, "status"], in: directory).stdout
        #expect(status.contains("this client: \(AuditFloodTests.locationctl), pid ") && status.contains(": verified executable"), "\(status)")
        // python as uid 1: an interpreter, unverified; its refused AUTHORIZE is audited with that.
        let python = try E2E.run(["setpriv", "--reuid=1", "--regid=1", "--clear-groups", "/usr/bin/python3", "-c", E2E.pythonClient,
                                  daemon.socketPath, "0.5", #"{"class":"STATUS"}"#, #"{"class":"AUTHORIZE"}"#], in: directory).stdout
        #expect(python.contains(#""identified":"unverified (an interpreter (/usr/bin/python3"#), "\(python)")
        let audit = try E2E.run([AuditFloodTests.locationctl, "--socket", daemon.socketPath, "audit"], in: directory).stdout
        #expect(audit.contains("\(TCPPeerTests.realPath("/usr/bin/python3") ?? "?"), unverified"), "\(audit)")
        #expect(daemon.log.contains(#"client.identified="unverified (an interpreter"#), "\(daemon.log.suffix(1500))")
    }
}
