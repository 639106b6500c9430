#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPolicy
import LocationPosix
import LocationServer
import LocationSources
import Testing
import TestSupport

/// The config file (issue 6): every documented key, each error kind with file:line:key, drop-in order,
/// and the daemon's exit codes.
@Suite("Configuration file")
struct ConfigurationTests {
    /// Writes files into a fresh temporary directory; returns its path.
    static func directory(_ files: [String: String]) -> String {
        var template = Array("/tmp/locationd-conf-XXXXXX".utf8CString)
        let dir = String(cString: TemporaryDirectories.mkdtemp(&template)!)
        for (name, text) in files {
            if name.contains("/") { mkdir(dir + "/" + String(name[..<name.lastIndex(of: "/")!]), 0o755) }
            FileManager.default.createFile(atPath: dir + "/" + name, contents: Data(text.utf8))
        }
        return dir
    }

    static func load(_ text: String, dropIns: [String: String] = [:]) throws(ConfigFileError) -> DaemonConfiguration {
        var files = ["locationd.conf": text]
        for (k, v) in dropIns { files["conf.d/" + k] = v }
        let dir = directory(files)
        return try DaemonConfiguration.load(path: dir + "/locationd.conf", dropInDirectory: dir + "/conf.d")
    }

    @Test("the shipped Config/locationd.conf loads and holds the documented defaults")
    func shippedDefaults() throws {
        var root = #filePath
        for _ in 0..<3 { root = String(root[..<root.lastIndex(of: "/")!]) }
        let c = try DaemonConfiguration.load(path: root + "/Config/locationd.conf")
        #expect(c.socketPath == "/run/locationd/locationd.sock")
        #expect(c.stateDirectory == "/var/lib/locationd")
        #expect(c.adminGroup == "locationd-admin")
        #expect(c.logLevel == .info && c.maxClients == 1024 && c.clientTimeout == 30)
        #expect(c.receivers.isEmpty && c.clients.isEmpty)
        #expect(c.policy.access == .ask && c.policy.accuracy == .reduced)
        #expect(c.policy.onceLifetime == 3600 && c.policy.askTimeout == 30)
        #expect(c.policy.reducedGrid == 2000 && c.policy.reducedInterval == 900)
        #expect(c.gpsdListen.isEmpty && c.nmeaSocket == nil)
    }

    @Test("gpsd-listen: addresses separated by spaces, IPv6 in brackets; empty is off")
    func gpsdListen() throws {
        let c = try Self.load("[daemon]\ngpsd-listen = 127.0.0.1:2947   [::1]:2948\n")
        #expect(c.gpsdListen.map(\.description) == ["127.0.0.1:2947", "[::1]:2948"])
        #expect(c.gpsdListen.map(\.port) == [2947, 2948])
        #expect(c.gpsdListen[0].bytes == [127, 0, 0, 1] && c.gpsdListen[1].bytes == [UInt8](repeating: 0, count: 15) + [1])
        #expect(c.gpsdListen.allSatisfy { $0.isLoopback })
        #expect(try Self.load("[daemon]\ngpsd-listen =\n").gpsdListen.isEmpty)
    }

