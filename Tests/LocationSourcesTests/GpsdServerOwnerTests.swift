#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationCore
import LocationPosix
@testable import LocationSources
import Testing

/// Who runs the gpsd a receiver reads (docs/SECURITY.md "A gpsd that is not gpsd"): on this host, root or
/// `server-user`, as the kernel's socket table says once the server has accepted the connection.
@Suite("GpsdReceiver: the server's owner", .serialized)
struct GpsdServerOwnerTests {
    /// While gpsd is down any user may listen on its port; a gpsd (or anything) run by such a user would feed
    /// the daemon a position of its choosing. A real gpsd run as `nobody` stands for it here.
    @Test("a gpsd on this host run by another user than root or server-user is refused; named in server-user, it is read",
          .enabled(if: getuid() == 0, "needs root to start gpsd as another user"))
    func serverOwnedByAnotherUser() async throws {
        let tools = try GpsdTools.require()
        let scratch = try GpsdScratch()
        defer { scratch.remove() }
        chmod(scratch.path, 0o777)
        // nobody may not reach the clone's directory (a 0700 temporary directory in CI): a copy it can read.
        let capture = scratch.path + "/" + GpsdReceiverTests.garmin
        try #require(FileManager.default.createFile(atPath: capture, contents: FileManager.default.contents(atPath: sharedLog(GpsdReceiverTests.garmin))))
        chmod(capture, 0o644)
        let port = try freeTCPPort()
        // No -1: gpsfake plays the capture again and again, so fixes flow for as long as the test needs.
        let gpsfake = try ChildProcess("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                                                            tools.gpsfake, "-q", "-c", "0.02", "-P", String(port), capture],
                                       output: scratch.path + "/gpsfake.out", environment: scratch.gpsfakeEnvironment)
        defer { gpsfake.terminate() }
        try await waitForListener(port: port, gpsfake: gpsfake, output: scratch.read("gpsfake.out"))

        // The same gpsd, read by a receiver that trusts only root and gpsd and by one that names nobody.
        let refusedLog = GpsdEventLog()
        let refused = GpsdReceiver(ReceiverConfiguration(name: "strict", source: .gpsd(host: "localhost", port: port, device: nil)))
        let allowedLog = GpsdEventLog()
        let allowed = GpsdReceiver(ReceiverConfiguration(name: "nobody's", source: .gpsd(host: "localhost", port: port, device: nil),
                                                         serverUser: "nobody"))
        refused.start(refusedLog.handler)
        allowed.start(allowedLog.handler)
        defer {
            refused.stop()
            allowed.stop()
        }
        let nobody = try #require(UserDatabase.userID(named: "nobody"))
        let expected = "is run by nobody (uid \(nobody)), not by root or gpsd (server-user)"
        #expect(await eventually(timeout: 10) { refusedLog.reasons.contains { $0.contains(expected) } }, "reasons: \(refusedLog.reasons)")
        #expect(await eventually(timeout: 15) { allowedLog.positions.count >= 3 },
                "reasons: \(allowedLog.reasons); gpsfake: \(scratch.read("gpsfake.out"))")
        // Meanwhile the strict receiver, retrying, never read one report.
        #expect(refusedLog.fixes.isEmpty && refused.status.sentences == 0, "\(refusedLog.fixes.count) fixes")
        #expect(!refused.status.isConnected)
    }

    /// A server that speaks enough of gpsd's protocol for libgps: a `VERSION` greeting once it has accepted
    /// (after `delay` seconds), then after the client's `?WATCH` a TPV every 0.2 s, dated now, at the first
    /// position gpsd reports for garmin-10x.log. Arguments: address, port, delay.
    static let fakeGpsd = """
    import socket, sys, time
    host, port, delay = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port)); s.listen(8)
    while True:
        time.sleep(delay)
        c, _ = s.accept()
        try:
            c.sendall(b'{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}\\n')
            c.settimeout(5); c.recv(4096)
            for _ in range(100):
                now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
                c.sendall(('{"class":"TPV","device":"/dev/ttyUSB0","mode":3,"time":"%s","lat":41.726863333,'
                           '"lon":-83.634816667,"altHAE":176.6}\\n' % now).encode())
                time.sleep(0.2)
        except OSError:
            pass
        c.close()
    """

    /// The kernel lists gpsd's end of the connection only once gpsd has accepted it: checked at once, a server
    /// on this host that had not accepted yet looked like one on another host (trusted, at a non-loopback
    /// address of this host) or like none (refused, on loopback, even when root ran it).
    @Test("a server on this host is judged once it has accepted: root's slow one is read, another user's at this host's own address is not",
          .enabled(if: getuid() == 0, "needs root to start a server as another user"))
    func serverJudgedAfterAccept() async throws {
        let scratch = try GpsdScratch()
        defer { scratch.remove() }
        chmod(scratch.path, 0o777)
        let port = try freeTCPPort()
        let slow = try ChildProcess("/usr/bin/python3", ["-c", Self.fakeGpsd, "127.0.0.1", String(port), "0.5"], output: scratch.path + "/slow.out")
        defer { slow.terminate() }
        let log = GpsdEventLog()
        let receiver = GpsdReceiver(ReceiverConfiguration(name: "slow", source: .gpsd(host: "127.0.0.1", port: port, device: nil)))
        try await Task.sleep(for: .milliseconds(300))
        receiver.start(log.handler)
        defer { receiver.stop() }
        #expect(await eventually(timeout: 10) { log.positions.count >= 3 }, "reasons: \(log.reasons); \(scratch.read("slow.out"))")
        #expect(log.reasons.isEmpty, "reasons: \(log.reasons)")

        // This host's own non-loopback addresses (hostname(1) -I), where a server is on this host all the same.
        let hostname = try ChildProcess("/usr/bin/hostname", ["-I"], output: scratch.path + "/addresses")
        #expect(await hostname.waitForExit(timeout: 5))
        let addresses = scratch.read("addresses").split(whereSeparator: \.isWhitespace).map(String.init).filter { $0 != "(nothing)" }
        for address in addresses where !address.hasPrefix("fe80") {
            let port = try freeTCPPort()
            let fake = try ChildProcess("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                                                             "/usr/bin/python3", "-c", Self.fakeGpsd, address, String(port), "0"],
                                        output: scratch.path + "/fake.out")
            defer { fake.terminate() }
            try await Task.sleep(for: .milliseconds(500))
            let log = GpsdEventLog()
            let receiver = GpsdReceiver(ReceiverConfiguration(name: "own", source: .gpsd(host: address, port: port, device: nil)))
            receiver.start(log.handler)
            defer { receiver.stop() }
            #expect(await eventually(timeout: 10) { log.reasons.contains { $0.contains("is run by nobody") } },
                    "\(address): reasons \(log.reasons); \(scratch.read("fake.out"))")
            #expect(log.fixes.isEmpty, "\(address): a fake position was read")
        }
    }
}
