#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import TestSupport
import Testing

/// When In Use with the real daemon (issue 14): a When-In-Use client receives nothing while its user
/// has no active login session and resumes when one is active, told by AUTHORIZATION.
///
/// The session state is injected at the libsystemd call funnel: the daemon runs with `LD_PRELOAD` of a
/// small library (`LoginShim.source`, built here) that defines libsystemd's own `sd_uid_get_state` and
/// `sd_login_monitor_*` over a directory of files — `DIR/UID` holds logind's word for that user — with
/// an inotify descriptor as the monitor, as libsystemd's is. Nothing of the daemon's is replaced.
@Suite("When In Use, end to end", .serialized)
struct WhenInUseEndToEndTests {
    enum LoginShim {
        static let source = #"""
            #include <stdint.h>
            #include <stdio.h>
            #include <stdlib.h>
            #include <string.h>
            #include <sys/inotify.h>
            #include <sys/types.h>
            #include <unistd.h>

            typedef struct sd_login_monitor sd_login_monitor;

            static const char *directory(void) {
                const char *d = getenv("LOCATIOND_TEST_LOGIN_DIR");
                return d ? d : "/nonexistent";
            }

            int sd_uid_get_state(uid_t uid, char **state) {
                char path[4096], word[64] = {0};
                snprintf(path, sizeof path, "%s/%u", directory(), (unsigned)uid);
                FILE *f = fopen(path, "r");
                if (f) {
                    if (!fgets(word, sizeof word, f)) word[0] = 0;
                    fclose(f);
                } else {
                    strcpy(word, "offline");
                }
                word[strcspn(word, "\n")] = 0;
                *state = strdup(word);
                return *state ? 0 : -12;
            }

            int sd_login_monitor_new(const char *category, sd_login_monitor **ret) {
                (void)category;
                int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
                if (fd < 0) return -1;
                if (inotify_add_watch(fd, directory(), IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE) < 0) { close(fd); return -1; }
                *ret = (sd_login_monitor *)(intptr_t)(fd + 1);
                return 0;
            }

            int sd_login_monitor_get_fd(sd_login_monitor *m) { return (int)(intptr_t)m - 1; }

            int sd_login_monitor_flush(sd_login_monitor *m) {
                char buffer[4096];
                while (read((int)(intptr_t)m - 1, buffer, sizeof buffer) > 0) {}
                return 0;
            }

