#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationPosix
import LocationSources
import Testing

/// A receiver driven by the test: it reports connected on start and sends what the test tells it.
final class ScriptedReceiver: Receiver, @unchecked Sendable {
    let name: String
    let priority: Int
    private let state = Locked<(handler: (@Sendable (ReceiverEvent) -> Void)?, starts: Int, stops: Int)>((nil, 0, 0))

    /// - Parameter plausibility: a script of made-up fixes (any year, any order) gets only the rules a replay
    ///   gets, unless the test is about the others.
    init(_ name: String, priority: Int = 0, plausibility: FixPlausibility.Configuration = .replay) {
        self.name = name
        self.priority = priority
        self.plausibility = plausibility
    }

    var status: ReceiverStatus { ReceiverStatus(name: name, type: "scripted", path: "-", priority: priority) }
    let plausibility: FixPlausibility.Configuration
    var starts: Int { state.withLock { $0.starts } }
    var stops: Int { state.withLock { $0.stops } }

    func start(_ handler: @escaping @Sendable (ReceiverEvent) -> Void) {
        state.withLock { $0.handler = handler; $0.starts += 1 }
        var s = status
        s.state = .connected
        handler(.status(s))
    }

    func stop() { state.withLock { $0.stops += 1 } }

    /// Sends a fix (even after stop, as a late event from a receiver's queue would arrive).
    func send(_ fix: Fix) { state.withLock { $0.handler }?(.fix(fix)) }

    /// Sends input counts, as a receiver does after a read.
    func sendCounts(sentences: Int, errors: Int) { state.withLock { $0.handler }?(.counts(sentences: sentences, errors: errors)) }
}

@Suite("Replacing receivers (configuration reload)")
struct ReceiverReplaceTests {
    @Test("FixSelector: kept receivers keep their state and take new priorities; reset and removed ones lose the selection")
    func selectorReplace() {
        var s = FixSelector(receivers: [("a", 10), ("b", 0)])
        #expect(s.fix(FailoverTests.fix("a", 1), from: "a", now: FailoverTests.at(0)) == .publish(FailoverTests.fix("a", 1)))
        _ = s.fix(FailoverTests.fix("b", 1), from: "b", now: FailoverTests.at(0.1))
        #expect(s.selected == "a")
        // Same receivers, priorities swapped: b, with its fix kept, takes over at once.
        #expect(s.replaceReceivers([("a", 0), ("b", 10)], reset: [], now: FailoverTests.at(0.2)) == .publish(FailoverTests.fix("b", 1)))
        #expect(s.selected == "b")
        // b replaced (reset): a's kept fix is published.
        #expect(s.replaceReceivers([("a", 0), ("b", 10)], reset: ["b"], now: FailoverTests.at(0.3)) == .publish(FailoverTests.fix("a", 1)))
        #expect(s.selected == "a")
        // a removed, b (new) has no fix yet: one no-fix.
        #expect(s.replaceReceivers([("b", 10)], reset: [], now: FailoverTests.at(0.4)) == .publish(Fix(device: "a", mode: .noFix)))
        #expect(s.selected == nil)
        #expect(s.fix(FailoverTests.fix("a", 2), from: "a", now: FailoverTests.at(0.5)) == .none, "a removed receiver is ignored")
        #expect(s.fix(FailoverTests.fix("b", 2), from: "b", now: FailoverTests.at(0.6)) == .publish(FailoverTests.fix("b", 2)))
    }

