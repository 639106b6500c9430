#if canImport(Glibc)
import Glibc
#endif
import LocationServer
import Testing

/// A connection flood must not flood the journal: journald drops a service's lines beyond its rate
/// limit (10000 per 30 s by default, journald.conf(5) RateLimitBurst), and with them the daemon's own
/// lines about everyone else.
@Suite("Log lines a client causes are bounded per user", .serialized)
struct LogFloodTests {
    typealias E2E = PolicyEndToEndTests

    /// Connects to argv[1] and hangs up, argv[2] times, one after another.
    static let connectLoop = """
        import socket, sys
        for i in range(int(sys.argv[2])):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sys.argv[1])
            s.recv(4096)
            s.close()
        print("done")
        """

    /// 100 connections: more than the 64 a user may open at once (`UserConnectionRate`'s burst), so well over the
    /// 30 lines' budget are identified and served, and the rest are refused before that, logging nothing more.
    @Test("100 connections of one user log at most 30 'client connected' lines; root's still appear")
    func connectFlood() throws {
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = ask", clients: E2E.rootSeesAll))
        let directory = String(daemon.socketPath[..<daemon.socketPath.lastIndex(of: "/")!])
        chmod(directory, 0o755)
        let flood = try E2E.start(["setpriv", "--reuid=1", "--regid=1", "--clear-groups", "/usr/bin/python3", "-c",
                                   Self.connectLoop, daemon.socketPath, "100"], in: directory)
        #expect(E2E.finish(flood).stdout.contains("done"))
        let root = try RawClient(daemon.socketPath)
        #expect(root.message("VERSION") != nil)
        usleep(300_000)
        let lines = daemon.log.split(separator: "\n")
        let connected = lines.filter { $0.contains("client connected") && $0.contains("client.uid=1 ") }
        let closed = lines.filter { $0.contains("client closed") && $0.contains("client.uid=1 ") }
        #expect(connected.count == Log.clientLinesPerMinute, "\(connected.count) lines")
        #expect(closed.count == Log.clientLinesPerMinute, "\(closed.count) lines")
        #expect(lines.contains { $0.contains("client connected") && $0.contains("client.uid=0 ") }, "root's connection is logged")
    }

    /// Connects to argv[1] argv[2] times, one after another; each connection is closed by the daemon, every
    /// other one for flooding (1100 requests at once) and the others for bad requests (120 unknown classes).
    /// Reads each to its end: the daemon writes its lines before it closes.
    static let killLoop = """
        import socket, sys
        for i in range(int(sys.argv[2])):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sys.argv[1])
            payload = b'{"class":"AUTHORIZATION"}\\n' * 1100 if i % 2 == 0 else b'{"class":"NOPE"}\\n' * 120
            try:
                s.sendall(payload)
                while s.recv(65536):
                    pass
            except OSError:
                pass
            s.close()
        print("done")
        """

    @Test("120 flood and bad-request kills of one user log at most 30 'client disconnected' lines (issue 32)")
    func killFlood() throws {
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = ask", clients: E2E.rootSeesAll))
        let directory = String(daemon.socketPath[..<daemon.socketPath.lastIndex(of: "/")!])
        chmod(directory, 0o755)
        let flood = try E2E.start(["setpriv", "--reuid=1", "--regid=1", "--clear-groups", "/usr/bin/python3", "-c",
                                   Self.killLoop, daemon.socketPath, "120"], in: directory)
        #expect(E2E.finish(flood).stdout.contains("done"))
        let lines = daemon.log.split(separator: "\n")
        let killed = lines.filter { $0.contains("client disconnected") && $0.contains("client.uid=1 ") }
        #expect(killed.count <= Log.clientLinesPerMinute, "\(killed.count) lines")
        #expect(killed.contains { $0.contains("flooding") } && killed.contains { $0.contains("bad requests") }, "both kinds were logged")
    }
}
