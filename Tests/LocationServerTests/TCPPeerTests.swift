#if canImport(Glibc)
import Glibc
#endif
import LocationPolicy
import LocationPosix
@testable import LocationServer
import Testing
import TestSupport

/// Issue 13: the gpsd front's TCP listener, and the identity of a TCP peer from the kernel only
/// (sock_diag owner and inode, the process holding it, pinned and re-checked).
@Suite("TCP peers: listener and identity", .serialized)
struct TCPPeerTests {
    static func acceptOne(_ listener: TCPListener) throws -> Int32 {
        for _ in 0..<300 {
            if case .success(let fd) = listener.accept() { return fd }
            usleep(10_000)
        }
        throw Errno.timedOut
    }

    static func temporaryDirectory() throws -> String {
        var template = Array("/tmp/locationd-tcp-XXXXXX".utf8CString)
        let directory = try #require(TemporaryDirectories.mkdtemp(&template).map { String(cString: $0) })
        chmod(directory, 0o755)
        return directory
    }

    /// The file a path leads to after every link (realpath(3)), as /proc/PID/exe names it.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Connects to `host` `port`, then stays connected for 3 s.
    static let connectAndWait = """
        import socket, sys, time
        s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
        time.sleep(3)
        """

    @Test("addresses: IPv4 and bracketed IPv6 with a port; loopback is 127/8, ::1 and ::ffff:127.x", arguments: [
        ("127.0.0.1:2947", "127.0.0.1:2947", true),
        ("127.3.4.5:1", "127.3.4.5:1", true),
        ("[::1]:2947", "[::1]:2947", true),
        ("[::ffff:127.0.0.1]:80", "[::ffff:127.0.0.1]:80", true),
        ("192.168.1.2:2947", "192.168.1.2:2947", false),
        ("[fe80::1]:2947", "[fe80::1]:2947", false),
    ])
    func addresses(text: String, printed: String, loopback: Bool) throws {
        let address = try #require(TCPAddress(parsing: text))
        #expect(address.description == printed)
        #expect(address.isLoopback == loopback)
    }

    @Test("not addresses", arguments: ["localhost:2947", "127.0.0.1", "::1:2947", "[::1]2947", "127.0.0.1:65536", "[::1]:"])
    func notAddresses(text: String) {
        #expect(TCPAddress(parsing: text) == nil)
    }

    @Test("a client of another uid, over IPv4 and IPv6: its uid, pid and executable, from the kernel", arguments: ["127.0.0.1", "::1"])
    func anotherUser(host: String) throws {
        let listen = host.contains(":") ? "[\(host)]:0" : "\(host):0"
        let listener = try TCPListener(address: try #require(TCPAddress(parsing: listen)))
        defer { listener.close() }
        let port = try #require(listener.address?.port)
        #expect(port != 0)
        let directory = try Self.temporaryDirectory()
        let client = try PolicyEndToEndTests.start(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
                                                    "-c", Self.connectAndWait, host, String(port)], in: directory)
        defer { kill(client.pid, SIGKILL); _ = PolicyEndToEndTests.finish(client) }
        let server = try Self.acceptOne(listener)
        defer { FileDescriptorOps.close(server) }
        let identity = try ClientIdentity.ofTCPPeer(socket: server)
        #expect(identity.uid == 65534)
        #expect(identity.gid == 65534)
        #expect(identity.pid == client.pid)
        // python is an interpreter: named for `interpreter = yes` rules only, and its identity unverified.
        #expect(identity.interpreter == Self.realPath("/usr/bin/python3"))
        #expect(identity.executable == nil)
        #expect(identity.program == Self.realPath("/usr/bin/python3"))
        #expect(!identity.strength.isVerified)
        #expect(identity.verifiedByPidFD)
    }

    @Test("a socket held by two different programs (a child exec'd with it) is known by its user alone")
    func twoPrograms() throws {
        let listener = try TCPListener(address: try #require(TCPAddress(parsing: "127.0.0.1:0")))
        defer { listener.close() }
        let port = try #require(listener.address?.port)
        let script = """
            import os, socket, sys, time
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
            os.set_inheritable(s.fileno(), True)
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", "3"])
            time.sleep(3)
            """
        let directory = try Self.temporaryDirectory()
        let client = try PolicyEndToEndTests.start(["/usr/bin/python3", "-c", script, String(port)], in: directory)
        defer { kill(client.pid, SIGKILL); _ = PolicyEndToEndTests.finish(client) }
        let server = try Self.acceptOne(listener)
        defer { FileDescriptorOps.close(server) }
        // The child has exec'd sleep: two holders, two programs.
        #expect(IdentityBorrowingTests.waitUntil(seconds: 5) {
            (try? ClientIdentity.ofTCPPeer(socket: server))?.strength.description.hasPrefix("unverified (held by processes of different programs") == true
        })
        let identity = try ClientIdentity.ofTCPPeer(socket: server)
        #expect(identity.executable == nil && identity.interpreter == nil && identity.uid == getuid())
    }

    @Test("a peer that went away before it was identified is refused")
    func gone() throws {
        let listener = try TCPListener(address: try #require(TCPAddress(parsing: "127.0.0.1:0")))
        defer { listener.close() }
        let port = try #require(listener.address?.port)
        let directory = try Self.temporaryDirectory()
        let run = try PolicyEndToEndTests.run(["/usr/bin/python3", "-c",
                                               "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])))",
                                               String(port)], in: directory)
        #expect(run.status == 0)
        let server = try Self.acceptOne(listener)
        defer { FileDescriptorOps.close(server) }
        #expect(throws: TCPPeerRefusal.self) { try ClientIdentity.ofTCPPeer(socket: server) }
    }
}
