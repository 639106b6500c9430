#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Testing
import TestSupport

/// A byte flood on the gpsd front and the NMEA socket is bounded as on the native socket: more than
/// 64 × 16 KiB (the longest request) in a second, and the connection is closed. An attacker's trial found
/// both fronts reading whatever came: 64 gpsd connections pushed 8.4 GB in 15 s and kept a CPU busy.
@Suite("Byte floods on the gpsd front and the NMEA socket", .serialized)
struct FrontFloodTests {
    /// Sends a 64 KiB chunk every 20 ms (3.2 MB/s: few enough reads to stay under the 1000 requests a
    /// second) for up to 8 s to a TCP `host:port` or a Unix socket path; prints how many bytes went and
    /// whether the daemon closed the connection (end of file or reset; a read that times out is not).
    static let flood = """
    import socket, sys, time
    target = sys.argv[1]
    if target.startswith("/"):
        s = socket.socket(socket.AF_UNIX); s.connect(target)
    else:
        host, port = target.rsplit(":", 1); s = socket.create_connection((host, int(port)))
    s.settimeout(2)
    # Blank lines: nothing gpsd's protocol answers, so neither a reply queue nor the request count stops it.
    chunk = b"\\r\\n" * 32768
    sent, closed, start = 0, False, time.monotonic()
    try:
        while time.monotonic() - start < 8:
            s.sendall(chunk); sent += len(chunk)
            time.sleep(0.02)
    except (BrokenPipeError, ConnectionResetError):
        closed = True
    except socket.timeout:
        pass
    if not closed:
        try:
            while True:
                if not s.recv(65536):
                    closed = True
                    break
        except ConnectionResetError:
            closed = True
        except socket.timeout:
            pass
    print(f"sent {sent} closed {closed} after {time.monotonic() - start:.1f} s")
    """

    static func outcome(_ target: String) throws -> (sent: Int, closed: Bool) {
        let out = try GpsdFrontEndToEndTests.run(["/usr/bin/python3", "-c", Self.flood, target])
        let words = out.split(separator: " ")
        let sent = try #require(words.firstIndex(of: "sent").flatMap { Int(words[$0 + 1]) }, "\(out)")
        return (sent, out.contains("closed True"))
    }

    @Test("a gpsd client sending megabytes (blank lines, which nothing answers) is closed, and the front keeps answering others")
    func gpsdFront() throws {
        let port = try GpsdFrontEndToEndTests.freePort()
        let daemon = try GpsdFrontEndToEndTests.daemon(port: port, policy: "access = deny")
        defer { daemon.stop() }
        let (sent, closed) = try Self.outcome("127.0.0.1:\(port)")
        #expect(closed, "the flooding gpsd client was never closed (\(sent) bytes sent in 8 s)")
        // The bound is 1 MiB a second; the socket buffers hold a few more before the daemon reads them.
        #expect(sent < 8 << 20, "\(sent) bytes went before the close")
        let version = try GpsdFrontEndToEndTests.run(["gpspipe", "-w", "-n", "1", "127.0.0.1:\(port)"])
        #expect(version.contains("\"class\":\"VERSION\""), "the front stopped answering: \(version)")
    }

    @Test("a client of the NMEA socket sending megabytes is closed")
    func nmeaSocket() throws {
        let directory = try NMEASocketTests.openDirectory()
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/nmea.sock"
        let daemon = try NMEASocketTests.daemon(socket: socket, policy: "access = deny", clients: "")
        defer { daemon.stop() }
        let (sent, closed) = try Self.outcome(socket)
        #expect(closed, "the flooding NMEA-socket client was never closed (\(sent) bytes sent in 8 s)")
        #expect(sent < 8 << 20, "\(sent) bytes went before the close")
    }

    /// Eight connections of one user each sending 640 KiB a second — under the per-connection bound of
    /// 1 MiB — for up to 8 s, together 5 MiB a second; prints how many of them the daemon closed and how
    /// many bytes went in all.
    static let userFlood = """
    import socket, sys, time
    socks = []
    for _ in range(8):
        s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.setblocking(False); socks.append(s)
    chunk = b"\\r\\n" * 6554
    live, sent, start = set(range(8)), 0, time.monotonic()
    while live and time.monotonic() - start < 8:
        for i in list(live):
            try:
                sent += socks[i].send(chunk)
                if socks[i].recv(1, socket.MSG_PEEK) == b"":
                    live.discard(i)
            except BlockingIOError:
                pass
            except (BrokenPipeError, ConnectionResetError):
                live.discard(i)
        time.sleep(0.02)
    print(f"closed {8 - len(live)} sent {sent}")
    """

