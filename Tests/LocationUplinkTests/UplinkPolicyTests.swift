#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Testing

/// Issue 17, "under the policy": an uplink is a client identified as the daemon's own service, its
/// section the administrator's grant, capped by the rule that matches the daemon (else `[policy]`);
/// `locationctl grants` lists every uplink with what it gets. Real daemon, real mosquitto, positions
/// checked against `locationctl decode` of the capture.
@Suite("uplink: under the policy, and in locationctl grants", .serialized)
struct UplinkPolicyTests {
    /// The row of `locationctl grants` for the uplink `fleet`, split on runs of spaces, and the note under it.
    static func grantsRow(_ output: String) -> (cells: [String], note: String?) {
        let lines = output.split(separator: "\n").map(String.init)
        guard let index = lines.firstIndex(where: { $0.hasPrefix("fleet ") }) else { return ([], nil) }
        let cells = lines[index].split(separator: " ").map(String.init)
        let next = index + 1 < lines.count ? String(lines[index + 1].drop { $0 == " " }) : ""
        return (cells, next.hasPrefix("└ ") ? String(next.dropFirst(2)) : nil)
    }

    struct GrantsReply: Decodable {
        struct Uplink: Decodable, Equatable {
            var name: String, broker: String, topic: String, format: String, accuracy: String?, requested: String, sharing: Bool
        }
        var `class`: String
        var uplinks: [Uplink]?
    }

