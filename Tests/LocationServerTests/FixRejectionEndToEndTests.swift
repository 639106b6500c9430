#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationCore
import LocationPosix
import NMEA
import Testing

/// Issue 33, item 4: fixes a plausibility rule rejects have a reason, in STATUS and once in the log.
@Suite("Rejected fixes end to end", .serialized)
struct FixRejectionEndToEndTests {
    /// A u-blox NEO-M9N capture dated 2020-07-11: years before the wall clock, no whole number of GPS
    /// week rollovers from it, so `check-date` rejects every fix.
    static let capture = DaemonProcess.sharedDirectory + "/nmea-logs/ublox-neo-m9n-nmea.log"

    @Test("a 2020 capture through a serial pty: STATUS counts the rejections by rule with the reason, the log says it once")
    func oldCaptureThroughSerialPort() throws {
        let data = try #require(FileManager.default.contents(atPath: Self.capture))
        var filter = CaptureFilter()
        var bytes: [UInt8] = []
        [UInt8](data).withUnsafeBufferPointer { filter.filter($0, into: &bytes) }
        var decoder = NMEADecoder()
        var positions = 0
        decoder.decode(bytes) { if $0.hasPosition { positions += 1 } }
        decoder.finish { if $0.hasPosition { positions += 1 } }
        let sentences = decoder.statistics.framing.sentences
        #expect(positions == 61 && sentences == 1403, "\(positions) fixes, \(sentences) sentences")

        let pty = try PseudoTerminal()
        let daemon = try DaemonProcess(config: """
            [receiver gnss0]
            type = serial
            path = \(pty.slavePath)
            speed = 9600

            \(PolicyEndToEndTests.rootSeesAll)
            """)
        #expect(daemon.waitForLog(timeout: 10) { $0.contains("receiver connected") }, "\(daemon.log)")
        for start in stride(from: 0, to: bytes.count, by: 512) {
            _ = pty.write(Array(bytes[start..<min(start + 512, bytes.count)]))
        }
        let root = try RawClient(daemon.socketPath)
        func status() -> [String: JSONValue]? {
            root.send(#"{"class":"STATUS"}"#)
            return root.message("STATUS")?["receivers"].flatMap { if case .array(let a) = $0 { a.first?.object } else { nil } }
        }
        // Every sentence read, then the line closed, which ends the last epoch: every fix has been judged.
        #expect(waitFor(10) { status()?["sentences"]?.number == Double(sentences) })
        pty.close()
        #expect(daemon.waitForLog(timeout: 10) { $0.contains("receiver unavailable") }, "\(daemon.log)")
        let receiver = try #require(status())
        #expect(receiver["fixes"]?.number == 0)
        let rejected = try #require(receiver["rejected"], "\(receiver)")
        #expect(rejected == .array([.object(["rule": .string("check-date"), "count": .number(Double(positions))])]), "\(receiver)")
        let reason = "fix dated 2020-07-11 rejected: check-date; set check-date = no for captures"
        #expect(receiver["lastRejection"] == .object(["rule": .string("check-date"), "reason": .string(reason)]), "\(receiver)")
        // Once, for the one reason, however many fixes it rejected.
        let lines = daemon.log.split(separator: "\n").filter { $0.contains("rejected: check-date") }
        #expect(lines.count == 1, "\(daemon.log)")
        #expect(lines.first.map { $0.hasPrefix("<4>" + reason) && $0.contains("receiver.name=gnss0") && $0.contains("rule=check-date") } == true,
                "\(lines)")

        // A client that may not see the receivers' state gets no counts.
        let directory = String(daemon.socketPath[..<daemon.socketPath.lastIndex(of: "/")!])
        let other = try PolicyEndToEndTests.start(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", """
            import json, socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(sys.argv[1]); f = s.makefile("rb")
            f.readline()
            s.sendall(b'{"class":"STATUS"}\\n')
            r = json.loads(f.readline())["receivers"][0]
            print(r["name"], "rejected" in r, "lastRejection" in r, "errors" in r)
            """, daemon.socketPath], in: { chmod(directory, 0o755); return directory }())
        #expect(PolicyEndToEndTests.finish(other).stdout == "gnss0 False False False\n")
    }

    /// Polls `condition` every 20 ms for up to `seconds`.
    private func waitFor(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let end = monotonic() + seconds
        while monotonic() < end {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }
}
