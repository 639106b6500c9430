#if canImport(Glibc)
import Glibc
#endif
@testable import LocationPosix
import LocationPolicy
@testable import LocationServer
import Testing
import TestSupport

/// How a client's systemd unit is read from its cgroup path (cgroup v2, `/proc/PID/cgroup`).
@Suite("Client identity: systemd unit")
struct ClientIdentityTests {
    @Test("the innermost service or scope names the unit", arguments: [
        ("/system.slice/navit.service", "navit.service"),
        ("/system.slice/locationd.service", "locationd.service"),
        ("/user.slice/user-1000.slice/session-2.scope", "session-2.scope"),
        ("/system.slice/docker-0123abcd.scope", "docker-0123abcd.scope"),
    ])
    func systemUnits(path: String, unit: String) {
        #expect(ClientIdentity.unit(ofCgroup: Substring(path)) == unit)
    }

    @Test("a unit of a user's own service manager is named with its manager, never as a system unit", arguments: [
        // What `systemd-run --user --unit=navit.service` gives on a systemd host (the subtree below
        // user@UID.service is delegated to the user, who can name units anything).
        ("/user.slice/user-1002.slice/user@1002.service/app.slice/navit.service", "user@1002.service/navit.service"),
        ("/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-org.gnome.Maps-4242.scope",
         "user@1000.service/app-gnome-org.gnome.Maps-4242.scope"),
        // The manager's own processes too.
        ("/user.slice/user-1000.slice/user@1000.service/init.scope", "user@1000.service/init.scope"),
        ("/user.slice/user-1000.slice/user@1000.service", "user@1000.service"),
    ])
    func userManagerUnits(path: String, unit: String) {
        #expect(ClientIdentity.unit(ofCgroup: Substring(path)) == unit)
    }

    @Test("no unit outside systemd's tree")
    func noUnit() {
        #expect(ClientIdentity.unit(ofCgroup: "/") == nil)
        #expect(ClientIdentity.unit(ofCgroup: "/lxc/container1") == nil)
    }
}

/// Issue 12, hole 9: identity on kernels without SO_PEERPIDFD — the pid pinned with pidfd_open(2) and
/// checked to hold the other end of the socket (sock_diag), or the client refused.
@Suite("Client identity: pinning the peer without SO_PEERPIDFD", .serialized)
struct PeerPinningTests {
    /// A listening socket in a fresh directory.
    static func listener() throws -> (ListeningSocket, String) {
        var template = Array("/tmp/locationd-pin-XXXXXX".utf8CString)
        let directory = try #require(TemporaryDirectories.mkdtemp(&template).map { String(cString: $0) })
        chmod(directory, 0o755)
        return (try ListeningSocket(path: directory + "/s.sock", mode: 0o666), directory)
    }

    static func acceptOne(_ listener: ListeningSocket) throws -> Int32 {
        for _ in 0..<200 {
            if case .success(let fd) = listener.accept() { return fd }
            usleep(10_000)
        }
        throw Errno.timedOut
    }

    @Test("the connecting process itself: pinned, checked, and named by its executable")
    func pinned() throws {
        let (listener, directory) = try Self.listener()
        defer { listener.close(); rmdir(directory) }
        let client = try UnixSocketOps.connect(path: listener.path ?? "").get()
        defer { FileDescriptorOps.close(client) }
        let server = try Self.acceptOne(listener)
        defer { FileDescriptorOps.close(server) }
        let identity = try ClientIdentity.ofPeer(socket: server, kernelPidFD: false)
        #expect(identity.pid == getpid())
        #expect(identity.verifiedByPidFD)
        #expect(identity.executable == (try? FileDescriptorOps.readLink("/proc/self/exe").get()))
    }

    @Test("a process that connected and exited, leaving the socket to a child, is refused", arguments: [false, true])
    func exitedConnector(kernelPidFD: Bool) throws {
        let (listener, directory) = try Self.listener()
        defer { listener.close(); rmdir(directory) }
        // The connecting process forks a child that keeps the socket, then exits at once.
        let script = """
            import os, socket, sys, time
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sys.argv[1])
            if os.fork() == 0:
                time.sleep(3)
                os._exit(0)
            os._exit(0)
            """
        let run = try PolicyEndToEndTests.run(["/usr/bin/python3", "-c", script, listener.path ?? ""], in: directory)
        #expect(run.status == 0)
        let server = try Self.acceptOne(listener)
        defer { FileDescriptorOps.close(server) }
        #expect(throws: PeerRefusal.exited) { try ClientIdentity.ofPeer(socket: server, kernelPidFD: kernelPidFD) }
    }
}

