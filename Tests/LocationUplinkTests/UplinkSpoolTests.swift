#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Testing

/// Issue 17, the spool: a hard bound (`spool-max`, in memory and on disk, at every moment) that loses
/// nothing when the daemon is killed. Real daemon, real mosquitto; expected reports from `locationctl
/// decode` of the capture; the spool file read as the journal is documented (`spooledReports`).
@Suite("uplink: the spool is a hard bound and survives SIGKILL", .serialized)
struct UplinkSpoolTests {
    /// Waits for the replay to reach the end of the capture (the receiver says so in the log).
    static func replayEnded(_ daemon: UplinkDaemon, within seconds: Double) -> Bool {
        eventually(seconds) { daemon.log.contains("end of file") }
    }

    @Test("broker down, daemon killed (SIGKILL) with every later report spooled, restarted, broker up: every report arrives once, in order")
    func killedWhileSpooling() throws {
        let expected = try decodedPositions()
        let scratch = try Scratch()
        let broker = try Broker(scratch: scratch, persistent: true)
        let passwordFile = scratch.write("fleet.password", Broker.password + "\n", mode: 0o600)
        let reports = try broker.subscribe("fleet/fleet", seconds: 120, name: "reports", session: "consumer")
        let section = UplinkStoreAndForwardTests.section(port: broker.port, passwordFile: passwordFile)
        let daemon = try UplinkDaemon(scratch: scratch, uplink: section, rate: "10")
        #expect(eventually(15) { locations(reports.output).count >= 5 }, "\(daemon.log)")
        broker.stop(SIGTERM)
        #expect(Self.replayEnded(daemon, within: 20), "\(daemon.log)")
        // A crash as soon as the last fix is made: what was accepted must be on disk already.
        usleep(200_000)
        daemon.stop(SIGKILL)
        let spoolPath = scratch.path + "/state/uplink-fleet.spool"
        let spooled = spooledReports(spoolPath).reports.map(\.tst)
        #expect(spooled.count > 30, "\(spooled.count) reports spooled")
        #expect(spooled == spooled.sorted())
        #expect(spooled.last == expected.keys.max(), "the last fix of the capture is in the spool")
        // Restarted on an empty capture, the broker still down: it holds the spool; then the broker comes back.
        // (A daemon started while its broker refused connections never connected: libmosquitto's thread
        // ends without a connection to keep. It must connect once the broker is up.)
        let empty = scratch.write("empty.nmea", "")
        let again = try UplinkDaemon(scratch: scratch, uplink: section, rate: "10", capture: empty)
        #expect(eventually(10) { again.log.contains("uplink spool loaded") }, "\(again.log)")
        sleep(2)
        try broker.start()
        #expect(eventually(40) { Set(locations(reports.output).map(\.tst)).count >= expected.count }, "\(again.log)")
        let arrivals = UplinkStoreAndForwardTests.firstArrivals(reports.output)
        #expect(Set(arrivals) == Set(expected.keys), "missing: \(Set(expected.keys).subtracting(arrivals).sorted())")
        #expect(arrivals == arrivals.sorted(), "out of order: \(arrivals)")
        #expect(eventually(10) { spooledReports(spoolPath).reports.isEmpty }, "acknowledged reports leave the spool")
    }

    @Test("killed mid-replay with the broker down: what arrives after the restart is the capture's reports without a gap, in order")
    func killedMidReplay() throws {
        let expected = try decodedPositions().keys.sorted()
        let scratch = try Scratch()
        let broker = try Broker(scratch: scratch, persistent: true)
        let passwordFile = scratch.write("fleet.password", Broker.password + "\n", mode: 0o600)
        let reports = try broker.subscribe("fleet/fleet", seconds: 120, name: "reports", session: "consumer")
        let section = UplinkStoreAndForwardTests.section(port: broker.port, passwordFile: passwordFile)
        let daemon = try UplinkDaemon(scratch: scratch, uplink: section, rate: "10")
        #expect(eventually(15) { locations(reports.output).count >= 5 }, "\(daemon.log)")
        broker.stop(SIGTERM)
        // Killed while fixes still come (about 7 s of replay in all).
        usleep(1_500_000)
        daemon.stop(SIGKILL)
        #expect(!daemon.log.contains("end of file"), "the kill came after the replay")
        let empty = scratch.write("empty.nmea", "")
        let again = try UplinkDaemon(scratch: scratch, uplink: section, rate: "10", capture: empty)
        try broker.start()
        let spooled = spooledReports(scratch.path + "/state/uplink-fleet.spool").reports.map(\.tst)
        #expect(eventually(30) { Set(locations(reports.output).map(\.tst)).isSuperset(of: spooled) }, "\(again.log)")
        sleep(1)
        let arrivals = UplinkStoreAndForwardTests.firstArrivals(reports.output)
        #expect(arrivals == Array(expected.prefix(arrivals.count)), "a report was lost: \(arrivals)")
        #expect(arrivals.count > 10 && arrivals.count < expected.count, "\(arrivals.count) of \(expected.count)")
    }

    @Test("spool-max 20, broker unreachable, 74 reports (more than 3 × 20): never more than 20 held, then the newest 20; 54 dropped, counted and logged")
    func hardBound() throws {
        let expected = try decodedPositions().keys.sorted()
        #expect(expected.count >= 60)
        let scratch = try Scratch()
        // Nothing listens on this port: the uplink never connects, every report goes to the spool.
        let probe = try Broker(scratch: scratch)
        let port = probe.port
        probe.stop()
        let passwordFile = scratch.write("fleet.password", Broker.password + "\n", mode: 0o600)
        let section = UplinkStoreAndForwardTests.section(port: port, passwordFile: passwordFile, extra: "spool-max = 20")
        let daemon = try UplinkDaemon(scratch: scratch, uplink: section, rate: "10")
        let spoolPath = scratch.path + "/state/uplink-fleet.spool"
        var most = 0, mostRecords = 0, samples = 0
        let deadline = now() + 20
        while now() < deadline && !daemon.log.contains("end of file") {
            let seen = spooledReports(spoolPath)
            most = max(most, seen.reports.count)
            mostRecords = max(mostRecords, seen.records)
            samples += 1
            usleep(10_000)
        }
        usleep(500_000)
        let held = spooledReports(spoolPath)
        #expect(samples > 100)
        #expect(most <= 20, "the spool file held \(most) reports at one moment")
        // Removals are records too, compacted once they outnumber the reports held (and 64).
        #expect(mostRecords <= 20 + 2 * 65, "\(mostRecords) records in the file at one moment")
        #expect(held.reports.map(\.tst) == Array(expected.suffix(20)), "\(held.reports.map(\.tst))")
        let status = try UplinkEndToEndTests.locationctlStatus(daemon)
        let row = status.split(separator: "\n").first { $0.hasPrefix("fleet ") }?.split(separator: " ").map(String.init) ?? []
        #expect(Array(row.prefix(6)) == ["fleet", "disconnected", "full", "20", "0", String(expected.count - 20)], "\(status)")
        #expect(daemon.log.contains("uplink spool full: oldest reports dropped"), "\(daemon.log)")
    }
}
