#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import Testing
import TestSupport

/// Issue 13: the NMEA socket (`nmea-socket`, for GeoClue's `[network-nmea] nmea-socket`) of the real daemon,
/// replaying the demo capture: Unix-socket clients identified from the kernel, sent sentences synthesized from
/// the fix their rule lets them see, from connect. Positions are checked against gpsd's own decoding of the
/// capture (its regression `.chk`), never against our output.
@Suite("NMEA socket: sentences for GeoClue, under the policy", .serialized)
struct NMEASocketTests {
    /// A directory anyone may enter (the NMEA socket lives there; clients run as other users).
    static func openDirectory() throws -> String {
        var template = Array("/tmp/locationd-nmea-XXXXXX".utf8CString)
        let directory = try #require(TemporaryDirectories.mkdtemp(&template).map { String(cString: $0) })
        chmod(directory, 0o755)
        return directory
    }

    /// The daemon replaying the demo capture (20× its pace, looping) with the NMEA socket at `socket`.
    static func daemon(socket: String, policy: String, clients: String) throws -> DaemonProcess {
        try DaemonProcess(config: PolicyEndToEndTests.config(policy: policy, clients: clients, rate: "20"),
                          daemonKeys: "nmea-socket = \(socket)\n")
    }

    /// One received sentence, checked: `$`, body, `*`, the XOR checksum of the body in hex; its fields.
    static func fields(_ sentence: Substring) -> [Substring]? {
        guard sentence.hasPrefix("$"), let star = sentence.lastIndex(of: "*") else { return nil }
        let body = sentence[sentence.index(after: sentence.startIndex)..<star]
        let sum = body.utf8.reduce(UInt8(0), ^)
        guard UInt8(sentence[sentence.index(after: star)...], radix: 16) == sum else { return nil }
        return body.split(separator: ",", omittingEmptySubsequences: false)
    }

    /// Degrees from NMEA's `ddmm.mmmm` and hemisphere.
    static func degrees(_ value: Substring, _ hemisphere: Substring) -> Double? {
        guard let v = Double(value) else { return nil }
        let d = Double(Int(v / 100)) + v.truncatingRemainder(dividingBy: 100) / 60
        return hemisphere == "S" || hemisphere == "W" ? -d : d
    }

    /// The position of an RMC or GGA sentence's fields (RMC: 3–6, GGA: 2–5); nil without one.
    static func position(_ f: [Substring]) -> (latitude: Double, longitude: Double)? {
        let first = f.first == "GPRMC" ? 3 : f.first == "GPGGA" ? 2 : -1
        guard first > 0, f.count > first + 3, let la = degrees(f[first], f[first + 1]), let lo = degrees(f[first + 2], f[first + 3])
        else { return nil }
        return (la, lo)
    }

    /// The positions gpsd decoded from the capture (its `.chk` TPVs), as numbers.
    static func gpsdPositions() throws -> [(latitude: Double, longitude: Double)] {
        try GpsdFrontEndToEndTests.gpsdPositions().compactMap { member in
            let parts = member.split(separator: ",")
            guard parts.count == 2, let la = Double(parts[0].dropFirst(6)), let lo = Double(parts[1].dropFirst(6)) else { return nil }
            return (la, lo)
        }
    }

    /// How far (degrees, the larger of the two axes) a position is from the nearest one gpsd decoded.
    static func distanceToGpsd(_ p: (latitude: Double, longitude: Double), _ gpsd: [(latitude: Double, longitude: Double)]) -> Double {
        gpsd.map { max(abs($0.latitude - p.latitude), abs($0.longitude - p.longitude)) }.min() ?? .infinity
    }

    /// The lines a client received (CR LF each).
    static func lines(_ output: String) -> [Substring] {
        output.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" })
    }