/// Exec after connect: a client connects, hands the socket to a child, and execs a program a rule
/// trusts. Its pid and credentials survive the exec, so /proc names the trusted program while the
/// child reads the stream (found by a helper attacking the daemon as another uid).
@Suite("Client identity: the programs that hold the connection", .serialized)
struct SocketHolderTests {
    /// Runs `script` (Python, given the socket path), which connects and then execs /usr/bin/sleep; waits
    /// until the peer runs sleep and returns what `ofPeer` makes of it.
    static func identityAfterExec(_ script: String) throws -> ClientIdentity {
        let (listener, directory) = try PeerPinningTests.listener()
        defer { listener.close(); rmdir(directory) }
        // The script's first process forks and exits at once, so `run` returns; the grandchild does the work.
        let wrapped = "import os, socket, sys, time\nif os.fork() != 0:\n    os._exit(0)\n" + script
        let run = try PolicyEndToEndTests.run(["/usr/bin/python3", "-c", wrapped, listener.path ?? ""], in: directory)
        #expect(run.status == 0)
        let server = try PeerPinningTests.acceptOne(listener)
        defer { FileDescriptorOps.close(server) }
        let pid = try PeerCredentials(socket: server).pid
        let sleep = "/usr/bin/sleep"  // a file, not a link, on Debian (usrmerge links /bin to usr/bin)
        for _ in 0..<300 where (try? FileDescriptorOps.readLink("/proc/\(pid)/exe").get()) != sleep { usleep(10_000) }
        #expect((try? FileDescriptorOps.readLink("/proc/\(pid)/exe").get()) == sleep)
        return try ClientIdentity.ofPeer(socket: server)
    }

    @Test("a program that execs with the socket and keeps it alone is named by what it runs now")
    func soleHolder() throws {
        let identity = try Self.identityAfterExec("""
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sys.argv[1])
            s.set_inheritable(True)
            os.execv("/usr/bin/sleep", ["sleep", "3"])
            """)
        #expect(identity.executable == "/usr/bin/sleep")
    }

    @Test("a connection a forked child keeps while its parent execs a trusted program is known by its user alone")
    func forkedHolder() throws {
        let identity = try Self.identityAfterExec("""
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sys.argv[1])
            if os.fork() == 0:
                time.sleep(3)
                os._exit(0)
            os.execv("/usr/bin/sleep", ["sleep", "3"])
            """)
        #expect(identity.executable == nil)
        #expect(identity.unit == nil)
        #expect(identity.uid == getuid())
    }
}


/// The `Uid:` line of /proc/PID/status, read for every process at every connection.
@Suite("Peer process: user ids from /proc")
struct ProcessUserIDTests {
    @Test("the user ids of a process are its real, effective, saved and filesystem uids, as status(of:) reads them")
    func ownUserIDs() throws {
        let uids = try #require(PeerProcess.userIDs(of: getpid()))
        #expect(uids == [getuid(), geteuid(), getuid(), geteuid()])
        #expect(uids == PeerProcess.status(of: getpid())?.uids)
        #expect(PeerProcess.userIDs(of: 1) != nil)
        #expect(PeerProcess.userIDs(of: Int32.max) == nil, "no such process")
    }
}

@Suite("Peer process: a bounded look-up of a socket's holders")
struct SocketHolderBudgetTests {
    /// An attacker whose processes held 792,000 descriptors made each of its connections take 3.7 s to identify,
    /// and other users' connections waited behind them: one look-up reads at most `descriptorScanLimit`.
    @Test("the holders of a socket are found within the descriptor budget; past it, who holds it is not told")
    func budget() throws {
        var ends: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        var info = stat()
        try #require(fstat(ends[1], &info) == 0)
        let uid = getuid()
        #expect(PeerProcess.processes(holdingSocket: UInt64(info.st_ino), uid: uid)?.contains(getpid()) == true)
        // This test process alone holds more than 3 descriptors (standard input, output, error and the pair).
        #expect(PeerProcess.processes(holdingSocket: UInt64(info.st_ino), uid: uid, descriptorLimit: 3) == nil)
        #expect(PeerProcess.descriptorScanLimit == 65_536)
    }
}