            sd_login_monitor *sd_login_monitor_unref(sd_login_monitor *m) {
                if (m) close((int)(intptr_t)m - 1);
                return NULL;
            }
            """#

        /// Builds the library into `directory`; its path.
        static func build(in directory: String) throws -> String {
            let source = directory + "/login-shim.c", library = directory + "/login-shim.so"
            FileManager.default.createFile(atPath: source, contents: Data(Self.source.utf8))
            let built = try PolicyEndToEndTests.run(["cc", "-shared", "-fPIC", "-o", library, source], in: directory)
            guard built.status == 0 else { throw Errno(rawValue: EINVAL) }
            return library
        }
    }

    /// A process run in phases: it prints one line of two counts per phase, then waits for a line on its
    /// standard input before the next.
    final class PhaseProcess {
        private var pid: pid_t = 0
        private let input: Int32
        private let output: Int32

        init(_ arguments: [String]) throws {
            // A process that ended early must fail the test, not kill the test run with SIGPIPE.
            signal(SIGPIPE, SIG_IGN)
            var toChild: [Int32] = [0, 0], fromChild: [Int32] = [0, 0]
            guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else { throw Errno.current }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
            posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
            posix_spawn_file_actions_addopen(&actions, 2, "/tmp/locationd-phase-process.err", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            posix_spawn_file_actions_addclose(&actions, toChild[1])
            posix_spawn_file_actions_addclose(&actions, fromChild[0])
            let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) } }
            guard posix_spawn(&pid, arguments[0], &actions, nil, argv, environ) == 0 else { throw Errno.current }
            close(toChild[0])
            close(fromChild[1])
            input = toChild[1]
            output = fromChild[0]
        }

        /// The next phase's counts: TPVs with a position, and without one; nil when the process ended.
        func read() -> (Int, Int)? {
            var line: [UInt8] = []
            var byte: UInt8 = 0
            while Glibc.read(output, &byte, 1) == 1, byte != 10 { line.append(byte) }
            let numbers = String(decoding: line, as: UTF8.self).split(separator: " ").compactMap { Int($0) }
            return numbers.count == 2 ? (numbers[0], numbers[1]) : nil
        }

        /// Lets the process go on to its next phase.
        func proceed() { _ = write(input, "\n", 1) }

        /// Waits for the process to end.
        func finish() {
            close(input)
            close(output)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }

    /// Sets logind's word for `uid` in `directory`, atomically (the monitor sees the rename).
    static func setState(_ word: String, uid: Int, in directory: String) {
        let temporary = directory + "/.\(uid).new"
        FileManager.default.createFile(atPath: temporary, contents: Data((word + "\n").utf8))
        rename(temporary, directory + "/\(uid)")
    }

    /// Lines from `client` until `until` matches one (included) or `timeout` passes.
    static func lines(_ client: RawClient, until: (String) -> Bool, timeout: Double) -> [String] {
        var out: [String] = []
        let end = monotonic() + timeout
        while let line = client.line(timeout: max(0, end - monotonic())) {
            out.append(line)
            if until(line) { break }
        }
        return out
    }

    @Test("a When-In-Use client streams while the session is active, gets nothing while it is not, and resumes")
    func pausesAndResumes() throws {
        var template = Array("/tmp/locationd-logins-XXXXXX".utf8CString)
        let logins = String(cString: try #require(TemporaryDirectories.mkdtemp(&template)))
        defer { _ = try? FileManager.default.removeItem(atPath: logins) }
        let shim = try LoginShim.build(in: logins)
        // Its clients in a login session, where When In Use follows logind's word (outside every session, a
        // program is in use while it runs: `headlessBox`).
        let session = try LoginSessionCgroup()
        defer { session.leave() }
        Self.setState("active", uid: 0, in: logins)
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = ask\naccuracy = full"),
                                       launcher: ["env", "LD_PRELOAD=\(shim)", "LOCATIOND_TEST_LOGIN_DIR=\(logins)"])
        // The administrator grants When In Use ahead of asking, with locationctl.
        let grant = try PolicyEndToEndTests.run([AuditFloodTests.locationctl, "--socket", daemon.socketPath, "grant", "--executable",
                                                 PolicyEndToEndTests.selfExecutable, "--user", "0", "--when-in-use"], in: daemon.directory)
        #expect(grant.status == 0 && grant.stdout.hasPrefix("granted When In Use access to"), "\(grant)")
        let admin = try RawClient(daemon.socketPath)
        admin.send(#"{"class":"GRANTS"}"#)
        let granted = try #require(admin.message("GRANTS"))
        guard case .array(let persistent)? = granted["persistent"] else { Issue.record("GRANTS without persistent"); return }
        #expect(persistent.first?.object?["whenInUse"]?.bool == true)

        let client = try RawClient(daemon.socketPath)
        client.send(#"{"class":"AUTHORIZE","authorization":"whenInUse"}"#)
        let authorized = try #require(client.message("AUTHORIZATION"))
        #expect(authorized["status"]?.string == "authorizedWhenInUse" && authorized["accuracy"]?.string == "full")
        #expect(authorized["inUse"] == nil)
        client.send(#"{"class":"WATCH"}"#)
        #expect(client.message("TPV") != nil, "streams while the session is active")

        // The session goes inactive (another user at the seat): told, then not one position.
        Self.setState("online", uid: 0, in: logins)
        let toPause = Self.lines(client, until: { $0.contains(#""class":"AUTHORIZATION""#) }, timeout: 5)
        let paused = try #require(toPause.last.flatMap(JSONValue.object))
        #expect(paused["status"]?.string == "authorizedWhenInUse" && paused["inUse"]?.bool == false && paused["accuracy"] == nil,
                "\(toPause.last ?? "no AUTHORIZATION")")
        let during = Self.lines(client, until: { _ in false }, timeout: 1.5)
        #expect(!during.contains { $0.contains("\"TPV\"") || $0.contains("\"lat\"") }, "\(during.prefix(3))")
        // A new connection of the same program meanwhile: authorized, watching, but nothing; POLL is refused.
        let another = try RawClient(daemon.socketPath)
        another.send(#"{"class":"AUTHORIZATION"}"#)
        #expect(another.message("AUTHORIZATION")?["inUse"]?.bool == false)
        another.send(#"{"class":"POLL","timeout":1}"#)
        #expect(another.message("ERROR")?["message"]?.string?.hasPrefix("not in use") == true)

        // Active again: told, and positions resume on the same WATCH.
        Self.setState("active", uid: 0, in: logins)
        let toResume = Self.lines(client, until: { $0.contains(#""class":"AUTHORIZATION""#) }, timeout: 5)
        #expect(!toResume.contains { $0.contains("\"TPV\"") }, "no position before the resume is announced")
        let resumed = try #require(toResume.last.flatMap(JSONValue.object))
        #expect(resumed["status"]?.string == "authorizedWhenInUse" && resumed["inUse"] == nil && resumed["accuracy"]?.string == "full")
        #expect(client.message("TPV") != nil, "streams again")
    }

    /// A gpsd-protocol client over TCP as root: watches, and for each phase (separated by `marker` lines on
    /// standard input) prints how many TPVs with a position and without one it got.
    static let gpsdClient = """
        import socket, sys, time
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
        s.settimeout(0.2)
        s.sendall(b'?WATCH={"enable":true,"json":true};\\n')
        buffer = b""
        for phase in sys.argv[2:]:
            seconds = float(phase)
            end = time.time() + seconds
            with_position = without = 0
            while time.time() < end:
                try:
                    d = s.recv(65536)
                    if not d: break
                    buffer += d
                except socket.timeout:
                    pass
                while b"\\n" in buffer:
                    line, buffer = buffer.split(b"\\n", 1)
                    if b'"class":"TPV"' in line:
                        if b'"lat"' in line: with_position += 1
                        else: without += 1
            print(with_position, without, flush=True)
            sys.stdin.readline()
        """

    @Test("the gpsd front: a When-In-Use gpsd client gets gpsd's no-fix TPVs while not in use, positions again after")
    func gpsdFront() throws {
        var template = Array("/tmp/locationd-logins-XXXXXX".utf8CString)
        let logins = String(cString: try #require(TemporaryDirectories.mkdtemp(&template)))
        defer { _ = try? FileManager.default.removeItem(atPath: logins) }
        let shim = try LoginShim.build(in: logins)
        // Its clients in a login session, where When In Use follows logind's word (outside every session, a
        // program is in use while it runs: `headlessBox`).
        let session = try LoginSessionCgroup()
        defer { session.leave() }
        Self.setState("active", uid: 0, in: logins)
        let port = try GpsdFrontEndToEndTests.freePort()
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = ask\naccuracy = full"),
                                       daemonKeys: "gpsd-listen = 127.0.0.1:\(port)",
                                       launcher: ["env", "LD_PRELOAD=\(shim)", "LOCATIOND_TEST_LOGIN_DIR=\(logins)"])
        let admin = try RawClient(daemon.socketPath)
        admin.send(#"{"class":"GRANT","user":"0","kind":"whenInUse"}"#)
        #expect(admin.message("GRANTS") != nil)
        // Phases: 2 s active, 2 s inactive (the first 0.5 s of it left out: the change takes a moment), 2 s active.
        let phases = try PhaseProcess(["/usr/bin/python3", "-c", Self.gpsdClient, String(port), "2", "0.5", "2", "2"])
        let active = phases.read()
        Self.setState("online", uid: 0, in: logins)
        phases.proceed()
        _ = phases.read()
        phases.proceed()
        let inactive = phases.read()
        Self.setState("active", uid: 0, in: logins)
        phases.proceed()
        let again = phases.read()
        phases.proceed()
        phases.finish()
        #expect(active.map { $0.0 > 5 } == true, "active: \(String(describing: active))")
        #expect(inactive.map { $0.0 == 0 && $0.1 > 0 } == true, "inactive: \(String(describing: inactive))")
        #expect(again.map { $0.0 > 0 } == true, "active again: \(String(describing: again))")
        _ = daemon
    }

    @Test("an Always grant streams whatever the session; logind's other words are not in use", arguments: ["offline", "lingering", "closing"])
    func alwaysIgnoresSession(word: String) throws {
        var template = Array("/tmp/locationd-logins-XXXXXX".utf8CString)
        let logins = String(cString: try #require(TemporaryDirectories.mkdtemp(&template)))
        defer { _ = try? FileManager.default.removeItem(atPath: logins) }
        let shim = try LoginShim.build(in: logins)
        // Its clients in a login session, where When In Use follows logind's word (outside every session, a
        // program is in use while it runs: `headlessBox`).
        let session = try LoginSessionCgroup()
        defer { session.leave() }
        Self.setState(word, uid: 0, in: logins)
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = ask\naccuracy = full"),
                                       launcher: ["env", "LD_PRELOAD=\(shim)", "LOCATIOND_TEST_LOGIN_DIR=\(logins)"])
        let admin = try RawClient(daemon.socketPath)
        admin.send(#"{"class":"GRANT","executable":"\#(PolicyEndToEndTests.selfExecutable)","user":"0","kind":"whenInUse"}"#)
        #expect(admin.message("GRANTS") != nil)
        let client = try RawClient(daemon.socketPath)
        client.send(#"{"class":"AUTHORIZATION"}"#)
        #expect(client.message("AUTHORIZATION")?["inUse"]?.bool == false, "\(word) is not in use")
        admin.send(#"{"class":"GRANT","executable":"\#(PolicyEndToEndTests.selfExecutable)","user":"0","kind":"always"}"#)
        #expect(admin.message("GRANTS") != nil)
        let always = try #require(client.message("AUTHORIZATION"))
        #expect(always["status"]?.string == "authorizedPersistent" && always["inUse"] == nil)
        client.send(#"{"class":"WATCH"}"#)
        #expect(client.message("TPV") != nil)
    }

    @Test("a box nobody logs in to (issue 33): the agent's always to a one-time request delivers whenever the program runs; an Always request is one question")
    func headlessBox() throws {
        var template = Array("/tmp/locationd-logins-XXXXXX".utf8CString)
        let logins = String(cString: try #require(TemporaryDirectories.mkdtemp(&template)))
        defer { _ = try? FileManager.default.removeItem(atPath: logins) }
        let shim = try LoginShim.build(in: logins)
        // logind knows no session of the user (as on a Pi, a boat PC, a robot); the clients run outside every
        // login session, as this test process does here (cgroup `/`), as a system service does.
        Self.setState("offline", uid: 0, in: logins)
        #expect(LoginSessionCgroup.ownCgroup().map { !$0.hasPrefix("/user.slice/") } == true, "the test runs outside login sessions")
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = ask\naccuracy = full\nask-timeout = 20s"),
                                       launcher: ["env", "LD_PRELOAD=\(shim)", "LOCATIOND_TEST_LOGIN_DIR=\(logins)"])
        let agent = try RawClient.agent(daemon.socketPath)
        let locationctl = AuditFloodTests.locationctl

        // locationctl get: a one-time request; the person answers "always" — remembered as When In Use, and the
        // ASK said what that means for this program: whenever it runs.
        let get = try PolicyEndToEndTests.start([locationctl, "--socket", daemon.socketPath, "get", "--timeout", "20"], in: daemon.directory)
        let ask = try #require(agent.message("ASK", timeout: 20))
        #expect(ask["request"]?.string == "once" && ask["remembers"]?.string == "whenInUse" && ask["inUse"]?.string == "running", "\(ask)")
        try agent.answer(ask, "allowAlways")
        let got = PolicyEndToEndTests.finish(get)
        #expect(got.status == 0, "\(got)")
        #expect(got.stdout.hasPrefix("2007-04-08 "), "a location of the capture: \(got.stdout)")

        // Stored as When In Use, and it delivers: a new connection of the same program is in use while it runs;
        // nobody is asked again (the agent here answers nothing more, and get's timeout is below ask-timeout).
        let again = PolicyEndToEndTests.finish(try PolicyEndToEndTests.start([locationctl, "--socket", daemon.socketPath, "get", "--timeout", "10"],
                                                                            in: daemon.directory))
        #expect(again.status == 0 && again.stdout.hasPrefix("2007-04-08 "), "\(again)")
        let grants = try RawClient(daemon.socketPath)
        grants.send(#"{"class":"GRANTS"}"#)
        let stored = try #require(grants.message("GRANTS"))
        #expect(stored["persistent"]?.array?.first?.object?["whenInUse"]?.bool == true, "\(stored)")

        // An Always request of another program (python3): one question; "always" grants Always at once.
        let python = try PolicyEndToEndTests.pythonAllowed().python
        let watch = try PolicyEndToEndTests.start([python, "-c", """
            import json, socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(sys.argv[1]); f = s.makefile("rb")
            f.readline()
            s.sendall(b'{"class":"AUTHORIZE","authorization":"always"}\\n')
            for line in f:
                m = json.loads(line)
                if m["class"] == "AUTHORIZATION":
                    print(m["status"]); break
            """, daemon.socketPath], in: daemon.directory)
        let always = try #require(agent.message("ASK", timeout: 20))
        #expect(always["request"]?.string == "persistent" && always["remembers"]?.string == "persistent" && always["upgrade"] == nil, "\(always)")
        try agent.answer(always, "allowAlways")
        let watched = PolicyEndToEndTests.finish(watch)
        #expect(watched.stdout == "authorizedPersistent\n", "\(watched)")
    }

    @Test("When In Use allowed in a login session does not follow the program out of it: a cron-like job of the user gets nothing while the user is away")
    func sessionGrantStaysInSession() throws {
        var template = Array("/tmp/locationd-logins-XXXXXX".utf8CString)
        let logins = String(cString: try #require(TemporaryDirectories.mkdtemp(&template)))
        defer { _ = try? FileManager.default.removeItem(atPath: logins) }
        let shim = try LoginShim.build(in: logins)
        Self.setState("active", uid: 0, in: logins)
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = ask\naccuracy = full\nask-timeout = 20s"),
                                       launcher: ["env", "LD_PRELOAD=\(shim)", "LOCATIOND_TEST_LOGIN_DIR=\(logins)"])
        let agent = try RawClient.agent(daemon.socketPath)
        // In the user's session: asked, shown "while root has an active login session", allowed.
        let session = try LoginSessionCgroup()
        let inSession = try RawClient(daemon.socketPath)
        inSession.send(#"{"class":"AUTHORIZE","authorization":"whenInUse"}"#)
        let ask = try #require(agent.message("ASK"))
        #expect(ask["inUse"]?.string == "activeSession" && ask["remembers"]?.string == "whenInUse", "\(ask)")
        try agent.answer(ask, "allowAlways")
        #expect(inSession.message("AUTHORIZATION")?["status"]?.string == "authorizedWhenInUse")
        session.leave()
        // The same program outside every session (as a user's cron or at job runs on Debian), the user away:
        // not in use, and nothing is sent.
        Self.setState("offline", uid: 0, in: logins)
        let job = try RawClient(daemon.socketPath)
        job.send(#"{"class":"AUTHORIZATION"}"#)
        let told = try #require(job.message("AUTHORIZATION"))
        #expect(told["status"]?.string == "authorizedWhenInUse" && told["inUse"]?.bool == false && told["accuracy"] == nil, "\(told)")
        job.send(#"{"class":"POLL","timeout":1}"#)
        #expect(job.message("ERROR")?["message"]?.string?.hasPrefix("not in use") == true)
        // The user back at the machine: the job is in use with the session.
        Self.setState("active", uid: 0, in: logins)
        let back = try #require(job.message("AUTHORIZATION"))
        #expect(back["inUse"] == nil && back["accuracy"]?.string == "full", "\(back)")
    }
}