    @Test("full accuracy: RMC, GGA and GSA from connect, no greeting, checksums right, every position one gpsd decoded (to 1e-7°)")
    func fullAccuracy() throws {
        let directory = try Self.openDirectory()
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/nmea.sock"
        let daemon = try Self.daemon(socket: socket, policy: "access = deny", clients: PolicyEndToEndTests.rootSeesAll)
        defer { daemon.stop() }
        try GpsdFrontEndToEndTests.waitForFix(daemon)
        let client = try PolicyEndToEndTests.startPython(socket, uid: 0, lines: [], seconds: 3)
        let output = PolicyEndToEndTests.finish(client).stdout
        let lines = Self.lines(output)
        #expect(output.hasPrefix("$GP"), "the stream opens with a sentence, no greeting: \(output.prefix(200))")
        #expect(output.hasSuffix("\r\n") || output.isEmpty == false)
        let sentences = lines.compactMap { Self.fields($0) }
        #expect(sentences.count == lines.count, "a line that is not a sentence with a right checksum: \(output.prefix(400))")
        let rmc = sentences.filter { $0.first == "GPRMC" }, gga = sentences.filter { $0.first == "GPGGA" }
        let gsa = sentences.filter { $0.first == "GPGSA" }
        // 20 epochs a second for 3 s, less the client's start.
        #expect(rmc.count >= 20 && gga.count >= 20 && gsa.count >= 20, "RMC \(rmc.count), GGA \(gga.count), GSA \(gsa.count)")
        #expect(sentences.contains { $0.first == "GPGSV" }, "full accuracy shows the satellites")
        let gpsd = try Self.gpsdPositions()
        #expect(gpsd.count > 10)
        var positions = 0
        for f in rmc + gga {
            guard let p = Self.position(f) else { continue }
            positions += 1
            // NMEA carries 1e-6 minute (1.7e-8°); gpsd prints %.9f.
            #expect(Self.distanceToGpsd(p, gpsd) < 1e-7, "\(f.joined(separator: ",")) is not a position gpsd decoded")
        }
        #expect(positions >= 20)
        for f in rmc where f.count > 2 && f[2] == "A" { #expect(f.count == 13 && f[9].count == 6, "RMC with its date: \(f)") }
        for f in gsa { #expect(f.count == 18 && (f[2] == "2" || f[2] == "3" || f[2] == "1"), "\(f)") }
        #expect(gsa.contains { $0[2] == "3" && !$0[3].isEmpty }, "a 3D GSA naming its satellites")
    }

    @Test("another uid without a grant: not one byte over a whole replay, while root's client streams beside it")
    func strangerGetsNothing() throws {
        let directory = try Self.openDirectory()
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/nmea.sock"
        // `ask` with no agent running: refused on the client's behalf.
        let daemon = try Self.daemon(socket: socket, policy: "access = ask\nask-timeout = 2s", clients: PolicyEndToEndTests.rootSeesAll)
        defer { daemon.stop() }
        // The capture is 78 s long, replayed at 20×: 3.9 s; 6 s covers at least one whole pass.
        let stranger = try PolicyEndToEndTests.startPython(socket, uid: 65534, lines: [], seconds: 6)
        let root = try PolicyEndToEndTests.startPython(socket, uid: 0, lines: [], seconds: 6)
        let seen = PolicyEndToEndTests.finish(stranger).stdout
        let control = PolicyEndToEndTests.finish(root).stdout
        #expect(seen.isEmpty, "a client without a grant received \(seen.utf8.count) bytes: \(seen.prefix(200))")
        #expect(control.contains("$GPRMC,") && control.contains("$GPGGA,"), "root's client got no sentences: the replay did not stream")
        let log = daemon.log
        #expect(log.contains("client connected") && log.contains("client.uid=65534"), "the stranger was not admitted (identified): \(log.suffix(2000))")
    }

    @Test("under ask, the agent is asked on the client's behalf when it connects; nothing until allowed, then positions")
    func askedOnConnect() throws {
        let directory = try Self.openDirectory()
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/nmea.sock"
        let daemon = try Self.daemon(socket: socket, policy: "access = ask\naccuracy = full\nask-timeout = 10s", clients: "")
        defer { daemon.stop() }
        let agent = try RawClient.agent(daemon.socketPath)
        let client = try PolicyEndToEndTests.startPython(socket, uid: 65534, lines: [], seconds: 4)
        let ask = try #require(agent.message("ASK"))
        guard case .object(let who)? = ask["client"] else { Issue.record("ASK without client"); return }
        #expect(who["uid"]?.number == 65534)
        #expect(who["exe"]?.string?.contains("python3") == true, "\(who)")
        try agent.answer(ask, "allowOnce")
        #expect(agent.message("ANSWERED")?["answer"]?.string == "allowOnce")
        let output = PolicyEndToEndTests.finish(client).stdout
        let gpsd = try Self.gpsdPositions()
        let positions = Self.lines(output).compactMap { Self.fields($0) }.compactMap { Self.position($0) }
        #expect(!positions.isEmpty, "nothing after the agent allowed it: \(output.prefix(300))")
        for p in positions { #expect(Self.distanceToGpsd(p, gpsd) < 1e-7) }
    }

    @Test("reduced: only reduced positions (never a true one, HDOP coarse), no satellites, paced as a reduced client")
    func reduced() throws {
        let directory = try Self.openDirectory()
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/nmea.sock"
        let daemon = try Self.daemon(socket: socket, policy: "access = deny\nreduced-interval = 1s", clients: PolicyEndToEndTests.daemonUserReduced)
        defer { daemon.stop() }
        try GpsdFrontEndToEndTests.waitForFix(daemon)
        let client = try PolicyEndToEndTests.startPython(socket, uid: 1, lines: [], seconds: 5)
        let output = PolicyEndToEndTests.finish(client).stdout
        let sentences = Self.lines(output).compactMap { Self.fields($0) }
        let rmc = sentences.filter { $0.first == "GPRMC" }, gga = sentences.filter { $0.first == "GPGGA" }
        #expect(!rmc.isEmpty && !gga.isEmpty, "\(output.prefix(300))")
        // Paced: one report a second at most (full accuracy gets 20), so 5 s give at most 6.
        #expect(rmc.count <= 6, "\(rmc.count) RMC in 5 s at reduced-interval = 1s")
        #expect(!sentences.contains { $0.first == "GPGSV" }, "satellites reached a reduced client")
        let gpsd = try Self.gpsdPositions()
        for f in rmc + gga {
            guard let p = Self.position(f) else { continue }
            #expect(abs(p.latitude + 27.21) < 0.2 && abs(p.longitude - 153.05) < 0.2, "\(f)")
            #expect(Self.distanceToGpsd(p, gpsd) > 0.0001, "a true position reached a reduced client: \(f)")
        }
        // GeoClue takes the accuracy from GGA's HDOP: a reduced fix's (eph 2000 m / 19 m) reads as its coarsest (> 20).
        for f in gga { #expect((Double(f.count > 8 ? f[8] : "") ?? 0) > 20, "HDOP of a reduced GGA: \(f)") }
        for f in gga where f.count > 9 { #expect(f[9].isEmpty, "altitude in a reduced GGA: \(f)") }
    }

    @Test("a bad nmea-socket is refused with file:line, exit 78, nothing bound; a good one is listed by --check-config")
    func badValue() throws {
        let dir = ConfigurationTests.directory(["bad.conf": "[daemon]\nsocket = /tmp/never-created-nmea.sock\nnmea-socket = run/nmea.sock\n",
                                                "good.conf": "[daemon]\nnmea-socket = /run/locationd/nmea.sock\n"])
        defer { _ = try? FileManager.default.removeItem(atPath: dir) }
        let bad = ConfigurationTests.run(["--config", dir + "/bad.conf"])
        #expect(bad.status == 78)
        #expect(bad.stderr.contains(dir + "/bad.conf:3: nmea-socket: 'run/nmea.sock' is not an absolute path"), "\(bad.stderr)")
        #expect(access("/tmp/never-created-nmea.sock", F_OK) != 0)
        let good = ConfigurationTests.run(["--check-config", "--config", dir + "/good.conf"])
        #expect(good.status == 0 && good.stdout.contains("nmea-socket = /run/locationd/nmea.sock\n"), "\(good.stdout)")
    }

    @Test("the socket is removed when the daemon stops")
    func removedAtStop() throws {
        let directory = try Self.openDirectory()
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/nmea.sock"
        let daemon = try Self.daemon(socket: socket, policy: "access = deny", clients: "")
        #expect(ListeningSocket.isLive(socket))
        var st = stat()
        #expect(stat(socket, &st) == 0 && st.st_mode & 0o777 == 0o666)
        daemon.stop()
        #expect(access(socket, F_OK) != 0)
    }
}
