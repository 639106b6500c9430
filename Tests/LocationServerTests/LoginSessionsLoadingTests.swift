#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import TestSupport
import Testing

/// libsystemd is loaded only once the policy depends on users' login sessions (issue 16: it and the
/// libraries it brings are 1.2 MiB resident): under rules without `ask` and no When-In-Use grant the
/// daemon never maps it, an `ask` rule has it loaded at start, and a first When-In-Use grant made by an
/// administrator has it loaded then. Read from the running daemon's /proc/PID/maps.
@Suite("libsystemd loaded when the policy depends on login sessions", .serialized)
struct LoginSessionsLoadingTests {
    /// Whether the daemon maps libsystemd. /proc/PID/maps is read to its end with read(2): its size is 0
    /// to stat(2), and a read of the size a file claims stops after its first page.
    static func mapsLibsystemd(_ daemon: DaemonProcess) -> Bool {
        let fd = open("/proc/\(daemon.pid)/maps", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var maps: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while case let n = read(fd, &buffer, buffer.count), n > 0 { maps += buffer[..<n] }
        return String(decoding: maps, as: UTF8.self).contains("/libsystemd.so.0")
    }

    /// Whether `condition` holds within `timeout` seconds, asked every 50 ms.
    static func eventually(_ timeout: Double, _ condition: () -> Bool) -> Bool {
        let end = monotonic() + timeout
        while monotonic() < end {
            if condition() { return true }
            usleep(50_000)
        }
        return condition()
    }

    @Test("rules without ask, no When-In-Use grant: a client is served and libsystemd is never mapped")
    func notLoaded() throws {
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = always\naccuracy = full"))
        defer { _ = daemon.stop() }
        let client = try RawClient(daemon.socketPath)
        client.send(#"{"class":"WATCH"}"#)
        let fix = try #require(client.message("TPV"))
        #expect(fix["lat"] != nil)
        #expect(!Self.eventually(1) { Self.mapsLibsystemd(daemon) })
    }

    @Test("an ask rule: libsystemd is loaded at start, to ask logind")
    func loadedForAsk() throws {
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = ask\naccuracy = full"))
        defer { _ = daemon.stop() }
        #expect(Self.eventually(5) { Self.mapsLibsystemd(daemon) })
    }

    @Test("a first When-In-Use grant under rules without ask: libsystemd is loaded then")
    func loadedForGrant() throws {
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = deny"))
        defer { _ = daemon.stop() }
        #expect(!Self.eventually(0.5) { Self.mapsLibsystemd(daemon) })
        let grant = try PolicyEndToEndTests.run([AuditFloodTests.locationctl, "--socket", daemon.socketPath, "grant", "--executable",
                                                 "/usr/bin/true", "--user", "0", "--when-in-use"], in: daemon.directory)
        #expect(grant.status == 0, "\(grant)")
        #expect(Self.eventually(5) { Self.mapsLibsystemd(daemon) })
    }
}