    @Test("every documented key is parsed")
    func everyKey() throws {
        let c = try Self.load("""
            [daemon]
            socket = /tmp/x/l.sock
            state-directory = /tmp/x/state
            admin-group = staff
            log-level = debug
            max-clients = 50
            client-timeout = 2min
            nmea-socket = /tmp/x/nmea.sock

            [receiver usb]
            type = serial
            path = /dev/serial/by-id/usb-u-blox-if00
            speed = 38400
            priority = 10
            stale-after = 5s
            allow-missing-checksum = yes

            [receiver net]
            type = gpsd
            server = gpshost:3000
            device = /dev/ttyACM0

            [receiver demo]
            type = replay
            file = /usr/share/locationd/demo.nmea
            rate = 10
            loop = yes

            [policy]
            access = once
            accuracy = full
            once-lifetime = 30min
            ask-timeout = 10s
            reduced-grid = 5000
            reduced-interval = 1h

            [client navigation]
            executable = /usr/bin/navit
            user = nobody
            group = staff
            unit = navit.service
            access = always
            accuracy = reduced
            purpose.TurnByTurn = Turn-by-turn directions need your exact position.
            """)
        #expect(c.socketPath == "/tmp/x/l.sock" && c.stateDirectory == "/tmp/x/state" && c.adminGroup == "staff")
        #expect(c.logLevel == .debug && c.maxClients == 50 && c.clientTimeout == 120)
        #expect(c.nmeaSocket == "/tmp/x/nmea.sock")
        #expect(c.receivers.map(\.name) == ["usb", "net", "demo"])
        #expect(c.receivers[0].source == .serial(path: "/dev/serial/by-id/usb-u-blox-if00", speed: 38400))
        #expect(c.receivers[0].priority == 10 && c.receivers[0].staleAfter == .seconds(5) && c.receivers[0].allowMissingChecksum)
        #expect(c.receivers[1].source == .gpsd(host: "gpshost", port: 3000, device: "/dev/ttyACM0"))
        #expect(c.receivers[2].source == .replay(file: "/usr/share/locationd/demo.nmea", rate: 10, loop: true))
        #expect(c.policy.access == .once && c.policy.accuracy == .full)
        #expect(c.policy.onceLifetime == 1800 && c.policy.askTimeout == 10)
        #expect(c.policy.reducedGrid == 5000 && c.policy.reducedInterval == 3600)
        let rule = try #require(c.clients.first)
        #expect(rule.name == "navigation" && rule.executable == "/usr/bin/navit" && rule.user == "nobody")
        #expect(rule.group == "staff" && rule.unit == "navit.service" && rule.access == .always && rule.accuracy == .reduced)
        #expect(rule.purposes == ["TurnByTurn": "Turn-by-turn directions need your exact position."])
    }

    @Test("check-date is a key of serial and gpsd receivers")
    func checkDateKey() throws {
        let c = try Self.load("[receiver s]\ntype = serial\npath = /dev/ttyS0\ncheck-date = no\n\n[receiver g]\ntype = gpsd\ncheck-date = no\n")
        #expect(c.receivers.map(\.checkDate) == [false, false])
    }

    @Test("an executable given through a symbolic link matches the file the kernel names")
    func executableLinkResolved() throws {
        // The kernel's name for this test process's executable, and a link to it.
        guard case .success(let kernelName) = FileDescriptorOps.readLink("/proc/self/exe") else {
            Issue.record("no /proc/self/exe")
            return
        }
        let dir = Self.directory([:])
        #expect(symlink(kernelName, dir + "/app") == 0)
        let c = try Self.load("[client app]\nexecutable = \(dir)/app\naccess = always\n")
        #expect(c.clients.first?.executable == kernelName)
        // A path that does not exist (yet) is kept as written.
        let missing = try Self.load("[client later]\nexecutable = /opt/not-installed/app\naccess = always\n")
        #expect(missing.clients.first?.executable == "/opt/not-installed/app")
    }

    @Test("interpreter = yes accepts an interpreter's path; user-unit names a unit of a user's own manager")
    func interpreterAndUserUnit() throws {
        let c = try Self.load("[client py]\nexecutable = /usr/bin/python3.11\ninterpreter = yes\naccess = always\n\n"
                              + "[client maps]\nuser-unit = app-gnome-Maps.scope\naccess = once\n")
        #expect(c.clients.first?.interpreter == true && c.clients.first?.executable == "/usr/bin/python3.11")
        #expect(c.clients.last?.userUnit == "app-gnome-Maps.scope" && c.clients.last?.unit == nil)
    }

