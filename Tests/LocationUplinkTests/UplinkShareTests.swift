#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Testing

/// Issue 17, the sharing switch: `locationctl share off [--for D] | on | status` against the real daemon
/// and a real mosquitto.
@Suite("uplink: the sharing switch", .serialized)
struct UplinkShareTests {
    static func start(scratch: Scratch, broker: Broker, rate: String = "4") throws -> UplinkDaemon {
        let passwordFile = scratch.write("fleet.password", Broker.password + "\n", mode: 0o600)
        return try UplinkDaemon(scratch: scratch, uplink: """
            type = mqtt
            broker = mqtt://127.0.0.1:\(broker.port)
            username = \(Broker.user)
            password-file = \(passwordFile)
            topic = share/%n
            accuracy = full
            """, rate: rate)
    }

    /// Runs `locationctl share ARGS` (optionally through `launcher`, e.g. setpriv); exit status and output.
    static func share(_ scratch: Scratch, _ arguments: [String], launcher: [String] = []) throws -> (status: Int32, output: String) {
        let out = scratch.path + "/share-\(UInt32.random(in: 0...UInt32.max)).out"
        let run = try Spawned(launcher + [UplinkDaemon.binary("locationctl"), "--socket", scratch.path + "/locationd.sock", "share"] + arguments,
                              output: out)
        var status: Int32 = 0
        waitpid(run.pid, &status, 0)
        return ((status >> 8) & 0xff, run.output)
    }

    static func tsts(_ spawned: Spawned) -> Set<Int> { Set(locations(spawned.output).map(\.tst)) }

    @Test("share off --for 5s: nothing from the next fix on, the pause's fixes never sent, then sharing on by itself; audited")
    func timedPause() throws {
        let expected = try decodedPositions()
        let scratch = try Scratch()
        let broker = try Broker(scratch: scratch)
        let reports = try broker.subscribe("share/fleet", seconds: 60, name: "reports")
        let status = try broker.subscribe("share/fleet/status", seconds: 60, name: "status")
        let daemon = try Self.start(scratch: scratch, broker: broker)
        #expect(eventually(15) { Self.tsts(reports).count >= 8 }, "\(daemon.log)")
        let off = try Self.share(scratch, ["off", "--for", "5s"])
        #expect(off.status == 0 && off.output.hasPrefix("sharing off until 20"), "\(off.output)")
        sleep(1)  // a report published before the switch may still be on its way (a busy machine)
        let before = Self.tsts(reports)
        #expect(eventually(3) { status.output.contains("paused") }, "\(status.output)")
        let asked = try Self.share(scratch, ["status"])
        #expect(asked.output.hasPrefix("sharing off until"), "\(asked.output)")
        sleep(2)
        #expect(Self.tsts(reports) == before, "reports arrived while sharing was off")
        // The pause ends by itself; the rest of the capture arrives, the pause's fixes never do.
        #expect(eventually(30) { Self.tsts(reports).contains(expected.keys.max() ?? 0) }, "\(daemon.log)")
        sleep(1)
        let after = Self.tsts(reports).subtracting(before)
        let gap = Set(expected.keys).subtracting(before).subtracting(after)
        #expect(gap.count >= 8, "only \(gap.count) fixes fell in the pause")
        #expect(after.allSatisfy { $0 > (before.max() ?? 0) }, "a fix from before or during the pause was sent later")
        #expect(gap.allSatisfy { $0 > (before.max() ?? 0) && $0 < (after.min() ?? 0) }, "the unsent fixes are not one window")
        #expect(status.output.hasSuffix("paused\nonline\n"), "\(status.output)")
        let audit = (try? String(contentsOfFile: scratch.path + "/state/audit-uid-0.jsonl", encoding: .utf8)) ?? ""
        #expect(audit.contains("sharing off for 5 s"), "\(audit)")
    }

