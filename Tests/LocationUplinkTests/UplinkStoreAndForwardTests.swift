#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Testing

/// Issue 17, store and forward: reports made while the broker is away wait in the spool and arrive
/// once, in order, when it is back — also across a restart of the daemon; a full spool drops the oldest.
@Suite("uplink: store and forward through a broker outage", .serialized)
struct UplinkStoreAndForwardTests {
    static func section(port: UInt16, passwordFile: String, extra: String = "") -> String {
        """
        type = mqtt
        broker = mqtt://127.0.0.1:\(port)
        client-id = locationd-spool-test
        username = \(Broker.user)
        password-file = \(passwordFile)
        topic = fleet/%n
        accuracy = full
        \(extra)
        """
    }

    /// The tst values in the order they first arrived.
    static func firstArrivals(_ output: String) -> [Int] {
        var seen = Set<Int>()
        return locations(output).map(\.tst).filter { seen.insert($0).inserted }
    }

    @Test("broker stopped mid-replay until 15 reports wait in the spool, then restarted: every report of the capture arrives, each tst once, in order")
    func outage() throws {
        let expected = try decodedPositions()
        let scratch = try Scratch()
        let broker = try Broker(scratch: scratch, persistent: true)
        let passwordFile = scratch.write("fleet.password", Broker.password + "\n", mode: 0o600)
        let reports = try broker.subscribe("fleet/fleet", seconds: 120, name: "reports", session: "consumer")
        // The capture's 71 s at 3× its pace: about 24 s, so that the outage (15 reports, 5 s) falls inside the replay.
        let daemon = try UplinkDaemon(scratch: scratch, uplink: Self.section(port: broker.port, passwordFile: passwordFile), rate: "3")
        #expect(eventually(15) { locations(reports.output).count >= 10 }, "\(daemon.log)")
        broker.stop(SIGTERM)
        let before = Set(locations(reports.output).map(\.tst)).count
        // The outage lasts until reports wait in the spool's journal, not for a guessed time.
        let spool = scratch.path + "/state/uplink-fleet.spool"
        #expect(eventually(30) { spooledReports(spool).reports.count >= 15 }, "\(daemon.log)")
        #expect(!daemon.log.contains("end of file"), "the replay ended during the outage")
        #expect(daemon.log.contains("uplink not connected"), "\(daemon.log)")
        try broker.start()
        #expect(eventually(60) { Set(locations(reports.output).map(\.tst)).count >= expected.count }, "\(daemon.log)")
        let arrivals = Self.firstArrivals(reports.output)
        #expect(Set(arrivals) == Set(expected.keys))
        #expect(arrivals == arrivals.sorted(), "out of order: \(arrivals)")
        let all = locations(reports.output).count
        #expect(all - arrivals.count <= 25, "\(all - arrivals.count) repeats (QoS 1 resends what was in flight)")
        #expect(before < expected.count - 10, "the outage did not fall in the replay (\(before) before it)")
        #expect(daemon.log.contains("spool.sending="), "\(daemon.log)")
    }

    @Test("daemon killed with a spool of reports (spool-max 5, oldest dropped and logged): restarted, it sends the rest")
    func restartWithSpool() throws {
        let expected = try decodedPositions()
        let scratch = try Scratch()
        let broker = try Broker(scratch: scratch, persistent: true)
        let passwordFile = scratch.write("fleet.password", Broker.password + "\n", mode: 0o600)
        let reports = try broker.subscribe("fleet/fleet", seconds: 90, name: "reports", session: "consumer")
        let section = Self.section(port: broker.port, passwordFile: passwordFile, extra: "spool-max = 5")
        let daemon = try UplinkDaemon(scratch: scratch, uplink: section, rate: "10")
        #expect(eventually(15) { locations(reports.output).count >= 5 }, "\(daemon.log)")
        broker.stop(SIGTERM)
        // The rest of the replay goes to the spool; the oldest are dropped beyond 5.
        #expect(eventually(20) { daemon.log.contains("uplink spool full") }, "\(daemon.log)")
        sleep(2)
        let spoolPath = scratch.path + "/state/uplink-fleet.spool"
        #expect(eventually(10) { spooledReports(spoolPath).reports.map(\.tst).contains(expected.keys.max() ?? 0) })
        daemon.stop()
        let spooled = spooledReports(spoolPath).reports
        #expect(spooled.count == 5, "\(spooled.map(\.tst)) spooled")
        // Held: what was in flight when the broker went (libmosquitto resends it), then the newest of the
        // capture; the oldest of those made during the outage were dropped.
        let received = Set(locations(reports.output).map(\.tst))
        let inFlight = spooled.map(\.tst).filter { tst in (expected.keys.sorted().firstIndex(of: tst) ?? 0) < expected.count - 5 }
        let newest = Set(expected.keys.sorted().suffix(5 - inFlight.count))
        #expect(Set(spooled.map(\.tst)).subtracting(inFlight) == newest, "\(spooled.map(\.tst))")
        #expect(inFlight.count <= 2, "\(inFlight)")
        #expect(daemon.log.contains("dropped="), "\(daemon.log)")
        try broker.start()
        // Restarted on an empty capture: whatever arrives now comes from the spool.
        let empty = scratch.write("empty.nmea", "")
        let again = try UplinkDaemon(scratch: scratch, uplink: section, rate: "10", capture: empty)
        let wanted = Set(spooled.map(\.tst))
        #expect(eventually(30) { Set(locations(reports.output).map(\.tst)).isSuperset(of: wanted) }, "\(again.log)")
        let arrivals = Self.firstArrivals(reports.output)
        #expect(Set(arrivals) == received.union(wanted), "nothing but the spool arrives after the restart")
        #expect(arrivals == arrivals.sorted(), "out of order: \(arrivals)")
        #expect(again.log.contains("uplink spool loaded"), "\(again.log)")
        #expect(eventually(10) { spooledReports(spoolPath).reports.isEmpty }, "the spool is emptied once the broker acknowledged it")
    }
}
