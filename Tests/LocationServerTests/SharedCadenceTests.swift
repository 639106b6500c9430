#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import TestSupport
import Testing

/// Issue 32, finding 4: reduced reports go out on one grid for every user and front, so adding uids adds no
/// samples (docs/SECURITY.md "Timing"). The real daemon on the bundled capture at 1 Hz, clients as other uids.
@Suite("Several uids share one reduced cadence, end to end", .serialized)
struct SharedCadenceTests {
    typealias E2E = PolicyEndToEndTests

    /// Rules: `daemon`, `bin` and `sys` (uids 1, 2, 3) see the location at reduced accuracy.
    static let threeReducedUsers = """
        [client reduced1]
        user = daemon
        access = always
        accuracy = reduced

        [client reduced2]
        user = bin
        access = always
        accuracy = reduced

        [client reduced3]
        user = sys
        access = always
        accuracy = reduced
        """

    /// Connects to argv[1], sends a WATCH and for argv[2] seconds prints each TPV with a position received as
    /// `MONOTONIC TIME LAT LON` (CLOCK_MONOTONIC seconds, as the test's `monotonic()`); `READY` once connected.
    static let reportClient = """
        import socket, sys, time, json
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sys.argv[1])
        s.sendall(b'{"class":"WATCH"}\\n')
        print("READY", flush=True)
        end = time.monotonic() + float(sys.argv[2])
        s.settimeout(0.2)
        buf = b""
        while time.monotonic() < end:
            try:
                d = s.recv(65536)
                if not d: break
                buf += d
                while b"\\n" in buf:
                    line, buf = buf.split(b"\\n", 1)
                    m = json.loads(line)
                    if m.get("class") == "TPV" and "lat" in m:
                        print("%.3f %s %r %r" % (time.monotonic(), m.get("time"), m["lat"], m["lon"]), flush=True)
            except socket.timeout:
                pass
        """

    /// The reports a `reportClient` printed: when each arrived (monotonic seconds) and what it was.
    static func reports(_ output: String) -> [(at: Double, report: String)] {
        output.split(separator: "\n").compactMap { line in
            guard let space = line.firstIndex(of: " "), let at = Double(line[..<space]) else { return nil }
            return (at, String(line[line.index(after: space)...]))
        }
    }

    /// Waits (up to `timeout` seconds) until `path` holds `text`.
    static func waitFor(_ text: String, in path: String, timeout: Double) -> Bool {
        let end = monotonic() + timeout
        while monotonic() < end {
            if let data = FileManager.default.contents(atPath: path), String(decoding: data, as: UTF8.self).contains(text) { return true }
            usleep(50_000)
        }
        return false
    }

    @Test("several uids do not multiply the reduced cadence",
          .enabled(if: getuid() == 0, "needs root to run clients as other users"))
    func severalUidsDoNotMultiplyTheCadence() throws {
        let interval = 6.0
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = ask\nreduced-interval = \(Int(interval))s",
                                                          clients: Self.threeReducedUsers, rate: "1"))
        let directory = String(daemon.socketPath[..<daemon.socketPath.lastIndex(of: "/")!])
        chmod(directory, 0o755)
        func start(uid: Int, seconds: Double) throws -> E2E.Started {
            try E2E.start(["setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/python3", "-c", Self.reportClient,
                           daemon.socketPath, String(seconds)], in: directory)
        }
        // The first uid watches until it has a report (the capture starts without a fix); the others join 2 s
        // apart after it, all three watching until the same moment.
        let first = try start(uid: 1, seconds: 40)
        let started = monotonic()
        #expect(Self.waitFor("READY", in: first.output, timeout: 5))
        let firstReport = Self.waitFor(".", in: first.output, timeout: 20)
        try #require(firstReport, "uid 1 got no report\n\(daemon.log)")
        usleep(2_000_000)
        let second = try start(uid: 2, seconds: 40 - (monotonic() - started))
        #expect(Self.waitFor("READY", in: second.output, timeout: 5))
        usleep(2_000_000)
        let third = try start(uid: 3, seconds: 40 - (monotonic() - started))
        #expect(Self.waitFor("READY", in: third.output, timeout: 5))
        let outputs = [first, second, third].map { E2E.finish($0).stdout }

        // Each distinct report, when it first reached any of them.
        var firstSeen: [String: Double] = [:]
        for output in outputs {
            for (at, report) in Self.reports(output) { firstSeen[report] = min(firstSeen[report] ?? at, at) }
        }
        let times = firstSeen.values.sorted()
        #expect(times.count >= 4, "\(outputs)")
        // No two distinct reduced reports closer than the interval less the slack (0.6 s at 6 s; `ReducedPacing`), and
        // one per slot: a report and the next but one more than an interval apart (0.2 s for the clients' reading).
        let slack = 0.6, reading = 0.2
        let span = "\(times.map { String(format: "%.3f", $0 - times[0]) })"
        for (a, b) in zip(times, times.dropFirst()) { #expect(b - a >= interval - slack - reading, "\(span)") }
        for (a, c) in zip(times, times.dropFirst(2)) { #expect(c - a >= interval - reading, "\(span)") }
        // The later uids joined between slots: every report they got is one uid 1, watching throughout, got too — the
        // grid's, not one of their own.
        let firstUids = Set(Self.reports(outputs[0]).map(\.report))
        for output in outputs.dropFirst() {
            let seen = Self.reports(output)
            #expect(!seen.isEmpty, "\(output)")
            #expect(seen.allSatisfy { firstUids.contains($0.report) }, "\(output)\nuid 1: \(outputs[0])")
        }
        let gaps = zip(times, times.dropFirst()).map { String(format: "%.3f", $1 - $0) }
        print("several uids: distinct reduced reports \(times.count), gaps \(gaps)")
    }
}