    @Test("each error names the file, the line and the key", arguments: [
        ("[daemon]\nsocket = /a\nfrobnicate = 1\n", 3, "frobnicate", "unknown key"),
        ("[daemon]\nlog-level = loud\n", 2, "log-level", "is not"),
        ("[daemon]\nmax-clients = -4\n", 2, "max-clients", "is not"),
        ("[receiver gnss0]\ntype = serial\nspeed = 4800\n", 2, "path", "required"),
        ("[receiver gnss0]\ntype = serial\npath = /dev/ttyS0\nspeed = 4801\n", 4, "speed", "is not"),
        ("[receiver x]\ntype = usb\n", 2, "type", "is not"),
        // A key of another receiver type would be ignored without a word: gpsd sets the speed itself.
        ("[receiver g]\ntype = gpsd\nspeed = 9600\n", 3, "speed", "not a key of a gpsd receiver"),
        ("[receiver r]\ntype = replay\nfile = /x.log\npath = /dev/ttyS0\n", 4, "path", "not a key of a replay receiver"),
        ("[receiver s]\ntype = serial\npath = /dev/ttyS0\nloop = yes\n", 4, "loop", "not a key of a serial receiver"),
        // A replay never judges dates (docs/RECEIVERS.md): check-date would be ignored there.
        ("[receiver r]\ntype = replay\nfile = /x.log\ncheck-date = no\n", 4, "check-date", "not a key of a replay receiver"),
        ("[policy]\naccess = sometimes\n", 2, "access", "is not"),
        ("[policy]\nreduced-interval = soon\n", 2, "reduced-interval", "is not"),
        ("[client a]\nexecutable = bin/relative\naccess = always\n", 2, "executable", "absolute"),
        ("[client a]\nuser = nobody\n", 2, "access", "missing"),
        // An interpreter names no program: any script of its user runs as it (issue 32).
        ("[client py]\nexecutable = /usr/bin/python3.11\naccess = always\n", 2, "executable", "is an interpreter"),
        ("[client sh]\nuser = nobody\nexecutable = /usr/bin/dash\naccess = always\n", 3, "executable", "is an interpreter"),
        ("[client py]\nexecutable = /usr/bin/python3.11\ninterpreter = maybe\naccess = always\n", 3, "interpreter", "is not yes or no"),
        // A unit of a user's own manager is the user's to name: unit = is the system's units only.
        ("[client u]\nunit = user@1000.service/navit.service\naccess = always\n", 2, "unit", "user-unit"),
        ("[daemon]\nsocket = /a\ngpsd-listen = 127.0.0.1:2947 localhost:2947\n", 3, "gpsd-listen", "'localhost:2947' is not"),
        ("[daemon]\ngpsd-listen = [::1]:99999\n", 2, "gpsd-listen", "is not an address"),
        ("[daemon]\ngpsd-listen = ::1:2947\n", 2, "gpsd-listen", "is not an address"),
        ("[daemon]\nsocket = /a\nnmea-socket = run/nmea.sock\n", 3, "nmea-socket", "'run/nmea.sock' is not an absolute path"),
        ("[daemon]\nnmea-socket = /\(String(repeating: "n", count: 110))\n", 2, "nmea-socket", "longer than a Unix socket's path"),
        // A misspelt user would never match, and every gpsd but root's would be refused without a word why.
        ("[receiver g]\ntype = gpsd\nserver-user = no-such-user-here\n", 3, "server-user", "neither a user of this system nor a uid"),
        ("[receiver g]\ntype = gpsd\nserver-user =\n", 3, "server-user", "empty user name"),
        // Issue 33: a key twice in one section of a file (which one was meant?); a user or group that does
        // not exist (a rule that matches no one, an admin group no one is in).
        ("[policy]\naccess = deny\naccuracy = full\naccess = always\n", 4, "access", "given twice in [policy] (first at line 2)"),
        ("[daemon]\nadmin-group = nosuchgroup\n", 2, "admin-group", "'nosuchgroup' is neither a group of this system nor a gid"),
        ("[daemon]\nshare-group = nosuchgroup\n", 2, "share-group", "neither a group of this system nor a gid"),
        ("[client a]\nuser = nosuchuser\naccess = always\n", 2, "user", "'nosuchuser' is neither a user of this system nor a uid"),
        ("[client a]\ngroup = nosuchgroup\naccess = always\n", 2, "group", "'nosuchgroup' is neither a group of this system nor a gid"),
        // Zero is a duration; none of these keys has an "off", so the error says what zero would do (issue 33).
        ("[policy]\nreduced-interval = 0s\n", 2, "reduced-interval", "must be more than 0: reduced clients would get every fix"),
        ("[policy]\nonce-lifetime = 0\n", 2, "once-lifetime", "must be more than 0: a one-time grant would end as it is made"),
        ("[policy]\nask-timeout = 0ms\n", 2, "ask-timeout", "must be more than 0"),
        ("[daemon]\nclient-timeout = 0s\n", 2, "client-timeout", "must be more than 0"),
        ("[receiver r]\ntype = replay\nfile = /x.log\nstale-after = 0s\n", 4, "stale-after", "must be more than 0"),
        ("[policy]\nreduced-interval = -1s\n", 2, "reduced-interval", "'-1s' is not a duration"),
    ])
    func errors(text: String, line: Int, key: String, mentions: String) {
        do {
            _ = try Self.load(text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.file.hasSuffix("/locationd.conf"))
            #expect(error.line == line, "\(error)")
            #expect(error.key == key, "\(error)")
            #expect(error.description.contains(mentions), "\(error)")
            #expect(error.description.hasPrefix(error.file + ":\(line): \(key): "))
        }
    }