    @Test("ReceiverSet: unchanged receivers keep running untouched, replaced ones are stopped and restarted, late events of old ones are dropped")
    func setReplace() {
        let a = ScriptedReceiver("a", priority: 10), b = ScriptedReceiver("b"), gone = ScriptedReceiver("gone")
        let set = ReceiverSet([a, b, gone])
        let events = EventRecorder()
        set.start(events.setHandler)
        a.send(FailoverTests.fix("a", 1))
        #expect(events.wait(timeout: 2) { $0.fixes.last == FailoverTests.fix("a", 1) })

        let b2 = ScriptedReceiver("b", priority: 20), c = ScriptedReceiver("c")
        let change = set.replaceReceivers([c, a, b2])
        #expect(change == ReceiverSet.Change(added: ["c"], replaced: ["b"], removed: ["gone"], kept: ["a"]))
        #expect(set.receivers.map(\.name) == ["c", "a", "b"])
        #expect(set.receivers[2] === b2)
        #expect((a.starts, a.stops) == (1, 0), "an unchanged receiver is left running")
        #expect((b.starts, b.stops) == (1, 1) && (gone.starts, gone.stops) == (1, 1))
        #expect((b2.starts, c.starts) == (1, 1))

        // The old b's late fix is dropped; the new b (priority 20) takes over with its first fix.
        b.send(FailoverTests.fix("b", 2))
        a.send(FailoverTests.fix("a", 2))
        #expect(events.wait(timeout: 2) { $0.fixes.last == FailoverTests.fix("a", 2) })
        #expect(!events.fixes.contains(FailoverTests.fix("b", 2)))
        b2.send(FailoverTests.fix("b", 3))
        #expect(events.wait(timeout: 2) { $0.fixes.last == FailoverTests.fix("b", 3) })
        #expect(set.selectedReceiver == "b")

        set.stop()
        #expect((a.stops, b2.stops, c.stops) == (1, 1, 1))
    }

    @Test("ReceiverSet: replacing before start starts nothing; start then starts the new list")
    func replaceBeforeStart() {
        let a = ScriptedReceiver("a"), b = ScriptedReceiver("b")
        let set = ReceiverSet([a])
        let change = set.replaceReceivers([a, b])
        #expect(change.added == ["b"] && change.kept == ["a"])
        #expect((a.starts, b.starts) == (0, 0))
        set.start { _ in }
        #expect((a.starts, b.starts) == (1, 1))
        set.stop()
    }
}

@Suite("FixSelector: the one judge of liveness")
struct SelectorLivenessTests {
    static func at(_ seconds: Double) -> ContinuousClock.Instant { FailoverTests.at(seconds) }

    @Test("a lone receiver's fix stays live for 3 cycles, then one no-fix is published")
    func loneReceiverGoesStaleAfterThreeCycles() throws {
        var s = FixSelector(receivers: [("only", 0)])
        _ = s.fix(FailoverTests.fix("only", 1), from: "only", now: Self.at(0))
        #expect(s.fix(FailoverTests.fix("only", 2), from: "only", now: Self.at(1)) == .publish(FailoverTests.fix("only", 2)))
        // The cycle is 1 s: live until 3 s after the last fix, the deadline the timer is set for.
        #expect(s.nextDeadline() == Self.at(4))
        #expect(s.tick(now: Self.at(2.6)) == .none, "no failover judgement with nothing to fail over to")
        #expect(s.tick(now: Self.at(4)) == .none)
        #expect(s.tick(now: Self.at(4.01)) == .publish(Fix(device: "only", mode: .noFix)))
        #expect(s.tick(now: Self.at(5)) == .none, "one no-fix, not one per tick")
        #expect(s.fix(FailoverTests.fix("only", 6), from: "only", now: Self.at(6)) == .publish(FailoverTests.fix("only", 6)))
    }

