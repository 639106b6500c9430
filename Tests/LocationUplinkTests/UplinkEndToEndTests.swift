#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import TestSupport
import Testing

/// Issue 17: the real daemon replays a capture and publishes to a real mosquitto (password auth) on a
/// loopback port; `mosquitto_sub` is the consumer; expected positions come from `locationctl decode`.
@Suite("uplink: the daemon publishes to a real mosquitto", .serialized)
struct UplinkEndToEndTests {
    static let topic = "owntracks/fleet/test"

    static func uplink(accuracy: String, extra: String = "", passwordFile: String) -> String {
        """
        type = mqtt
        broker = mqtt://127.0.0.1:PORT
        client-id = locationd-test
        username = \(Broker.user)
        password-file = \(passwordFile)
        topic = owntracks/fleet/%n
        accuracy = \(accuracy)
        tracker-id = t1
        \(extra)
        """
    }

    static func setUp(accuracy: String, extra: String = "", password: String = Broker.password, policy: String = "accuracy = full",
                      rate: String = "10", seconds: Int = 20) throws -> (Broker, Spawned, Spawned, UplinkDaemon) {
        let scratch = try Scratch()
        let broker = try Broker(scratch: scratch)
        let passwordFile = scratch.write("fleet.password", password + "\n", mode: 0o600)
        let reports = try broker.subscribe("owntracks/fleet/fleet", seconds: seconds, name: "reports")
        let status = try broker.subscribe("owntracks/fleet/fleet/status", seconds: seconds, name: "status")
        let section = uplink(accuracy: accuracy, extra: extra, passwordFile: passwordFile).replacing("PORT", with: String(broker.port))
        let daemon = try UplinkDaemon(scratch: scratch, uplink: section, rate: rate, policy: policy)
        return (broker, reports, status, daemon)
    }

    /// `locationctl status` as root against the daemon.
    static func locationctlStatus(_ daemon: UplinkDaemon) throws -> String {
        try locationctl(daemon, "status")
    }

    /// `locationctl ARGUMENTS` as root against the daemon: what it printed.
    static func locationctl(_ daemon: UplinkDaemon, _ arguments: String...) throws -> String {
        let run = try Spawned([UplinkDaemon.binary("locationctl"), "--socket", daemon.scratch.path + "/locationd.sock"] + arguments,
                              output: daemon.scratch.path + "/locationctl-\(UInt32.random(in: 0...UInt32.max)).out")
        _ = run.wait(seconds: 15)
        return run.output
    }

    @Test("libmosquitto and OpenSSL are loaded only for an uplink: a daemon without one maps neither (issue 16: 1.7 MiB resident)")
    func libraryOnlyWithUplink() throws {
        let scratch = try Scratch()
        _ = scratch.write("locationd.conf", """
            [daemon]
            socket = \(scratch.path)/locationd.sock
            state-directory = \(scratch.path)/state
            [receiver demo]
            type = replay
            file = \(UplinkDaemon.capture)
            """)
        let plain = try Spawned([UplinkDaemon.binary("locationd"), "--config", scratch.path + "/locationd.conf"],
                                output: scratch.path + "/plain.log")
        #expect(eventually(10) { FileManager.default.fileExists(atPath: scratch.path + "/locationd.sock") }, "\(plain.output)")
        let without = mappedLibraries(plain.pid)
        plain.stop(SIGTERM)
        #expect(without.contains { $0.hasPrefix("libc.so") }, "\(without)")
        #expect(!without.contains { $0.hasPrefix("libmosquitto") || $0.hasPrefix("libssl") || $0.hasPrefix("libcrypto") }, "\(without)")

        let (broker, reports, _, daemon) = try Self.setUp(accuracy: "full")
        _ = broker
        #expect(eventually(25) { !locations(reports.output).isEmpty }, "\(daemon.log)")
        let with = mappedLibraries(daemon.process?.pid ?? 0)
        #expect(with.contains { $0.hasPrefix("libmosquitto.so") } && with.contains { $0.hasPrefix("libssl") }, "\(with)")
    }

