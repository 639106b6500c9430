#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationPolicy
import LocationPosix
import Testing
import TestSupport
@testable import LocationServer

/// The stuck-reader sweep runs on the daemon's clock, on the front's poller thread (a `.sweep` every
/// `sweepInterval`), not on a libdispatch timer: at 10 fixes a second that timer woke three of the daemon's
/// threads every second, about 6 % of the 1-client gpsd front's CPU (Benchmarks/README.md). Never in a fix's
/// turn: a helper attacking as uid 1 saw every cut of its unread connections land within 0.1 ms of a fix
/// when it ran there, which told a client that may see nothing when fixes come.
@Suite("Stuck-reader sweep")
struct StuckSweepTests {
    /// A state with navit's rules (PublisherTests) and the default `client-timeout` (30 s), and a client
    /// connected over a socket pair whose other end this test holds; the client watches.
    static func state(clientTimeout: Duration = .seconds(30)) throws -> (ServerState, id: Int, peer: Int32, directory: String) {
        var template = Array("/tmp/locationd-sweep-XXXXXX".utf8CString)
        let directory = String(cString: try #require(TemporaryDirectories.mkdtemp(&template)))
        var limits = ServerLimits()
        limits.clientTimeout = clientTimeout
        let log = Log(level: .error)
        let context = ServerContext(limits: limits, log: log, store: PolicyStore(stateDirectory: directory, log: log),
                                    receivers: OnceTimerTests.NoReceivers(), release: "test")
        var state = ServerState(context: context, publisher: PublisherTests.publisher())
        var pair: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        // As the front's accepted sockets are: a send never waits for a reader that does not read.
        _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)
        let admitted = state.admit(pair[0], identity: PublisherTests.navit, at: PublisherTests.moment(0))
        let id = try #require(admitted)
        state.handleLine(Array(#"{"class":"WATCH","enable":true}"#.utf8), from: id, at: PublisherTests.moment(0))
        return (state, id, pair[1], directory)
    }

    static func sweepTimers(_ state: ServerState) -> [Duration] {
        state.effects.compactMap { if case .schedule(.sweep, let after) = $0 { after } else { nil } }
    }

    static func drain(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 {}
    }

    @Test("a client that reads nothing is cut after client-timeout by the ticks, never in a fix's turn")
    func cutByTicksNotFixes() throws {
        var (state, id, peer, directory) = try Self.state()
        defer { close(peer); rmdir(directory) }
        // No timer of the state's own: the poller ticks every second (a quarter of 30 s is longer).
        #expect(Self.sweepTimers(state).isEmpty)
        #expect(state.sweepInterval == .seconds(1))
        let fixes = PublisherTests.positioned
        // 40 s of fixes and no tick: fixes alone never cut, whatever the timeout.
        for tenth in 1...400 {
            state.publish(fixes[tenth % fixes.count], at: PublisherTests.moment(Double(tenth) / 10))
        }
        #expect(state.connections[id] != nil, "cut in a fix's turn")
        #expect(Self.sweepTimers(state).isEmpty, "no timer set by fixes")
        // Then the ticks, a second apart from 41 s: nothing read since the WATCH at 0 s, so a tick cuts it —
        // the first (its progress was dated at connecting) or, had it seen progress, 30 s after that one.
        var cutAt: Double?
        for second in 41...80 {
            state.handle(.sweep, at: PublisherTests.moment(Double(second)))
            if state.connections[id] == nil { cutAt = Double(second); break }
        }
        let cut = try #require(cutAt)
        #expect(cut >= 41 && cut <= 72, "cut at \(cut) s")
    }

    @Test("a client that reads what it is sent is never cut by the poller's ticks")
    func readerKept() throws {
        var (state, id, peer, directory) = try Self.state()
        defer { close(peer); rmdir(directory) }
        state.effects.removeAll()
        let fixes = PublisherTests.positioned
        for tenth in 1...600 {
            let t = Double(tenth) / 10
            state.publish(fixes[tenth % fixes.count], at: PublisherTests.moment(t))
            if tenth % 10 == 0 { Self.drain(peer) }
            if tenth % 10 == 5 {
                // The poller's tick every second (as the front hands it over), half-way between two reads.
                state.handle(.sweep, at: PublisherTests.moment(t))
                #expect(Self.sweepTimers(state).isEmpty)
                state.effects.removeAll()
            }
        }
        #expect(state.connections[id] != nil)
    }

    @Test("a reader that keeps up but reads every 1.9 s, swept every second, is never cut at client-timeout 2 s")
    func slowSteadyReaderKept() throws {
        // Found by a helper attacking as uid 1: SIOCOUTQ on a Unix socket is the messages' memory charge, not
        // their bytes, and such a reader, looked at between two of its reads, seemed to have read nothing.
        var (state, id, peer, directory) = try Self.state(clientTimeout: .seconds(2))
        defer { close(peer); rmdir(directory) }
        let fixes = PublisherTests.positioned
        for tenth in 1...300 {
            let t = Double(tenth) / 10
            state.publish(fixes[tenth % fixes.count], at: PublisherTests.moment(t))
            if tenth % 19 == 0 { Self.drain(peer) }
            if tenth % 10 == 5 { state.handle(.sweep, at: PublisherTests.moment(t)) }
            if state.connections[id] == nil { Issue.record("cut at \(t) s"); break }
        }
    }

    @Test("with no fix, the poller's ticks alone cut a client that reads nothing, never before client-timeout")
    func cutByTimer() throws {
        var (state, id, peer, directory) = try Self.state(clientTimeout: .seconds(2))
        defer { close(peer); rmdir(directory) }
        // A short timeout: the ticks are a quarter of it apart, 0.5 s.
        #expect(state.sweepInterval == .milliseconds(500))
        var cutAt: Double?
        for half in 1...10 {
            let t = Double(half) / 2
            state.effects.removeAll()
            state.handle(.sweep, at: PublisherTests.moment(t))
            if state.connections[id] == nil { cutAt = t; break }
            #expect(Self.sweepTimers(state).isEmpty)
        }
        let cut = try #require(cutAt)
        #expect(cut >= 2 && cut <= 3, "cut at \(cut) s")
    }
}

/// `EventPoller`'s tick, which runs the sweep when no fix does: on the poller's thread, never sooner than
/// its interval after the last, and while events are handled too.
@Suite("Event poller tick")
struct EventPollerTickTests {
    @Test("ticks come an interval apart or more, and events still arrive between them")
    func ticks() throws {
        let stamps = Locked<[ContinuousClock.Instant]>([])
        let events = Locked(0)
        let poller = try EventPoller(tickEvery: .milliseconds(50), tick: { stamps.withLock { $0.append(.now) } }) { batch in
            events.withLock { $0 += batch.count }
        }
        defer { poller.stop() }
        var pair: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        try poller.add(pair[0], tag: 7)
        _ = write(pair[1], "x", 1)
        let end = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < end, stamps.withLock({ $0.count }) < 4 || events.withLock({ $0 }) == 0 {
            usleep(10_000)
        }
        let ticks = stamps.withLock { $0 }
        try #require(ticks.count >= 4, "\(ticks.count) ticks in 10 s")
        #expect(events.withLock { $0 } >= 1)
        for (earlier, later) in zip(ticks, ticks.dropFirst()) {
            #expect(earlier.duration(to: later) >= .milliseconds(50))
        }
    }
}
