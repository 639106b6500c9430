#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Testing
import TestSupport

/// Issue 13: locationd in front of an existing gpsd (README "In front of an existing gpsd"). A gpsd client of
/// the gpsd front gets what the upstream gpsd itself says: its device path in DEVICES and TPV.device, and its
/// own estimates and magnetic track in every TPV — not figures the front works out again from rounded inputs —
/// and a SKY as often as gpsd sends one.
/// Checked against gpspipe watching the upstream gpsd (gpsfake, gpsd 3.22) at the same time.
@Suite("locationd in front of gpsd: gpsd's own device and figures pass through", .serialized)
struct GpsdUpstreamFrontTests {
    /// The TPV members the front must take unchanged from the upstream gpsd.
    static let passedThrough = ["device", "mode", "lat", "lon", "altHAE", "altMSL", "ept", "epx", "epy", "epv", "eph",
                                "sep", "eps", "epc", "epd", "track", "magtrack", "magvar", "speed", "climb", "geoidSep"]

    @Test("gpspipe -w through the front prints the upstream gpsd's device path and, epoch by epoch, its TPV figures")
    func upstreamFiguresPassThrough() throws {
        var template = Array("/tmp/locationd-upstream-XXXXXX".utf8CString)
        let directory = try #require(TemporaryDirectories.mkdtemp(&template).map { String(cString: $0) })
        chmod(directory, 0o755)
        let upstream = try GpsdFrontEndToEndTests.freePort()
        // The upstream gpsd replays the capture in a loop, 20 sentences a second (about 3 epochs a second).
        let gpsfake = try PolicyEndToEndTests.start(["env", "TMPDIR=\(directory)", "setsid", "gpsfake", "-q", "-c", "0.05",
                                                     "-P", String(upstream), DaemonProcess.demoCapture], in: directory)
        defer { kill(-gpsfake.pid, SIGKILL); kill(gpsfake.pid, SIGKILL); _ = PolicyEndToEndTests.finish(gpsfake) }
        let end = monotonic() + 10
        while monotonic() < end, !GpsdPortInUseTests.listening(port: upstream) { usleep(20_000) }

        let front = try GpsdFrontEndToEndTests.freePort()
        let config = """
            [receiver upstream]
            type = gpsd
            server = localhost:\(upstream)
            check-date = no

            [policy]
            access = deny

            \(PolicyEndToEndTests.rootSeesAll)
            """
        let daemon = try DaemonProcess(config: config, daemonKeys: "gpsd-listen = 127.0.0.1:\(front)\n")
        defer { daemon.stop(signal: SIGKILL) }

        let direct = try PolicyEndToEndTests.start(["gpspipe", "-w", "localhost:\(upstream)"], in: directory)
        let through = try PolicyEndToEndTests.start(["gpspipe", "-w", "127.0.0.1:\(front)"], in: directory)
        usleep(8_000_000)
        for started in [direct, through] { kill(started.pid, SIGKILL) }
        let gpsd = PolicyEndToEndTests.finish(direct).stdout
        let ours = PolicyEndToEndTests.finish(through).stdout

        // The device gpsfake's pty gave gpsd, as gpsd names it in its TPVs.
        let gpsdTPVs = Self.tpvsByTime(gpsd)
        let device = try #require(gpsdTPVs.values.first?["device"]?.string, "gpsd printed no TPV: \(gpsd)")
        #expect(device.hasPrefix("/dev/pts/"))
        // A client connecting once the upstream gpsd has named its device finds it in DEVICES (one that came
        // sooner found the server's address, as gpsd lists no device it has not opened).
        let later = try PolicyEndToEndTests.run(["timeout", "5", "gpspipe", "-w", "-n", "3", "127.0.0.1:\(front)"], in: directory).stdout
        let devicesLine = GpsdFrontEndToEndTests.lines(later).first { $0.contains(#""class":"DEVICES""#) }
        #expect(devicesLine?.contains(#""path":"\#(device)""#) == true, "the front's DEVICES: \(devicesLine ?? "none")")
        // locationctl status names both: gpsd's address and the device it reads.
        let locationctl = BuiltProducts.directory(containing: "locationctl") + "/locationctl"
        let status = try PolicyEndToEndTests.run([locationctl, "status", "--socket", daemon.socketPath], in: directory).stdout
        #expect(status.contains("localhost:\(upstream) (\(device))"), "\(status)")
        // Nobody else is connected now (the gpspipe runs ended): status does not count itself (issue 33).
        #expect(status.contains("clients: 0 besides this one"), "\(status)")
        let json = try PolicyEndToEndTests.run([locationctl, "status", "--json", "--socket", daemon.socketPath], in: directory).stdout
        #expect(json.contains(#""device":"\#(device)""#), "\(json)")
        // Another uid without a grant is shown the configured path only, in DEVICES and in its mode 1 TPVs (and in
        // STATUS, `ServerMessageEncodingTests`): the device gpsd named once it answered would tell that it runs.
        let stranger = try PolicyEndToEndTests.run(GpsdFrontEndToEndTests.asNobody + ["timeout", "5", "gpspipe", "-w", "-n", "5",
                                                                                     "127.0.0.1:\(front)"], in: directory).stdout
        #expect(stranger.contains(#""path":"localhost:\#(upstream)""#) && !stranger.contains(device), "\(stranger)")
        #expect(stranger.contains(#"{"class":"TPV","device":"localhost:\#(upstream)","mode":1}"#), "\(stranger)")
        // Learning the device is a status change, not a new connection: "receiver connected" is logged once.
        let connectedLines = daemon.log.split(separator: "\n").filter { $0.contains("receiver connected") }
        #expect(connectedLines.count == 1, "\(connectedLines)")

        let ourTPVs = Self.tpvsByTime(ours)
        let common = Set(gpsdTPVs.keys).intersection(ourTPVs.keys).sorted()
        #expect(common.count >= 10, "only \(common.count) epochs in common; gpsd printed \(gpsdTPVs.count), the front \(ourTPVs.count)")
        var differing: [String] = []
        for time in common {
            guard let theirs = gpsdTPVs[time], let mine = ourTPVs[time] else { continue }
            for key in Self.passedThrough where theirs[key] != mine[key] {
                differing.append("\(time) \(key): gpsd \(theirs[key].map { "\($0)" } ?? "absent"), front \(mine[key].map { "\($0)" } ?? "absent")")
            }
        }
        #expect(differing.isEmpty, "\(differing.count) differences, first: \(differing.prefix(10))")
        // The figures gpsd works out from the previous fix are there to compare, not absent on both sides.
        let withSpeedError = common.filter { gpsdTPVs[$0]?["eps"] != nil }
        #expect(withSpeedError.count >= common.count / 2, "gpsd gave eps on \(withSpeedError.count) of \(common.count) epochs")
        #expect(common.contains { gpsdTPVs[$0]?["magtrack"] != nil })
        // A SKY with the first TPV after each of gpsd's SKYs, not with every TPV (this capture's GSV comes every
        // third epoch).
        let skies = { (pipe: String) in GpsdFrontEndToEndTests.lines(pipe).filter { $0.contains(#""class":"SKY""#) }.count }
        #expect(skies(gpsd) >= 3 && abs(skies(ours) - skies(gpsd)) <= 2, "SKY lines: gpsd \(skies(gpsd)), the front \(skies(ours))")
    }

    /// gpspipe's TPVs with a position, by their `time` as printed (the last TPV of each time).
    static func tpvsByTime(_ pipe: String) -> [String: [String: JSONValue]] {
        var out: [String: [String: JSONValue]] = [:]
        for line in GpsdFrontEndToEndTests.lines(pipe) {
            guard let o = JSONValue.object(String(line)), o["class"]?.string == "TPV", o["lat"] != nil,
                  let time = o["time"]?.string else { continue }
            out[time] = o
        }
        return out
    }
}