    @Test("locationctl grants lists the uplink (name, broker, accuracy, format, sharing), --json too; share off shows paused")
    func grantsListsUplinks() throws {
        let (broker, reports, _, daemon) = try UplinkEndToEndTests.setUp(accuracy: "full")
        #expect(eventually(15) { locations(reports.output).count >= 3 }, "\(daemon.log)")
        let shown = try UplinkEndToEndTests.locationctl(daemon, "grants")
        #expect(shown.contains("UPLINK") && shown.contains("BROKER") && shown.contains("SHARING"), "\(shown)")
        #expect(Self.grantsRow(shown).cells == ["fleet", "mqtt://127.0.0.1:\(broker.port)", "full", "owntracks", "on"], "\(shown)")
        #expect(Self.grantsRow(shown).note == nil, "\(shown)")
        let json = try UplinkEndToEndTests.locationctl(daemon, "grants", "--json")
        let reply = try JSONDecoder().decode(GrantsReply.self, from: Data(json.utf8))
        #expect(reply.class == "GRANTS")
        #expect(reply.uplinks == [GrantsReply.Uplink(name: "fleet", broker: "mqtt://127.0.0.1:\(broker.port)", topic: "owntracks/fleet/fleet",
                                                     format: "owntracks", accuracy: "full", requested: "full", sharing: true)], "\(json)")
        _ = try UplinkEndToEndTests.locationctl(daemon, "share", "off")
        let paused = try UplinkEndToEndTests.locationctl(daemon, "grants")
        #expect(Self.grantsRow(paused).cells == ["fleet", "mqtt://127.0.0.1:\(broker.port)", "full", "owntracks", "paused"], "\(paused)")
    }

    @Test("[policy] accuracy = reduced, uplink asks full: only reduced-grid positions, at most one per reduced-interval; grants and status say reduced")
    func policyCapsTheUplink() throws {
        let expected = try decodedPositions()
        // 74 epochs at 10× the capture's pace: about 7.4 s of the daemon's clock, 74 s of the capture's.
        let (broker, reports, _, daemon) = try UplinkEndToEndTests.setUp(accuracy: "full", policy: "accuracy = reduced\nreduced-interval = 2s",
                                                                         seconds: 14)
        _ = broker
        #expect(eventually(15) { locations(reports.output).count >= 1 }, "\(daemon.log)")
        let shown = try UplinkEndToEndTests.locationctl(daemon, "grants")
        #expect(Self.grantsRow(shown).cells == ["fleet", "mqtt://127.0.0.1:\(broker.port)", "reduced", "owntracks", "on"], "\(shown)")
        #expect(Self.grantsRow(shown).note == "[policy] default allows no more than reduced accuracy", "\(shown)")
        let status = try UplinkEndToEndTests.locationctlStatus(daemon)
        #expect(status.split(separator: "\n").first { $0.hasPrefix("fleet ") }?.split(separator: " ").prefix(3).map(String.init)
                    == ["fleet", "connected", "reduced"], "\(status)")
        _ = reports.wait(seconds: 20)
        let received = locations(reports.output)
        // One report at the start, then one every 2 s of the daemon's clock: 2 to 5 in 7.4 s.
        #expect((2...5).contains(received.count), "\(received.count) reports: \(received.map(\.tst))")
        let latitudeStep = 2000.0 / 111_000.0
        for location in received {
            #expect((location.acc ?? 0) >= 2000)
            #expect(location.alt == nil && location.vel == nil && location.cog == nil && location.vac == nil, "\(location)")
            let latCells = location.lat / latitudeStep
            #expect(abs(latCells - latCells.rounded()) < 1e-3, "\(location.lat) is not on the grid")
            let lonCells = location.lon / (2000.0 / (111_000.0 * cos(location.lat * .pi / 180)))
            #expect(abs(lonCells - lonCells.rounded()) < 1e-3, "\(location.lon) is not on the grid")
            let truth = try #require(expected[location.tst])
            #expect(truth.lat != location.lat || truth.lon != location.lon)
            #expect(abs(truth.lat - location.lat) < 0.1 && abs(truth.lon - location.lon) < 0.1)
        }
        // Paced: 2 s of the daemon's clock are 20 s of the capture's; allow for the replay's jitter.
        let times = received.map(\.tst)
        for (earlier, later) in zip(times, times.dropFirst()) {
            #expect(later - earlier >= 15, "reports \(earlier) and \(later) closer than reduced-interval: \(times)")
        }
        #expect(daemon.log.contains("[policy] default allows no more than reduced accuracy"), "the decision is audited")
    }

    @Test("a [client] rule naming the daemon's executable lifts the cap: full positions equal to locationctl decode's")
    func ruleForTheDaemonLiftsTheCap() throws {
        let expected = try decodedPositions()
        let executable = UplinkDaemon.binary("locationd")
        let policy = "accuracy = reduced\n\n[client fleet-uplinks]\nexecutable = \(executable)\naccess = always\naccuracy = full"
        let (broker, reports, _, daemon) = try UplinkEndToEndTests.setUp(accuracy: "full", policy: policy)
        #expect(eventually(25) { Set(locations(reports.output).map(\.tst)).count >= expected.count }, "\(daemon.log)")
        for location in locations(reports.output) {
            let truth = try #require(expected[location.tst])
            #expect(abs(location.lat - truth.lat) < 5e-8 && abs(location.lon - truth.lon) < 5e-8, "\(location) vs \(truth)")
        }
        let shown = try UplinkEndToEndTests.locationctl(daemon, "grants")
        #expect(Self.grantsRow(shown).cells == ["fleet", "mqtt://127.0.0.1:\(broker.port)", "full", "owntracks", "on"], "\(shown)")
    }

    @Test("a [client] rule denying the daemon: nothing is published; grants shows none and why, status none")
    func ruleDeniesTheUplink() throws {
        let executable = UplinkDaemon.binary("locationd")
        let policy = "accuracy = full\n\n[client no-uplinks]\nexecutable = \(executable)\naccess = deny"
        let (broker, reports, status, daemon) = try UplinkEndToEndTests.setUp(accuracy: "full", policy: policy, seconds: 8)
        #expect(eventually(10) { status.output.contains("online") }, "\(daemon.log)")
        let shown = try UplinkEndToEndTests.locationctl(daemon, "grants")
        #expect(Self.grantsRow(shown).cells == ["fleet", "mqtt://127.0.0.1:\(broker.port)", "none", "owntracks", "on"], "\(shown)")
        #expect(Self.grantsRow(shown).note == "rule [client no-uplinks] denies access: nothing is published", "\(shown)")
        let state = try UplinkEndToEndTests.locationctlStatus(daemon)
        #expect(state.split(separator: "\n").first { $0.hasPrefix("fleet ") }?.split(separator: " ").prefix(3).map(String.init)
                    == ["fleet", "connected", "none"], "\(state)")
        _ = reports.wait(seconds: 10)
        #expect(locations(reports.output).isEmpty, "\(reports.output.prefix(500))")
    }
}
