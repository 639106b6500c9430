import LocationCore
import LocationSources
import Synchronization
import Testing

/// A receiver driven by the test: it reports connected on start and sends what the test tells it.
final class ScriptedReceiver: Receiver, @unchecked Sendable {
    let name: String
    let priority: Int
    private let state = Mutex<(handler: (@Sendable (ReceiverEvent) -> Void)?, starts: Int, stops: Int)>((nil, 0, 0))

    init(_ name: String, priority: Int = 0) {
        self.name = name
        self.priority = priority
    }

    var status: ReceiverStatus { ReceiverStatus(name: name, type: "scripted", path: "-", priority: priority) }
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
}

@Suite("Replacing receivers (configuration reload)")
struct ReceiverReplaceTests {
    @Test("FixSelector: kept receivers keep their state and take new priorities; reset and removed ones lose the selection")
    func selectorReplace() {
        var s = FixSelector(receivers: [("a", 10), ("b", 0)])
        #expect(s.fix(FailoverTests.fix("a", 1), from: "a", now: 0) == .publish(FailoverTests.fix("a", 1)))
        _ = s.fix(FailoverTests.fix("b", 1), from: "b", now: 0.1)
        #expect(s.selected == "a")
        // Same receivers, priorities swapped: b, with its fix kept, takes over at once.
        #expect(s.replaceReceivers([("a", 0), ("b", 10)], reset: [], now: 0.2) == .publish(FailoverTests.fix("b", 1)))
        #expect(s.selected == "b")
        // b replaced (reset): a's kept fix is published.
        #expect(s.replaceReceivers([("a", 0), ("b", 10)], reset: ["b"], now: 0.3) == .publish(FailoverTests.fix("a", 1)))
        #expect(s.selected == "a")
        // a removed, b (new) has no fix yet: one no-fix.
        #expect(s.replaceReceivers([("b", 10)], reset: [], now: 0.4) == .publish(Fix(device: "a", mode: .noFix)))
        #expect(s.selected == nil)
        #expect(s.fix(FailoverTests.fix("a", 2), from: "a", now: 0.5) == .none, "a removed receiver is ignored")
        #expect(s.fix(FailoverTests.fix("b", 2), from: "b", now: 0.6) == .publish(FailoverTests.fix("b", 2)))
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
