#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationPolicy
import LocationPosix
import LocationWire
import FoundationEssentials
import NMEA
import Testing
import TestSupport
@testable import LocationServer

/// Issue 11: slow work never runs on the fan-out path. The server in this process, a grant-store write
/// made slow at the syscall funnel (a 2 s fsync), and a subscriber that must keep getting each fix.
@Suite("Fan-out beside a slow grant store", .serialized)
struct SlowStoreTests {
    struct NoReceivers: ReceiverStatusProvider {
        func receiverReports() -> [ReceiverReport] { [] }
    }

    @Test("a grant store write stalled for 2 s delays no fix to a subscriber; the admin's reply waits for the write")
    func slowGrantWrite() throws {
        var template = Array("/tmp/locationd-slow-XXXXXX".utf8CString)
        let directory = try #require(TemporaryDirectories.mkdtemp(&template).map { String(cString: $0) })
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let listener = try ListeningSocket(path: directory + "/locationd.sock", mode: 0o600)
        let log = Log(level: .error)
        let store = PolicyStore(stateDirectory: directory, log: log)
        var defaults = PolicyDefaults()
        defaults.access = .always
        defaults.accuracy = .full
        let front = NativeFront(listener: listener, limits: ServerLimits(), rules: PolicyRules(defaults: defaults), adminGroup: "nobody-group",
                                store: store, receivers: NoReceivers(), log: log, release: "test")
        front.start()
        defer { front.stop(reason: "test over") }
        let fixes = PublisherTests.positioned
        try #require(fixes.count >= 20)

        let subscriber = try RawClient(listener.path ?? "")
        subscriber.send(#"{"class":"WATCH"}"#)
        #expect(subscriber.message("WATCH") != nil)
        let admin = try RawClient(listener.path ?? "")
        #expect(admin.message("VERSION") != nil)

        SyscallFaults.inject(.fsync, .delay(.seconds(2)))
        defer { SyscallFaults.removeAll() }
        let asked = monotonic()
        admin.send(#"{"class":"GRANT","executable":"/usr/bin/navit","kind":"persistent"}"#)
        // While the store's fsync sleeps, ten fixes, 100 ms apart: each reaches the subscriber at once.
        var delays: [Double] = []
        for fix in fixes.prefix(10) {
            let published = monotonic()
            front.publish(fix)
            guard subscriber.message("TPV", timeout: 1) != nil else { break }
            delays.append(monotonic() - published)
            usleep(100_000)
        }
        #expect(delays.count == 10)
        #expect((delays.max() ?? 9) < 0.25, "fan-out delays while the store was slow: \(delays)")
        // The admin is answered once the grant is on disk: after the stalled fsync.
        let grants = admin.message("GRANTS", timeout: 5)
        #expect(grants != nil)
        #expect(monotonic() - asked >= 1.9)
    }
}