    // A throughput test: the daemon must read more than 4 MiB a second of the user's. Under AddressSanitizer it read
    // 3.2 MB a second (CI 2026-12-03, twice, the second time alone; it had passed alone once the day before): run by the
    // plain suite only. The per-connection flood above still runs under the sanitizers.
    @Test("eight NMEA-socket connections of one user, each under the per-connection bound, together over the user's 4 MiB a second: closed",
          .disabled(if: Sanitizers.any, "throughput under a sanitizer: the plain suite runs it"))
    func userTotal() throws {
        let directory = try NMEASocketTests.openDirectory()
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/nmea.sock"
        let daemon = try NMEASocketTests.daemon(socket: socket, policy: "access = deny", clients: "")
        defer { daemon.stop() }
        let out = try GpsdFrontEndToEndTests.run(["/usr/bin/python3", "-c", Self.userFlood, socket])
        let words = out.split(separator: " ")
        let closed = try #require(words.firstIndex(of: "closed").flatMap { Int(words[$0 + 1]) }, "\(out)")
        #expect(closed >= 1, "no connection of the flooding user was closed: \(out)")
        #expect(daemon.log.contains("this user's connections together sent more than"), "\(daemon.log.suffix(2000))")
    }

    /// Sends one line of 1500 `?DEVICES;` requests (13.5 KB, under the 16 KiB a line may take) and reads until
    /// the daemon closes; prints how many DEVICES answers came and whether the connection was closed.
    static let batch = """
    import socket, sys
    host, port = sys.argv[1].rsplit(":", 1)
    s = socket.create_connection((host, int(port))); s.settimeout(5)
    s.sendall(b"?DEVICES;" * 1500 + b"\\n")
    got, closed = b"", False
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            got += chunk
    except ConnectionResetError:
        closed = True
    except socket.timeout:
        pass
    print("devices", got.count(b'"class":"DEVICES"'), "closed", closed)
    """

    @Test("a gpsd client asking thousands of requests in one read is refused before they are answered (an attacker stalled the daemon so)")
    func requestsInOneRead() throws {
        let port = try GpsdFrontEndToEndTests.freePort()
        let daemon = try GpsdFrontEndToEndTests.daemon(port: port, policy: "access = deny")
        defer { daemon.stop() }
        let out = try GpsdFrontEndToEndTests.run(["/usr/bin/python3", "-c", Self.batch, "127.0.0.1:\(port)"])
        // The 1500 requests were refused whole, none answered (the daemon's ERROR may be lost to the reset that
        // closing a socket with unread input makes).
        #expect(out.contains("devices 0 closed True"), "\(out)")
        #expect(daemon.log.contains("flooding: more than 1000 requests in a second"), "\(daemon.log.suffix(2000))")
        let version = try GpsdFrontEndToEndTests.run(["gpspipe", "-w", "-n", "1", "127.0.0.1:\(port)"])
        #expect(version.contains("\"class\":\"VERSION\""), "the front stopped answering: \(version)")
    }

    /// Sends `?POLL;?VERSION;?POLL;` in one read and prints the classes of the answers after the greeting, in order.
    static let polls = """
    import socket, sys, json, time
    host, port = sys.argv[1].rsplit(":", 1)
    s = socket.create_connection((host, int(port))); s.settimeout(2)
    f = s.makefile("rb")
    f.readline()
    s.sendall(b"?POLL;?VERSION;?POLL;\\n")
    print(" ".join(json.loads(f.readline())["class"] for _ in range(3)))
    """

    @Test("polls among other requests in one read are answered each at its place (the reply is built in order)")
    func pollsInOrder() throws {
        let port = try GpsdFrontEndToEndTests.freePort()
        let daemon = try GpsdFrontEndToEndTests.daemon(port: port, policy: "access = deny")
        defer { daemon.stop() }
        let out = try GpsdFrontEndToEndTests.run(["/usr/bin/python3", "-c", Self.polls, "127.0.0.1:\(port)"])
        #expect(out.hasPrefix("POLL VERSION POLL"), "\(out)")
    }
}
