@testable import LocationServer
import Testing

/// The identity queue's order and bounds (`PendingIdentifications`): users take turns, so that one user's
/// flood delays another's connection by one identification, not by the flood.
@Suite("Connections waiting to be identified")
struct PendingIdentificationsTests {
    /// What the queued identifications did, in the order they ran (the test runs them on its own thread).
    final class Ran: @unchecked Sendable {
        var labels: [String] = []
        func work(_ label: String) -> @Sendable () -> Void { { self.labels.append(label) } }
    }

    static func drain(_ queue: inout PendingIdentifications<@Sendable () -> Void>) {
        while let work = queue.next() { work() }
    }

    @Test("users take turns: a flood of one user's connections does not hold back another's")
    func turns() {
        var queue = PendingIdentifications<@Sendable () -> Void>(perUser: 64, total: 1024)
        let ran = Ran()
        var queued: [Bool] = []
        for i in 0..<5 { queued.append(queue.enqueue(1000, ran.work("a\(i)"))) }
        queued.append(queue.enqueue(1001, ran.work("b0")))
        queued.append(queue.enqueue(nil, ran.work("unknown")))
        queued.append(queue.enqueue(1001, ran.work("b1")))
        #expect(queued.allSatisfy { $0 } && queue.count == 8)
        Self.drain(&queue)
        #expect(ran.labels == ["a0", "b0", "unknown", "a1", "b1", "a2", "a3", "a4"])
        let rest = queue.next()
        #expect(queue.count == 0 && rest == nil)
    }

    @Test("bounds: per user and in all; root is never refused, and waits its turn")
    func bounds() {
        var queue = PendingIdentifications<@Sendable () -> Void>(perUser: 3, total: 5)
        let ran = Ran()
        let first = (0..<4).map { queue.enqueue(1000, ran.work("a\($0)")) }
        let second = (0..<3).map { queue.enqueue(1001, ran.work("b\($0)")) }
        #expect(first == [true, true, true, false])
        #expect(second == [true, true, false], "5 in all")
        let unknown = queue.enqueue(nil, ran.work("unknown"))
        let root = queue.enqueue(0, ran.work("root"))
        #expect(!unknown && root && queue.count == 6)
        Self.drain(&queue)
        // Root's connection comes after one of each user who was waiting before it.
        #expect(ran.labels == ["a0", "b0", "root", "a1", "b1", "a2"])
        // A user whose connections were identified may queue again.
        let again = queue.enqueue(1000, ran.work("again"))
        #expect(again)
    }
}
