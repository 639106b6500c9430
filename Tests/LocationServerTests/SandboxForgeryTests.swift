#if canImport(Glibc)
import Glibc
#endif
@testable import LocationPosix
import LocationPolicy
@testable import LocationServer
import Testing
import TestSupport

/// Issue 32: processes that are not Flatpak apps but show a `/.flatpak-info` to /proc/PID/root — made in a
/// user and mount namespace of their own (`unshare -Urm`'s calls, from Python), which needs no privilege
/// where unprivileged user namespaces are allowed. Each forgery fools a reader that only opens the file
/// through /proc/PID/root (what xdg-desktop-portal does); the daemon's further checks (`flatpakCheck`) turn
/// away all but the last, which copies every trait of Flatpak's sandbox: docs/SECURITY.md says why a
/// process of the same user can, and what that means for `app-id` rules.
/// Whether this machine lets a process make a user and a mount namespace (`unshare -Urm`).
private let userNamespacesWork: Bool = {
    let r = try? PolicyEndToEndTests.run(["/usr/bin/unshare", "-Urm", "true"], in: "/tmp")
    return r?.status == 0
}()

@Suite("Sandboxed apps: forged .flatpak-info", .serialized, .enabled(if: userNamespacesWork))
struct SandboxForgeryTests {
    /// Connects to argv[1], then forges: `chroot` (new user and mount namespaces, a tmpfs root holding a
    /// `/.flatpak-info` bound read-only), `pidns` (also a pid namespace), `sealed` (also no_new_privs and a
    /// seccomp filter that allows everything). Says `ready` on the socket, then sleeps.
    static let forger = """
        import ctypes, os, socket, sys, time
        path, mode = sys.argv[1], sys.argv[2]
        libc = ctypes.CDLL(None, use_errno=True)
        def check(r):
            if r != 0: raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        uid, gid = os.getuid(), os.getgid()
        flags = 0x10000000 | 0x00020000
        if mode != "chroot": flags |= 0x20000000
        check(libc.unshare(flags))
        open("/proc/self/setgroups", "w").write("deny")
        open("/proc/self/uid_map", "w").write(f"0 {uid} 1")
        open("/proc/self/gid_map", "w").write(f"0 {gid} 1")
        if mode != "chroot":
            child = os.fork()
            if child: os.waitpid(child, 0); os._exit(0)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(path)
        MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
        check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None))
        root = os.path.dirname(path) + "/fakeroot"
        os.makedirs(root, exist_ok=True)
        check(libc.mount(b"tmpfs", root.encode(), b"tmpfs", 0, None))
        info = root + "/.flatpak-info"
        open(info, "w").write("[Application]\\nname=org.gnome.Maps\\nruntime=runtime/org.gnome.Platform/x86_64/45\\n\\n[Instance]\\ninstance-id=1234567890\\n")
        check(libc.mount(info.encode(), info.encode(), None, MS_BIND, None))
        check(libc.mount(None, info.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY, None))
        os.chroot(root); os.chdir("/")
        if mode == "sealed":
            check(libc.prctl(38, 1, 0, 0, 0))
            class Filter(ctypes.Structure): _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]
            class Program(ctypes.Structure): _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]
            allow = (Filter * 1)(Filter(0x06, 0, 0, 0x7fff0000))
            check(libc.prctl(22, 2, ctypes.byref(Program(1, allow)), 0, 0))
        s.sendall(b"ready\\n")
        time.sleep(20)
        """

    /// Starts the forger (or, for `plain`, a process that only connects), waits for it to be ready, and
    /// returns what the daemon's checks and a portal-style read make of it.
    static func forge(_ mode: String) throws -> (check: FlatpakCheck, appID: String?, portalReads: String?) {
        let (listener, directory) = try PeerPinningTests.listener()
        defer { listener.close() }
        let script = mode == "plain"
            ? "import socket, sys, time\ns = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b'ready\\n'); time.sleep(20)"
            : forger
        let started = try PolicyEndToEndTests.start(["/usr/bin/python3", "-c", script, listener.path ?? "", mode], in: directory)
        let server = try PeerPinningTests.acceptOne(listener)
        defer { FileDescriptorOps.close(server) }
        var ready = [UInt8](repeating: 0, count: 6)
        _ = FileDescriptorOps.poll(server, events: Int16(POLLIN), timeoutMilliseconds: 10_000)
        _ = ready.withUnsafeMutableBytes { FileDescriptorOps.read(server, into: $0) }
        let pid = try PeerCredentials(socket: server).pid
        defer {
            kill(pid, SIGKILL)
            kill(started.pid, SIGKILL)
            _ = PolicyEndToEndTests.finish(started)
        }
        #expect(ready.starts(with: Array("ready".utf8)), "the forger failed: \(mode)")
        let portal = FileDescriptorOps.readFile(atPath: "/proc/\(pid)/root/.flatpak-info", maximumBytes: 1 << 16)
        let portalReads = (try? portal.get()).flatMap { ClientIdentity.flatpakApp(fromFlatpakInfo: $0) }
        return (ClientIdentity.flatpakCheck(pid: pid), ClientIdentity.sandboxAppID(pid: pid, socket: server), portalReads)
    }

    @Test("a plain process has no app id: its root is ours")
    func plain() throws {
        let r = try Self.forge("plain")
        #expect(r.check == .sameRootAsDaemon)
        #expect(r.appID == nil)
        #expect(r.portalReads == nil)
    }

    @Test("a fake /.flatpak-info in its own user and mount namespace (unshare -Urm) gives no app id")
    func ownNamespaces() throws {
        let r = try Self.forge("chroot")
        #expect(r.portalReads == "org.gnome.Maps", "the forgery shows the file to a reader through /proc/PID/root")
        #expect(r.check == .sharedNamespace)
        #expect(r.appID == nil)
    }

    @Test("the same in a pid namespace too: no seccomp filter, no app id")
    func ownPidNamespace() throws {
        let r = try Self.forge("pidns")
        #expect(r.portalReads == "org.gnome.Maps")
        #expect(r.check == .notFiltered)
        #expect(r.appID == nil)
    }

    /// The documented limit (docs/SECURITY.md "Who a client is"): a process of the same user that copies
    /// Flatpak's sandbox, filter included, passes; so does `flatpak run --command=sh org.gnome.Maps`.
    @Test("a forger that copies every trait of Flatpak's sandbox passes (the documented limit)")
    func sealed() throws {
        let r = try Self.forge("sealed")
        #expect(r.check == .app("org.gnome.Maps"))
        #expect(r.appID == "flatpak:org.gnome.Maps")
    }

    @Test("SO_PEERSEC here: no label, or one that is not a snap's")
    func peerLabel() throws {
        let (listener, directory) = try PeerPinningTests.listener()
        defer { listener.close(); rmdir(directory) }
        let client = try UnixSocketOps.connect(path: listener.path ?? "").get()
        defer { FileDescriptorOps.close(client) }
        let server = try PeerPinningTests.acceptOne(listener)
        defer { FileDescriptorOps.close(server) }
        let label = PeerProcess.securityLabel(ofPeer: server)
        #expect(label.flatMap(ClientIdentity.snapApp(fromAppArmorLabel:)) == nil)
        #expect(ClientIdentity.sandboxAppID(pid: getpid(), socket: server) == nil)
    }
}