    @Test("full accuracy: every fix of the capture arrives as an OwnTracks location equal to locationctl decode's; status online")
    func fullAccuracy() throws {
        let expected = try decodedPositions()
        #expect(expected.count > 50)
        let (broker, reports, status, daemon) = try Self.setUp(accuracy: "full")
        _ = broker
        // 74 epochs at 10× the capture's pace: about 8 s.
        #expect(eventually(25) { Set(locations(reports.output).map(\.tst)).count >= expected.count }, "\(daemon.log)")
        let received = locations(reports.output)
        #expect(Set(received.map(\.tst)) == Set(expected.keys), "\(reports.output.prefix(3000))")
        for location in received {
            #expect(location._type == "location")
            #expect(location.tid == "t1")
            let truth = try #require(expected[location.tst])
            #expect(abs(location.lat - truth.lat) < 5e-8 && abs(location.lon - truth.lon) < 5e-8, "\(location) vs \(truth)")
        }
        #expect(status.output.contains("online"), "\(status.output)")
        #expect(daemon.log.contains("uplink connected"), "\(daemon.log)")
        let shown = try Self.locationctlStatus(daemon)
        let row = shown.split(separator: "\n").first { $0.hasPrefix("fleet ") }?.split(separator: " ").map(String.init) ?? []
        #expect(Array(row.prefix(6)) == ["fleet", "connected", "full", "0", String(expected.count), "0"], "\(shown)")
        #expect(daemon.log.contains("uplink fleet → mqtt://127.0.0.1:"), "first delivery audited")
    }

    @Test("reduced accuracy (the default): positions on the ~2 km grid, acc ≥ 2000 m, no altitude, speed or course")
    func reducedAccuracy() throws {
        let expected = try decodedPositions()
        let (broker, reports, _, daemon) = try Self.setUp(accuracy: "reduced", policy: "accuracy = full\nreduced-interval = 1s")
        _ = broker
        #expect(eventually(20) { locations(reports.output).count >= 2 }, "\(daemon.log)")
        let received = locations(reports.output)
        let latitudeStep = 2000.0 / 111_000.0
        for location in received {
            #expect((location.acc ?? 0) >= 2000)
            #expect(location.alt == nil && location.vel == nil && location.cog == nil && location.vac == nil, "\(location)")
            let latCells = location.lat / latitudeStep
            #expect(abs(latCells - latCells.rounded()) < 1e-3, "\(location.lat) is not on the grid")
            let longitudeStep = 2000.0 / (111_000.0 * cos(location.lat * .pi / 180))
            let lonCells = location.lon / longitudeStep
            #expect(abs(lonCells - lonCells.rounded()) < 1e-3, "\(location.lon) is not on the grid")
            // Not the true position, but within a few grid steps of it.
            let truth = try #require(expected[location.tst])
            #expect(truth.lat != location.lat || truth.lon != location.lon)
            #expect(abs(truth.lat - location.lat) < 0.1 && abs(truth.lon - location.lon) < 0.1)
        }
        // Paced: at most one report a second of the daemon's clock while the capture runs at 10×.
        #expect(received.count < 30, "\(received.count) reduced reports")
    }

    @Test("status: online (retained) while running; a clean stop says offline, and so does the last will after a crash")
    func statusAndWill() throws {
        let (broker, _, status, daemon) = try Self.setUp(accuracy: "full", seconds: 30)
        #expect(eventually(10) { status.output.contains("online") }, "\(daemon.log)")
        daemon.stop(SIGTERM)
        #expect(eventually(5) { status.output.contains("online\noffline") }, "\(status.output)")
        #expect(daemon.log.contains("stopping"))
        // A crash: the broker sends the will when it notices the link died.
        try daemon.start()
        #expect(eventually(10) { status.output.components(separatedBy: "online").count == 3 }, "\(status.output)")
        daemon.stop(SIGKILL)
        #expect(eventually(5) { status.output.hasSuffix("online\noffline\n") }, "\(status.output)")
        // A subscriber that comes later reads the retained state.
        let late = try broker.subscribe("owntracks/fleet/fleet/status", seconds: 2, name: "late")
        _ = late.wait(seconds: 5)
        #expect(late.output.hasPrefix("offline\n") && !late.output.contains("online"), "\(late.output)")
    }

    @Test("a wrong password is logged with the broker's reason; nothing is published")
    func wrongPassword() throws {
        let (broker, reports, _, daemon) = try Self.setUp(accuracy: "full", password: "wrong", seconds: 6)
        _ = broker
        #expect(eventually(10) { daemon.log.contains("broker refused the connection") }, "\(daemon.log)")
        #expect(daemon.log.contains("not authorised"), "\(daemon.log)")
        // locationctl status shows the uplink and why it is not connected.
        let status = try Self.locationctlStatus(daemon)
        #expect(status.contains("fleet   disconnected  full "), "\(status)")
        #expect(status.contains("└ broker refused the connection: Connection Refused: not authorised."), "\(status)")
        _ = reports.wait(seconds: 8)
        #expect(locations(reports.output).isEmpty)
    }
}