    @Test("a configured stale-after replaces the 3 cycles, and caps the failover freshness")
    func configuredStaleAfter() {
        var lone = FixSelector(receivers: [("only", 0)], staleAfter: ["only": .milliseconds(500)])
        _ = lone.fix(FailoverTests.fix("only", 1), from: "only", now: Self.at(0))
        #expect(lone.nextDeadline() == Self.at(0.5))
        #expect(lone.tick(now: Self.at(0.51)) == .publish(Fix(device: "only", mode: .noFix)))

        var pair = FixSelector(receivers: [("high", 10), ("low", 0)], staleAfter: ["high": .milliseconds(800)])
        _ = pair.fix(FailoverTests.fix("low", 1), from: "low", now: Self.at(0))
        _ = pair.fix(FailoverTests.fix("high", 1), from: "high", now: Self.at(0.1))
        #expect(pair.selected == "high")
        // 2.5 s would be the failover freshness; the configured 0.8 s comes first.
        #expect(pair.nextDeadline() == Self.at(0.9))
        #expect(pair.tick(now: Self.at(0.95)) == .publish(FailoverTests.fix("low", 1)))
    }
}

@Suite("ReceiverSet: the published snapshot, one hop to the owner, the selector's clock")
struct ReceiverSetSnapshotTests {
    @Test("statuses come from the receivers' events, not from asking the receivers")
    func statusesFromEvents() {
        // A scripted receiver's own `status` always says `starting`; the set knows better from its events.
        let a = ScriptedReceiver("a", priority: 1)
        let set = ReceiverSet([a])
        #expect(set.statuses.map(\.state) == [.starting])
        set.start { _ in }
        #expect(set.statuses.map(\.state) == [.connected])
        #expect(a.status.state == .starting)
        a.send(FailoverTests.fix("a", 7))
        a.sendCounts(sentences: 12, errors: 3)
        let status = set.statuses.first
        #expect(status?.fixes == 1 && status?.lastFixTime == FailoverTests.fix("a", 7).time)
        #expect(status?.sentences == 12 && status?.errors == 3)
        #expect(set.latestFix == FailoverTests.fix("a", 7))
        set.stop()
    }

    @Test("a fix reaches the owner on the receiver's own thread, before the receiver's call returns")
    func oneHop() {
        let a = ScriptedReceiver("a")
        let set = ReceiverSet([a])
        let seen = Locked<[(fix: Fix, thread: pthread_t)]>([])
        set.start { event in
            if case .fix(let fix) = event { seen.withLock { $0.append((fix, pthread_self())) } }
        }
        // Connected, no fix yet: the one no-fix.
        #expect(seen.withLock { $0.map(\.fix) } == [Fix(device: nil, mode: .noFix)])
        a.send(FailoverTests.fix("a", 1))
        // No waiting: the set handed it on synchronously.
        let got = seen.withLock { $0 }
        #expect(got.map(\.fix) == [Fix(device: nil, mode: .noFix), FailoverTests.fix("a", 1)])
        #expect(got.last.map { pthread_equal($0.thread, pthread_self()) != 0 } == true)
        set.stop()
    }

    @Test("the selected receiver falls silent: the set's clock fails over after 2.5 s, with no event from it")
    func clockFailsOver() {
        let high = ScriptedReceiver("high", priority: 10), low = ScriptedReceiver("low")
        let set = ReceiverSet([high, low])
        let log = Locked<[(at: Double, fix: Fix)]>([])
        set.start { event in
            if case .fix(let fix) = event { log.withLock { $0.append((monotonic(), fix)) } }
        }
        defer { set.stop() }
        high.send(FailoverTests.fix("high", 1))
        let silentSince = monotonic()
        // low keeps reporting every 100 ms; high says nothing more.
        var second = 1
        while monotonic() - silentSince < 3.5 {
            low.send(FailoverTests.fix("low", second))
            second += 1
            usleep(100_000)
        }
        let entries = log.withLock { $0 }
        let switched = entries.first { $0.fix.device == "low" }
        #expect(entries.first { $0.fix.hasPosition }?.fix == FailoverTests.fix("high", 1))
        if let switched {
            let after = switched.at - silentSince
            #expect(after >= 2.45 && after < 3.0, "switched \(after) s after high's last fix")
        } else {
            Issue.record("never switched to low: \(entries.map(\.fix.device))")
        }
    }
}