    @Test("a line that is not INI, and an unknown section, are errors with their line")
    func syntaxAndSections() {
        #expect(throws: ConfigFileError.self) { try Self.load("[daemon]\nthis is not ini\n") }
        do { _ = try Self.load("[daemon]\nlog-level = info\nthis is not ini\n") } catch { #expect(error.line == 3) }
        do { _ = try Self.load("[deamon]\nlog-level = info\n") } catch { #expect(error.description.contains("unknown section [deamon]")) }
    }

    @Test("long lines: a comment of any length is skipped, a longer key line is an error with its line")
    func longLines() throws {
        // Found when the quick start ran from a long directory path: its config's comment, with the
        // paths filled in, was over inih's 200-byte line buffer, and the rest of it was read as line 4.
        let comment = "# " + String(repeating: "/tmp/some/long/directory", count: 20)
        let c = try Self.load("[daemon]\n\(comment)\n  ; \(comment)\nlog-level = warning\nmax-clients = 7\n")
        #expect(c.logLevel == .warning && c.maxClients == 7)
        do {
            _ = try Self.load("[daemon]\n\(comment)\nlog-level = warning\nsocket = /run/" + String(repeating: "x", count: 300) + "\n")
            Issue.record("a 308-byte key line was accepted")
        } catch {
            #expect(error.line == 4, "\(error)")
            #expect(error.description.contains(":4: line longer than"), "\(error)")
        }
        do {
            _ = try Self.load("[daemon]\n\(comment)\nlog-level = warning\nfrobnicate = 1\n")
            Issue.record("unknown key accepted")
        } catch {
            #expect(error.line == 4 && error.key == "frobnicate", "line numbers after a long comment: \(error)")
        }
    }

    @Test("drop-ins apply in name order after the main file; only *.conf files count")
    func dropInOrder() throws {
        let c = try Self.load("[daemon]\nlog-level = info\nmax-clients = 7\n", dropIns: [
            "20-later.conf": "[daemon]\nlog-level = warning\n",
            "10-first.conf": "[daemon]\nlog-level = debug\nmax-clients = 9\n",
            "99-ignored.conf.disabled": "[daemon]\nlog-level = error\n",
        ])
        #expect(c.logLevel == .warning)
        #expect(c.maxClients == 9)
        do {
            _ = try Self.load("[daemon]\n", dropIns: ["50-bad.conf": "[daemon]\n\nnope = 1\n"])
        } catch {
            #expect(error.file.hasSuffix("conf.d/50-bad.conf") && error.line == 3 && error.key == "nope")
        }
    }

    static func run(_ args: [String]) -> (status: Int32, stdout: String, stderr: String) {
        let dir = directory([:])
        var pid: pid_t = 0
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 1, dir + "/out", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, dir + "/err", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv: [UnsafeMutablePointer<CChar>?] = ([DaemonProcess.binary] + args).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        posix_spawn(&pid, DaemonProcess.binary, &actions, nil, argv, environ)
        posix_spawn_file_actions_destroy(&actions)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        func read(_ f: String) -> String { FileManager.default.contents(atPath: dir + "/" + f).map { String(decoding: $0, as: UTF8.self) } ?? "" }
        return ((status >> 8) & 0xFF, read("out"), read("err"))
    }

    @Test("locationd: a bad config exits 78 naming file:line:key without starting; usage errors exit 64; --check-config prints the effective settings")
    func exitCodes() {
        let dir = Self.directory(["bad.conf": "[daemon]\nsocket = /tmp/never-created.sock\nlog-level = loud\n",
                                  "good.conf": "[daemon]\nmax-clients = 5\n"])
        let bad = Self.run(["--config", dir + "/bad.conf"])
        #expect(bad.status == 78)
        #expect(bad.stderr.contains(dir + "/bad.conf:3: log-level:"), "\(bad.stderr)")
        #expect(access("/tmp/never-created.sock", F_OK) != 0)
        #expect(Self.run(["--frobnicate"]).status == 64)
        #expect(Self.run(["--config"]).status == 64)
        let check = Self.run(["--check-config", "--config", dir + "/good.conf"])
        #expect(check.status == 0)
        #expect(check.stdout.contains("max-clients = 5") && check.stdout.contains("access = ask") && check.stdout.contains("socket = /run/locationd/locationd.sock"))
        #expect(Self.run(["--version"]).stdout.hasPrefix("locationd "))
    }

    @Test("--check-config's output is a config that reads back to itself; stale-after = auto, its documented default, is accepted")
    func effectiveRoundTrip() throws {
        let dir = Self.directory(["in.conf": """
            [daemon]
            client-timeout = 30s
            share-group = root
            [receiver demo]
            type = replay
            file = /dev/null
            stale-after = auto
            [receiver slow]
            type = replay
            file = /dev/null
            stale-after = 1500ms
            [receiver gpsd]
            type = gpsd
            server = [::1]:2948
            server-user = nobody
            [receiver defaults]
            type = gpsd
            [receiver numeric]
            type = gpsd
            server = localhost:2950
            server-user = 65534
            [policy]
            once-lifetime = 1h 30min
            """])
        let first = Self.run(["--check-config", "--config", dir + "/in.conf"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("stale-after = auto") && first.stdout.contains("stale-after = 1.5s"))
        #expect(first.stdout.contains("client-timeout = 30s") && first.stdout.contains("once-lifetime = 1h 30min\nask-timeout = 30s\n")
                && first.stdout.contains("reduced-interval = 15min\n")
                && first.stdout.contains("reduced-grid = 2000\n") && first.stdout.contains("share-group = root\n"), "\(first.stdout)")
        #expect(first.stdout.contains("server = [::1]:2948\nserver-user = nobody\n")
                && first.stdout.contains("server = localhost:2947\nserver-user = gpsd\n")
                && first.stdout.contains("server = localhost:2950\nserver-user = 65534\n"), "\(first.stdout)")
        FileManager.default.createFile(atPath: dir + "/again.conf", contents: Data(first.stdout.utf8))
        let second = Self.run(["--check-config", "--config", dir + "/again.conf"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout == first.stdout)
    }
}
