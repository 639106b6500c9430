#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import Testing
import TestSupport

/// Issue 13: the gpsd front of the real daemon, with Debian's real gpsd clients (gpspipe, python3-gps)
/// over TCP loopback, under the policy; positions checked against gpsd's own decoding of the capture
/// (its regression `.chk`).
@Suite("gpsd front: real gpsd clients against the daemon", .serialized)
struct GpsdFrontEndToEndTests {
    /// A TCP port nobody listens on now (bound to port 0, then closed).
    static func freePort() throws -> UInt16 {
        let probe = try TCPListener(address: try #require(TCPAddress(parsing: "127.0.0.1:0")))
        defer { probe.close() }
        return try #require(probe.address?.port)
    }

    /// The daemon replaying the demo capture with the gpsd front on `port`.
    static func daemon(port: UInt16, policy: String, clients: String = "", daemonKeys: String = "") throws -> DaemonProcess {
        try DaemonProcess(config: PolicyEndToEndTests.config(policy: policy, clients: clients, rate: "20"),
                          daemonKeys: "gpsd-listen = 127.0.0.1:\(port)\n" + daemonKeys)
    }

    /// Waits (up to 5 s) until the daemon has a fix, as root sees in STATUS: the capture opens with epochs
    /// without one, and a client that reads only a few lines must not spend them all before the first fix.
    static func waitForFix(_ daemon: DaemonProcess) throws {
        let root = try RawClient(daemon.socketPath)
        _ = root.message("VERSION")
        for _ in 0..<50 {
            root.send(#"{"class":"STATUS"}"#)
            if let mode = root.message("STATUS")?["mode"]?.number, mode >= 2 { return }
            usleep(100_000)
        }
        Issue.record("no fix within 5 s")
    }

    /// The positions gpsd itself decoded from the capture: its `.chk`'s TPV `"lat":…,"lon":…` pairs, as it
    /// prints them (`%.9f`).
    static func gpsdPositions() throws -> Set<String> {
        let path = DaemonProcess.sharedDirectory + "/nmea-logs/haicom-305N.log.chk"
        let text = try #require(FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) })
        return Set(text.split(separator: "\n").compactMap { positionMembers(of: $0) })
    }

    /// `"lat":…,"lon":…` of a TPV line; nil when it has none.
    static func positionMembers(of line: Substring) -> String? {
        guard line.contains("\"class\":\"TPV\""), let lat = line.firstRange(of: "\"lat\":") else { return nil }
        let rest = line[lat.lowerBound...]
        guard let lon = rest.firstRange(of: "\"lon\":") else { return nil }
        let end = rest[lon.upperBound...].firstIndex(of: ",") ?? rest.endIndex
        return String(rest[..<end])
    }

    static func run(_ arguments: [String]) throws -> String {
        var template = Array("/tmp/locationd-gpsdfront-XXXXXX".utf8CString)
        let directory = try #require(TemporaryDirectories.mkdtemp(&template).map { String(cString: $0) })
        chmod(directory, 0o755)
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        return try PolicyEndToEndTests.run(arguments, in: directory).stdout
    }

    /// The lines of gpsd's output (each ends in CR LF, one `Character` in Swift).
    static func lines(_ output: String) -> [Substring] {
        output.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" })
    }

    static let asNobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

    @Test("gpspipe -w as root under an allow rule: VERSION, then TPVs whose positions are gpsd's own, and SKY")
    func gpspipeAllowed() throws {
        let port = try Self.freePort()
        let daemon = try Self.daemon(port: port, policy: "access = deny", clients: PolicyEndToEndTests.rootSeesAll)
        defer { daemon.stop() }
        let output = try Self.run(["timeout", "20", "gpspipe", "-w", "-n", "40", "127.0.0.1:\(port)"])
        let lines = Self.lines(output)
        #expect(lines.first?.hasPrefix(#"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14"#) == true, "\(output)")
        let positions = lines.compactMap { Self.positionMembers(of: $0) }
        #expect(positions.count >= 3, "\(output)")
        let expected = try Self.gpsdPositions()
        #expect(expected.count > 10)
        for position in positions { #expect(expected.contains(position), "\(position) is not a position gpsd decoded") }
        #expect(lines.contains { $0.hasPrefix(#"{"class":"SKY","#) && $0.contains(#""satellites":[{"PRN":"#) }, "\(output)")
    }

    @Test("gpspipe -w as another uid without a grant: VERSION, DEVICES without state, the WATCH echo and mode 1 TPVs on the daemon's clock — no position byte, not the fix cadence")
    func gpspipeStranger() throws {
        let port = try Self.freePort()
        let daemon = try Self.daemon(port: port, policy: "access = ask", clients: PolicyEndToEndTests.rootSeesAll)
        defer { daemon.stop() }
        try Self.waitForFix(daemon)
        // VERSION, DEVICES, WATCH, then 4 TPVs: the first when it starts watching, then one a second. The
        // replay makes 20 fixes a second: TPVs on the receiver's epochs would all be there within 0.2 s.
        let start = ContinuousClock.now
        let output = try Self.run(["timeout", "20"] + Self.asNobody + ["gpspipe", "-w", "-n", "7", "127.0.0.1:\(port)"])
        let elapsed = ContinuousClock.now - start
        let lines = Self.lines(output)
        #expect(lines.contains { $0.hasPrefix(#"{"class":"VERSION""#) }, "\(output)")
        #expect(lines.contains { $0.hasPrefix(#"{"class":"WATCH","enable":true,"json":true"#) }, "\(output)")
        let tpvs = lines.filter { $0.hasPrefix(#"{"class":"TPV""#) }
        #expect(tpvs.count == 4, "\(output)")
        #expect(elapsed >= .milliseconds(2900), "4 mode 1 TPVs in \(elapsed): on the fix cadence, not one a second")
        for tpv in tpvs { #expect(tpv.contains(#""mode":1}"#) && !tpv.contains("time"), "\(tpv)") }
        // DEVICES names the receiver (the replay file), but not whether or since when it runs.
        let devices = try #require(lines.first { $0.hasPrefix(#"{"class":"DEVICES""#) }, "\(output)")
        #expect(devices.contains(#""path":"\#(DaemonProcess.demoCapture)""#), "\(devices)")
        #expect(!devices.contains("activated") && !devices.contains("flags"), "\(devices)")
        for word in ["\"lat\"", "\"lon\"", "\"time\":\"20", "SKY", "$GP", "-27.2", "153.0"] {
            #expect(!output.contains(word), "\(word) reached a client without a grant")
        }
        // Root, allowed, sees the receiver's state.
        let root = try Self.run(["timeout", "20", "gpspipe", "-w", "-n", "3", "127.0.0.1:\(port)"])
        let rootDevices = try #require(Self.lines(root).first { $0.hasPrefix(#"{"class":"DEVICES""#) }, "\(root)")
        #expect(rootDevices.contains(#""activated":"20"#) && rootDevices.contains(#""flags":1"#), "\(rootDevices)")
    }

    @Test("a rule keyed on gpspipe's executable matches it over TCP")
    func ruleOnExecutable() throws {
        let executable = try #require(TCPPeerTests.realPath("/usr/bin/gpspipe"))
        let rule = "[client gpspipe]\nexecutable = \(executable)\naccess = always\naccuracy = full\n"
        let port = try Self.freePort()
        let daemon = try Self.daemon(port: port, policy: "access = deny", clients: rule)
        defer { daemon.stop() }
        let output = try Self.run(["timeout", "20"] + Self.asNobody + ["gpspipe", "-w", "-n", "40", "127.0.0.1:\(port)"])
        let positions = Self.lines(output).compactMap { Self.positionMembers(of: $0) }
        #expect(!positions.isEmpty, "\(output)")
        let expected = try Self.gpsdPositions()
        for position in positions { #expect(expected.contains(position)) }
    }

    @Test("python3-gps: gps.gps(host=, port=) with stream(WATCH_ENABLE|WATCH_JSON) reads a fix gpsd decoded")
    func pythonGps() throws {
        let port = try Self.freePort()
        let daemon = try Self.daemon(port: port, policy: "access = deny", clients: PolicyEndToEndTests.rootSeesAll)
        defer { daemon.stop() }
        let script = """
            import gps, sys
            session = gps.gps(host="127.0.0.1", port=sys.argv[1])
            session.stream(gps.WATCH_ENABLE | gps.WATCH_JSON)
            for report in session:
                if report["class"] == "TPV" and "lat" in report:
                    print("%.9f %.9f %d" % (report.lat, report.lon, report.mode))
                    break
            """
        let output = try Self.run(["timeout", "20", "/usr/bin/python3", "-c", script, String(port)])
        let fields = output.split(whereSeparator: { $0 == " " || $0 == "\n" })
        #expect(fields.count == 3, "\(output)")
        guard fields.count == 3 else { return }
        let expected = try Self.gpsdPositions()
        #expect(expected.contains(#""lat":\#(fields[0]),"lon":\#(fields[1])"#), "\(output)")
        #expect(fields[2] == "2" || fields[2] == "3")
    }

    @Test("gpspipe -w at reduced accuracy: TPVs with the reduced position and eph only, no SKY, no true position")
    func gpspipeReducedJSON() throws {
        let rule = "[client nobody]\nuser = nobody\naccess = always\naccuracy = reduced\n"
        let port = try Self.freePort()
        let daemon = try Self.daemon(port: port, policy: "access = deny\nreduced-interval = 1s", clients: rule)
        defer { daemon.stop() }
        try Self.waitForFix(daemon)
        let output = try Self.run(["timeout", "8"] + Self.asNobody + ["gpspipe", "-w", "-n", "6", "127.0.0.1:\(port)"])
        let lines = Self.lines(output)
        let positioned = lines.filter { $0.hasPrefix(#"{"class":"TPV""#) && $0.contains(#""lat":"#) }
        #expect(!positioned.isEmpty, "\(output)")
        #expect(!output.contains("SKY"), "satellites reached a reduced client")
        let truePositions = try Self.gpsdPositions()
        for tpv in positioned {
            #expect(tpv.contains(#""mode":2,"#), "\(tpv)")
            for member in ["altHAE", "altMSL", "speed", "track", "climb", "epx", "epy", "epv", "sep", "eps", "magvar"] {
                #expect(!tpv.contains("\"\(member)\""), "\(member) in a reduced TPV: \(tpv)")
            }
            let eph = try #require(tpv.firstRange(of: #""eph":"#).map { Double(tpv[$0.upperBound...].prefix { $0 != "}" && $0 != "," }) ?? 0 })
            #expect(eph >= 2000, "\(tpv)")
            #expect(!truePositions.contains(Self.positionMembers(of: tpv) ?? ""), "a true position: \(tpv)")
        }
    }

    @Test("gpspipe -r at reduced accuracy: synthesized NMEA with the reduced position only — no satellites, no true position")
    func gpspipeReducedNMEA() throws {
        let rule = "[client nobody]\nuser = nobody\naccess = always\naccuracy = reduced\n"
        let port = try Self.freePort()
        let daemon = try Self.daemon(port: port, policy: "access = deny\nreduced-interval = 1s", clients: rule)
        defer { daemon.stop() }
        let output = try Self.run(["timeout", "8"] + Self.asNobody + ["gpspipe", "-r", "-n", "12", "127.0.0.1:\(port)"])
        let sentences = Self.lines(output).filter { $0.hasPrefix("$") }
        let rmc = sentences.filter { $0.hasPrefix("$GPRMC,") }
        #expect(!rmc.isEmpty, "\(output)")
        #expect(!sentences.contains { $0.hasPrefix("$GPGSV") }, "satellites reached a reduced client")
        // The capture's own position (gpsd: -27.210866667, 153.052328333 = 2712.6520 S, 15303.1397 E) never appears.
        let truePositions = try Self.gpsdPositions()
        for sentence in rmc {
            let f = sentence.split(separator: ",", omittingEmptySubsequences: false)
            guard f.count > 6, let lat = Double(f[3]), let lon = Double(f[5]) else { continue }
            let latitude = (f[4] == "S" ? -1 : 1) * (Double(Int(lat / 100)) + lat.truncatingRemainder(dividingBy: 100) / 60)
            let longitude = (f[6] == "W" ? -1 : 1) * (Double(Int(lon / 100)) + lon.truncatingRemainder(dividingBy: 100) / 60)
            #expect(abs(latitude + 27.21) < 0.2 && abs(longitude - 153.05) < 0.2, "\(sentence)")
            let nearest = truePositions.compactMap { p -> Double? in
                let parts = p.split(separator: ",")
                guard parts.count == 2, let a = Double(parts[0].dropFirst(6)), let b = Double(parts[1].dropFirst(6)) else { return nil }
                return max(abs(a - latitude), abs(b - longitude))
            }.min() ?? 0
            #expect(nearest > 0.0001, "reduced NMEA carries a true position: \(sentence)")
        }
    }

    @Test("under ask, the agent is asked on gpspipe's behalf when it starts watching; mode 1 TPVs until allowed, then gpsd's positions")
    func askedOnItsBehalf() throws {
        let port = try Self.freePort()
        let daemon = try Self.daemon(port: port, policy: "access = ask\naccuracy = full\nask-timeout = 10s")
        defer { daemon.stop() }
        let agent = try RawClient.agent(daemon.socketPath)
        var template = Array("/tmp/locationd-gpsdfront-XXXXXX".utf8CString)
        let directory = try #require(TemporaryDirectories.mkdtemp(&template).map { String(cString: $0) })
        let gpspipe = try PolicyEndToEndTests.start(["timeout", "20", "gpspipe", "-w", "-n", "40", "127.0.0.1:\(port)"], in: directory)
        let ask = try #require(agent.message("ASK"))
        guard case .object(let who)? = ask["client"] else { Issue.record("ASK without client"); return }
        #expect(who["exe"]?.string == TCPPeerTests.realPath("/usr/bin/gpspipe"))
        usleep(500_000)
        try agent.answer(ask, "allowOnce")
        #expect(agent.message("ANSWERED")?["answer"]?.string == "allowOnce")
        let output = PolicyEndToEndTests.finish(gpspipe).stdout
        let lines = Self.lines(output)
        let tpvs = lines.filter { $0.hasPrefix(#"{"class":"TPV""#) }
        let firstPosition = try #require(tpvs.firstIndex { $0.contains(#""lat":"#) }, "\(output)")
        #expect(firstPosition > 0, "a position before the agent answered: \(output)")
        for tpv in tpvs[..<firstPosition] { #expect(tpv.hasSuffix(#""mode":1}"#), "\(tpv)") }
        let expected = try Self.gpsdPositions()
        for position in lines.compactMap({ Self.positionMembers(of: $0) }) { #expect(expected.contains(position)) }
    }

    @Test("?POLL; answers a watcher with time, active, the latest TPV and SKY it may see; nothing without a grant or a watch")
    func poll() throws {
        let port = try Self.freePort()
        let daemon = try Self.daemon(port: port, policy: "access = deny", clients: PolicyEndToEndTests.rootSeesAll)
        defer { daemon.stop() }
        let script = """
            import socket, sys, time
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
            if sys.argv[2:] != ["unwatched"]: s.sendall(b'?WATCH={"enable":true};')
            time.sleep(1.5)
            s.sendall(b"?POLL;")
            s.settimeout(1)
            data = b""
            try:
                while b'"class":"POLL"' not in data or not data.endswith(b"\\r\\n"):
                    data += s.recv(65536)
            except socket.timeout:
                pass
            sys.stdout.write(data.decode())
            """
        let root = try Self.run(["timeout", "10", "/usr/bin/python3", "-c", script, String(port)])
        let poll = try #require(Self.lines(root).first { $0.hasPrefix(#"{"class":"POLL""#) }, "\(root)")
        #expect(poll.contains(#","active":1,"tpv":[{"class":"TPV","#))
        #expect(poll.contains(#""gst":[],"sky":[{"class":"SKY","#))
        let lat = try #require(poll.firstRange(of: #""lat":"#))
        let position = Self.positionMembers(of: #"{"class":"TPV","# + poll[lat.lowerBound...])
        #expect(try position.map { try Self.gpsdPositions().contains($0) } == true, "\(poll)")
        #expect(!Self.lines(root).contains { $0.hasPrefix(#"{"class":"TPV""#) }, "json is off: no streamed TPV")

        // Not watching, as from gpsd 3.22 (under gpsfake): nothing polled, `active` 0, however much it may see.
        let unwatched = try Self.run(["timeout", "10", "/usr/bin/python3", "-c", script, String(port), "unwatched"])
        let idle = try #require(Self.lines(unwatched).first { $0.hasPrefix(#"{"class":"POLL""#) }, "\(unwatched)")
        #expect(idle.hasSuffix(#","active":0,"tpv":[],"gst":[],"sky":[]}"#), "\(idle)")

        let stranger = try Self.run(["timeout", "10"] + Self.asNobody + ["/usr/bin/python3", "-c", script, String(port)])
        let blind = try #require(Self.lines(stranger).first { $0.hasPrefix(#"{"class":"POLL""#) }, "\(stranger)")
        // Nothing it may see, nor whether a receiver runs.
        #expect(blind.hasSuffix(#","active":0,"tpv":[],"gst":[],"sky":[]}"#), "\(blind)")
    }

    @Test("a blind gpsd watcher starts streaming when a reload grants its program access")
    func reloadGrants() throws {
        let port = try Self.freePort()
        let daemon = try Self.daemon(port: port, policy: "access = deny")
        defer { daemon.stop() }
        var template = Array("/tmp/locationd-gpsdfront-XXXXXX".utf8CString)
        let directory = try #require(TemporaryDirectories.mkdtemp(&template).map { String(cString: $0) })
        chmod(directory, 0o755)
        let gpspipe = try PolicyEndToEndTests.start(["timeout", "20"] + Self.asNobody + ["gpspipe", "-w", "-n", "60", "127.0.0.1:\(port)"],
                                                    in: directory)
        usleep(1_000_000)
        let path = daemon.directory + "/locationd.conf"
        let config = try #require(FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) })
        let granted = config + "\n[client nobody]\nuser = nobody\naccess = always\naccuracy = full\n"
        FileManager.default.createFile(atPath: path, contents: Data(granted.utf8))
        kill(daemon.pid, SIGHUP)
        let output = PolicyEndToEndTests.finish(gpspipe).stdout
        let tpvs = Self.lines(output).filter { $0.hasPrefix(#"{"class":"TPV""#) }
        let first = try #require(tpvs.firstIndex { $0.contains(#""lat":"#) }, "never streamed after the reload: \(output)\n\(daemon.log)")
        #expect(first > 0)
        let expected = try Self.gpsdPositions()
        for tpv in tpvs[first...] where tpv.contains(#""lat":"#) { #expect(expected.contains(Self.positionMembers(of: tpv) ?? "")) }
    }

    /// Runs `cgps` on the gpsd front in a private tmux server for `seconds`; returns the screen.
    static func cgpsScreen(port: UInt16, launcher: [String] = [], seconds: UInt32 = 3) throws -> String {
        let server = "locationd-cgps-\(getpid())-\(port)"
        let command = (launcher + ["cgps", "127.0.0.1:\(port)"]).joined(separator: " ")
        _ = try run(["tmux", "-L", server, "new-session", "-d", "-x", "120", "-y", "30", command])
        sleep(seconds)
        let screen = try run(["tmux", "-L", server, "capture-pane", "-p"])
        _ = try run(["tmux", "-L", server, "kill-server"])
        return screen
    }

    /// The value of a cgps screen row (`Latitude:         27.21067167 S`), signed by its hemisphere.
    static func cgpsDegrees(_ screen: String, _ label: String) -> Double? {
        guard let row = screen.firstRange(of: label + ":") else { return nil }
        let words = screen[row.upperBound...].split(separator: " ").prefix(2)
        guard words.count == 2, let value = Double(words[words.startIndex]) else { return nil }
        let hemisphere = words[words.index(after: words.startIndex)].prefix(1)
        return hemisphere == "S" || hemisphere == "W" ? -value : value
    }

    @Test("cgps in tmux: the position gpsd decoded, and satellites used; without a grant no position and no satellite")
    func cgps() throws {
        let port = try Self.freePort()
        let daemon = try Self.daemon(port: port, policy: "access = deny", clients: PolicyEndToEndTests.rootSeesAll)
        defer { daemon.stop() }
        let screen = try Self.cgpsScreen(port: port)
        let latitude = try #require(Self.cgpsDegrees(screen, "Latitude"), "\(screen)")
        let longitude = try #require(Self.cgpsDegrees(screen, "Longitude"), "\(screen)")
        // cgps prints gpsd's 9 decimals rounded to 8.
        let matches = try Self.gpsdPositions().contains { p in
            let parts = p.split(separator: ",")
            guard parts.count == 2, let a = Double(parts[0].dropFirst(6)), let b = Double(parts[1].dropFirst(6)) else { return false }
            return abs(a - latitude) < 6e-9 && abs(b - longitude) < 6e-9
        }
        #expect(matches, "cgps shows \(latitude), \(longitude), not a position gpsd decoded:\n\(screen)")
        #expect(screen.contains("3D FIX") || screen.contains("2D FIX"), "\(screen)")
        #expect(!screen.contains("Used  0"), "no satellite used:\n\(screen)")

        let blind = try Self.cgpsScreen(port: port, launcher: Self.asNobody)
        #expect(blind.contains("Latitude:") && Self.cgpsDegrees(blind, "Latitude") == nil, "\(blind)")
        #expect(blind.contains("NO FIX") && !blind.contains("2D FIX") && !blind.contains("3D FIX"), "\(blind)")
        #expect(blind.contains("Seen  0/Used  0") && !blind.contains("2007-04-08"), "\(blind)")
        #expect(!blind.contains("GP  "), "a satellite row reached cgps without a grant:\n\(blind)")
    }
}
