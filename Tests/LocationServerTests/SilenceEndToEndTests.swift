#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationCore
import LocationPosix
import NMEA
import TestSupport
import Testing

/// Issue 33 item 2, "every silence explained", with the real daemon: a watcher that gets nothing for now is told why
/// and until when, on the wire (`STATE` `waiting`, `nextReportIn`) and in `locationctl watch`'s output.
@Suite("Every silence explained, end to end", .serialized)
struct SilenceEndToEndTests {
    typealias E2E = PolicyEndToEndTests

    /// Runs `locationctl ARGUMENTS` against `daemon` until it printed a line `until` matches, or `seconds` passed (then
    /// it is stopped: `watch` runs until interrupted); its standard output.
    static func watchOutput(_ daemon: DaemonProcess, _ arguments: [String], seconds: Int) throws -> String {
        try E2E.run(["timeout", String(seconds), AuditFloodTests.locationctl, "--socket", daemon.socketPath, "watch"] + arguments,
                    in: daemon.directory).stdout
    }

    @Test("a reduced watch between paced reports is told when the next is due, not \"no receiver has a fix\"")
    func reducedBetweenReports() throws {
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = deny\nreduced-interval = 60s", clients: """
            [client root]
            user = root
            access = always
            accuracy = reduced
            """))
        // The first watcher takes slot 0's report, and is told when the next is due: within the 60 s interval.
        let first = try RawClient(daemon.socketPath)
        first.send(#"{"class":"WATCH"}"#)
        let report = try #require(first.message("TPV", timeout: 10))
        #expect(report["accuracy"]?.string == "reduced")
        let after = try #require(first.message("STATE"))
        #expect(after["waiting"]?.string == "accuracyLimited" && after["fix"]?.bool == true, "\(after)")
        let firstWait = try #require(after["nextReportIn"]?.number)
        #expect(firstWait > 50 && firstWait <= 60, "\(after)")
        // A second one, between the reports: at once, when the next is due — never "no fix". (Before the replay's next
        // fix it gets the slot's report again, which tells nothing new, and is then told the same.)
        let second = try RawClient(daemon.socketPath)
        second.send(#"{"class":"WATCH"}"#)
        let lines = WhenInUseEndToEndTests.lines(second, until: { $0.contains(#""class":"STATE""#) }, timeout: 5)
        let state = try #require(lines.last.flatMap(JSONValue.object), "\(lines)")
        let again = lines.compactMap(JSONValue.object).filter { $0["class"]?.string == "TPV" }
        #expect(again.allSatisfy { $0["time"] == report["time"] && $0["lat"] == report["lat"] }, "\(lines)")
        #expect(state["waiting"]?.string == "accuracyLimited" && state["fix"]?.bool == !again.isEmpty, "\(state)")
        let wait = try #require(state["nextReportIn"]?.number)
        #expect(wait > 0 && wait <= firstWait, "\(state)")
        #expect(state["reason"]?.string == "reduced accuracy: the next report is due in \(Int(wait) >= 60 ? "1 min \(Int(wait) - 60) s" : "\(Int(wait)) s")")
        #expect(!lines.contains { $0.contains("no fix") || $0.contains("no receiver has a fix") }, "\(lines)")
        // locationctl watch says it in plain words, until when.
        let printed = try Self.watchOutput(daemon, ["--accuracy", "reduced"], seconds: 3)
        let line = try #require(printed.split(separator: "\n").first.map(String.init), "\(printed)")
        #expect(line.hasPrefix("waiting: reduced accuracy, next location in ") && line.hasSuffix(" s"), "\(printed)")
        #expect(!printed.contains("no fix"), "\(printed)")
        // With --json, the object as received.
        let json = try Self.watchOutput(daemon, ["--accuracy", "reduced", "--json"], seconds: 3)
        let object = try #require(json.split(separator: "\n").first.flatMap { JSONValue.object(String($0)) }, "\(json)")
        #expect(object["class"]?.string == "STATE" && object["waiting"]?.string == "accuracyLimited" && object["nextReportIn"]?.number != nil)
    }

    @Test("a When-In-Use watch while the user has no active login session is told why, on the wire and by locationctl")
    func whenInUseWithoutSession() throws {
        var template = Array("/tmp/locationd-logins-XXXXXX".utf8CString)
        let logins = String(cString: try #require(TemporaryDirectories.mkdtemp(&template)))
        defer { _ = try? FileManager.default.removeItem(atPath: logins) }
        let shim = try WhenInUseEndToEndTests.LoginShim.build(in: logins)
        // Its clients in a login session: outside every one, When In Use applies while the program runs.
        let session = try LoginSessionCgroup()
        defer { session.leave() }
        WhenInUseEndToEndTests.setState("online", uid: 0, in: logins)
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = ask\naccuracy = full"),
                                       launcher: ["env", "LD_PRELOAD=\(shim)", "LOCATIOND_TEST_LOGIN_DIR=\(logins)"])
        let admin = try RawClient(daemon.socketPath)
        admin.send(#"{"class":"GRANT","user":"0","kind":"whenInUse"}"#)
        #expect(admin.message("GRANTS") != nil)
        let client = try RawClient(daemon.socketPath)
        client.send(#"{"class":"AUTHORIZATION"}"#)
        #expect(client.message("AUTHORIZATION")?["inUse"]?.bool == false)
        client.send(#"{"class":"WATCH"}"#)
        let lines = WhenInUseEndToEndTests.lines(client, until: { $0.contains(#""class":"STATE""#) }, timeout: 5)
        let state = try #require(lines.last.flatMap(JSONValue.object), "\(lines)")
        #expect(state["waiting"]?.string == "insufficientlyInUse" && state["fix"]?.bool == false && state["nextReportIn"] == nil, "\(state)")
        #expect(state["reason"]?.string?.contains("no active login session") == true, "\(state)")
        #expect(!lines.contains { $0.contains("\"TPV\"") }, "\(lines)")
        let printed = try Self.watchOutput(daemon, ["--authorization", "when-in-use"], seconds: 3)
        #expect(printed.split(separator: "\n").contains("waiting: When In Use, and you have no active login session; nothing until one is active"),
                "\(printed)")
        #expect(!printed.contains("lat") && !printed.contains("±"), "\(printed)")
    }

    @Test("a 2020 capture through a serial pty, every fix rejected by check-date: watch says so")
    func rejectedFixes() throws {
        let data = try #require(FileManager.default.contents(atPath: FixRejectionEndToEndTests.capture))
        var filter = CaptureFilter()
        var bytes: [UInt8] = []
        [UInt8](data).withUnsafeBufferPointer { filter.filter($0, into: &bytes) }
        let pty = try PseudoTerminal()
        let daemon = try DaemonProcess(config: """
            [receiver gnss0]
            type = serial
            path = \(pty.slavePath)
            speed = 9600

            \(E2E.rootSeesAll)
            """)
        #expect(daemon.waitForLog(timeout: 10) { $0.contains("receiver connected") }, "\(daemon.log)")
        for start in stride(from: 0, to: bytes.count, by: 512) {
            _ = pty.write(Array(bytes[start..<min(start + 512, bytes.count)]))
        }
        // Wait for the rule's first word on it (the log's line, once), the line kept open: the receiver is connected.
        #expect(daemon.waitForLog(timeout: 10) { $0.contains("rejected: check-date") }, "\(daemon.log)")
        let printed = try Self.watchOutput(daemon, [], seconds: 3)
        #expect(printed.split(separator: "\n").first == "no fix: fixes rejected: gnss0: fix dated 2020-07-11 rejected: check-date; set check-date = no for captures",
                "\(printed)")
        _ = pty
    }
}