    @Test("share off survives a restart; share on resumes; a user outside root, admin and share groups is refused")
    func persistentPause() throws {
        let scratch = try Scratch()
        let broker = try Broker(scratch: scratch)
        let reports = try broker.subscribe("share/fleet", seconds: 60, name: "reports")
        let status = try broker.subscribe("share/fleet/status", seconds: 60, name: "status")
        let daemon = try Self.start(scratch: scratch, broker: broker, rate: "2")
        #expect(eventually(15) { Self.tsts(reports).count >= 3 }, "\(daemon.log)")
        let nobody = try Self.share(scratch, ["off"], launcher: ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
        #expect(nobody.status == 77 && nobody.output.contains("permission denied"), "\(nobody.status) \(nobody.output)")
        let off = try Self.share(scratch, ["off"])
        #expect(off.output.hasPrefix("sharing off until switched on (1 uplink)"), "\(off.output)")
        daemon.stop()
        usleep(300_000)
        let before = locations(reports.output).count
        try daemon.start()
        // Restarted, the replay runs from its start again: still nothing leaves, and the status says paused.
        #expect(eventually(10) { status.output.hasSuffix("paused\n") && status.output.contains("offline") }, "\(status.output)")
        sleep(3)
        #expect(locations(reports.output).count == before, "reports published after a restart while sharing was off")
        let asked = try Self.share(scratch, ["status"])
        #expect(asked.output.hasPrefix("sharing off until switched on"), "\(asked.output)")
        let on = try Self.share(scratch, ["on"])
        #expect(on.status == 0 && on.output.hasPrefix("sharing on"), "\(on.output)")
        #expect(eventually(10) { locations(reports.output).count > before }, "\(daemon.log)")
        #expect(status.output.hasSuffix("online\n"), "\(status.output)")
        #expect(access(scratch.path + "/state/sharing", F_OK) != 0, "the state file is removed when sharing is on")
    }

    /// Lets a few reports reach the broker, stops it (SIGTERM), and waits until at least three reports were
    /// spooled after the link was known down (never handed to libmosquitto); then runs `locationctl share
    /// off ARGS` and starts the broker again, waiting until the uplink is connected to it.
    /// - Returns: the reports' subscriber, the daemon, and the tst of the reports held in the spool then.
    static func backlogThenOff(_ scratch: Scratch, _ broker: Broker, off arguments: [String]) throws -> (reports: Spawned, daemon: UplinkDaemon, held: Set<Int>) {
        let reports = try broker.subscribe("share/fleet", seconds: 90, name: "reports", session: "consumer")
        let daemon = try Self.start(scratch: scratch, broker: broker, rate: "2")
        #expect(eventually(15) { Self.tsts(reports).count >= 3 }, "\(daemon.log)")
        broker.stop(SIGTERM)
        #expect(eventually(10) { daemon.log.contains("uplink not connected") }, "\(daemon.log)")
        let spoolPath = scratch.path + "/state/uplink-fleet.spool"
        // What libmosquitto may have had when the link went (resent by it, as QoS 1 requires) is left out.
        let atLoss = Set(spooledReports(spoolPath).reports.map(\.tst))
        #expect(eventually(15) { Set(spooledReports(spoolPath).reports.map(\.tst)).subtracting(atLoss).count >= 3 }, "\(daemon.log)")
        let held = Set(spooledReports(spoolPath).reports.map(\.tst)).subtracting(atLoss)
        let off = try Self.share(scratch, ["off"] + arguments)
        #expect(off.status == 0 && off.output.hasPrefix("sharing off"), "\(off.status) \(off.output)")
        try broker.start()
        let connections = { daemon.log.split(separator: "\n").filter { $0.contains("uplink connected") }.count }
        #expect(eventually(40) { connections() >= 2 }, "reconnected: \(daemon.log)")
        return (reports, daemon, held)
    }

    @Test("share off holds what the spool had when the broker comes back; share on sends it (issue 32)")
    func offHoldsTheBacklog() throws {
        let scratch = try Scratch()
        let broker = try Broker(scratch: scratch, persistent: true)
        let (reports, daemon, held) = try Self.backlogThenOff(scratch, broker, off: [])
        sleep(2)  // the backlog would leave at once on the reconnection (it did, before)
        #expect(Self.tsts(reports).intersection(held).isEmpty, "spooled reports left while sharing was off: \(Self.tsts(reports).intersection(held).sorted())")
        let spooled = Set(spooledReports(scratch.path + "/state/uplink-fleet.spool").reports.map(\.tst))
        #expect(spooled.isSuperset(of: held), "the spool keeps them: \(spooled.sorted()) of \(held.sorted())")
        let on = try Self.share(scratch, ["on"])
        #expect(on.status == 0 && on.output.hasPrefix("sharing on"), "\(on.output)")
        #expect(eventually(20) { Self.tsts(reports).isSuperset(of: held) }, "the backlog goes once sharing is on: \(daemon.log)")
    }

    @Test("share off --discard drops what the spool had: it never goes, not even after share on (issue 32)")
    func offDiscardDropsTheBacklog() throws {
        let scratch = try Scratch()
        let broker = try Broker(scratch: scratch, persistent: true)
        let (reports, daemon, held) = try Self.backlogThenOff(scratch, broker, off: ["--discard"])
        let spoolPath = scratch.path + "/state/uplink-fleet.spool"
        #expect(eventually(5) { Set(spooledReports(spoolPath).reports.map(\.tst)).intersection(held).isEmpty }, "dropped from the spool file")
        #expect(daemon.log.contains("uplink spool discarded"), "\(daemon.log)")
        let on = try Self.share(scratch, ["on"])
        #expect(on.status == 0, "\(on.output)")
        // Reports made after sharing is on arrive; none of the discarded ones ever does.
        #expect(eventually(20) { Self.tsts(reports).contains { $0 > (held.max() ?? 0) } }, "\(daemon.log)")
        sleep(1)
        #expect(Self.tsts(reports).intersection(held).isEmpty, "discarded reports were sent: \(Self.tsts(reports).intersection(held).sorted())")
        let audit = (try? String(contentsOfFile: scratch.path + "/state/audit-uid-0.jsonl", encoding: .utf8)) ?? ""
        #expect(audit.contains("spooled reports discarded"), "\(audit)")
    }

    @Test("--discard goes with off only")
    func discardNeedsOff() throws {
        let scratch = try Scratch()
        let on = try Self.share(scratch, ["on", "--discard"])
        #expect(on.status == 64 && on.output.contains("--discard goes with off"), "\(on.status) \(on.output)")
    }
}
