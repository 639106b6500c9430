#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationPolicy
import LocationPosix
import LocationWire
import Testing
import TestSupport
@testable import LocationServer

/// One-time grants share one timer. Found by `Scripts/soak`: each grant set a timer for its whole
/// `once-lifetime` (1 h by default) that outlived its client, so with clients coming and going the pending
/// timers grew the daemon's memory by 23 % in 5 minutes.
@Suite("One-time grant timer")
struct OnceTimerTests {
    struct NoReceivers: ReceiverStatusProvider {
        func receiverReports() -> [ReceiverReport] { [] }
    }

    @Test("200 clients granted once and gone leave one timer pending, not 200; it still ends a live grant")
    func oneTimerForAll() throws {
        var template = Array("/tmp/locationd-once-XXXXXX".utf8CString)
        let directory = String(cString: try #require(TemporaryDirectories.mkdtemp(&template)))
        defer { _ = FileDescriptorOps.unlink(directory + "/fudger.secret"); rmdir(directory) }
        var defaults = PolicyDefaults()
        defaults.access = .once
        defaults.accuracy = .full
        defaults.onceLifetime = 3600
        let rules = PolicyRules(defaults: defaults, clients: [])
        let log = Log(level: .error)
        let context = ServerContext(limits: ServerLimits(), log: log, store: PolicyStore(stateDirectory: directory, log: log),
                                    receivers: NoReceivers(), release: "test")
        var state = ServerState(context: context, publisher: PublisherTests.publisher(rules))
        let identity = ClientIdentity(pid: getpid(), uid: 1000, gid: 1000, user: "alice", executable: "/usr/bin/navit")
        let start = Moment.now()
        var timers = 0
        for i in 0..<200 {
            var pair: [Int32] = [0, 0]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
            defer { close(pair[1]) }
            let now = start + Double(i)
            let admitted = state.admit(pair[0], identity: identity, at: now)
            let id = try #require(admitted)
            state.handleLine(Array(#"{"class":"AUTHORIZE","authorization":"once"}"#.utf8), from: id, at: now)
            #expect(state.publisher.authorization(of: id, at: now).status == .authorizedOnce)
            timers += state.effects.filter { if case .schedule(.onceExpiries, _) = $0 { return true } else { return false } }.count
            state.effects.removeAll()
            if i < 199 { state.close(id, why: "client disconnected") }
        }
        #expect(timers == 1)
        // The last client is still there when the first timer fires (1 h after the first grant): it is not
        // its end yet, so the timer is set again for it, and then ends its grant.
        state.handle(.onceExpiries, at: start + 3600.02)
        #expect(state.effects.contains { if case .schedule(.onceExpiries, _) = $0 { return true } else { return false } })
        state.effects.removeAll()
        let last = try #require(state.publisher.subscribers.ids.max())
        #expect(state.publisher.authorization(of: last, at: start + 3600.5).status == .authorizedOnce)
        state.handle(.onceExpiries, at: start + 3799.02)
        #expect(state.publisher.authorization(of: last, at: start + 3799.02).status == .notDetermined)
    }
}
