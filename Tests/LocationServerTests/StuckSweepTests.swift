#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationPolicy
import LocationPosix
import Testing
@testable import LocationServer

/// The stuck-reader sweep runs in the turn of the fix that finds it due, not on a timer of its own: at 10
/// fixes a second the timer woke three of the daemon's threads every second (libdispatch's timer thread, a
/// worker, the timer thread again), about 6 % of the 1-client gpsd front's CPU (Benchmarks/README.md).
/// When no fix comes, the front's poller thread hands the state a `.sweep` every `sweepInterval`.
@Suite("Stuck-reader sweep")
struct StuckSweepTests {
    /// A state with navit's rules (PublisherTests) and the default `client-timeout` (30 s), and a client
    /// connected over a socket pair whose other end this test holds; the client watches.
    static func state(clientTimeout: Duration = .seconds(30)) throws -> (ServerState, id: Int, peer: Int32, directory: String) {
        var template = Array("/tmp/locationd-sweep-XXXXXX".utf8CString)
        let directory = String(cString: try #require(mkdtemp(&template)))
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

    @Test("while fixes flow, a client that reads nothing is cut after client-timeout by the fixes' turns alone")
    func cutByFixes() throws {
        var (state, id, peer, directory) = try Self.state()
        defer { close(peer); rmdir(directory) }
        // No timer: the poller's tick, when no fix comes, is a quarter of the timeout apart (7.5 s).
        #expect(Self.sweepTimers(state).isEmpty)
        #expect(state.sweepInterval == .milliseconds(7500))
        state.effects.removeAll()
        let fixes = PublisherTests.positioned
        var cutAt: Double?
        for tenth in 1...400 {
            let t = Double(tenth) / 10
            state.publish(fixes[tenth % fixes.count], at: PublisherTests.moment(t))
            if state.connections[id] == nil { cutAt = t; break }
        }
        // Nothing read since the WATCH at 0 s; sweeps a second apart: cut once 30 s passed since the first
        // sweep that saw nothing read (1 s), at the first sweep at or after it (at most 1 s later).
        let cut = try #require(cutAt)
        #expect(cut >= 30 && cut <= 32, "cut at \(cut) s")
        #expect(Self.sweepTimers(state).isEmpty, "no timer set by the fixes' sweeps")
    }

    @Test("a client that reads what it is sent is never cut, and the poller's tick only runs a sweep that is due")
    func readerKept() throws {
        var (state, id, peer, directory) = try Self.state()
        defer { close(peer); rmdir(directory) }
        state.effects.removeAll()
        let fixes = PublisherTests.positioned
        for tenth in 1...600 {
            let t = Double(tenth) / 10
            state.publish(fixes[tenth % fixes.count], at: PublisherTests.moment(t))
            if tenth % 10 == 0 { Self.drain(peer) }
            if tenth % 75 == 0 {
                // The poller's tick (as the front hands it over): no timer of the state's own.
                state.handle(.sweep, at: PublisherTests.moment(t))
                #expect(Self.sweepTimers(state).isEmpty)
                state.effects.removeAll()
            }
        }
        #expect(state.connections[id] != nil)
    }

    @Test("with no fix, the poller's ticks alone cut a client that reads nothing, never before client-timeout")
    func cutByTimer() throws {
        var (state, id, peer, directory) = try Self.state(clientTimeout: .seconds(2))
        defer { close(peer); rmdir(directory) }
        // A short timeout: the ticks are a quarter of it apart, 0.5 s, as is the sweep.
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
