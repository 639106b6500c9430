#if canImport(Glibc)
import Glibc
#endif
import LocationPolicy
import Testing
@testable import LocationServer

/// The agent broker on its own: questions per user and program, the per-user rate, withdrawal.
@Suite("Agent broker")
struct AgentBrokerTests {
    static let alice = ClientIdentity(pid: 10, uid: 1000, gid: 1000, user: "alice", executable: "/usr/bin/navit")
    static let aliceOther = ClientIdentity(pid: 11, uid: 1000, gid: 1000, user: "alice", executable: "/usr/bin/weather")
    static let bob = ClientIdentity(pid: 20, uid: 1001, gid: 1001, user: "bob", executable: "/usr/bin/navit")
    static let persistent = AgentQuestion(subject: .authorization(.persistent), accuracy: .full, purpose: nil)
    static let once = AgentQuestion(subject: .authorization(.once), accuracy: .full, purpose: nil)
    static let start = ContinuousClock.now

    @Test("the same question from the same user and program joins the waiting one; another is refused")
    func oneQuestionPerProgram() throws {
        var broker = AgentBroker()
        guard case .opened(let first) = broker.open(client: 1, identity: Self.alice, question: Self.persistent, request: "AUTHORIZE",
                                                    now: Self.start) else { Issue.record("not opened"); return }
        guard case .joined(let id) = broker.open(client: 2, identity: Self.alice, question: Self.persistent, request: "AUTHORIZE",
                                                 now: Self.start) else { Issue.record("not joined"); return }
        #expect(id == first.id)
        guard case .busy = broker.open(client: 3, identity: Self.alice, question: Self.once, request: "AUTHORIZE", now: Self.start) else {
            Issue.record("a different question was not refused"); return
        }
        // Another program of the same user, and the same program of another user, ask on their own.
        guard case .opened = broker.open(client: 4, identity: Self.aliceOther, question: Self.once, request: "AUTHORIZE", now: Self.start),
              case .opened = broker.open(client: 5, identity: Self.bob, question: Self.persistent, request: "AUTHORIZE", now: Self.start) else {
            Issue.record("independent questions were not opened"); return
        }
        let took = broker.take(first.id)
        let taken = try #require(took)
        #expect(taken.clients == [1, 2])
        // Answered: the program may ask again.
        guard case .opened = broker.open(client: 3, identity: Self.alice, question: Self.once, request: "AUTHORIZE", now: Self.start) else {
            Issue.record("not opened after the answer"); return
        }
    }

    @Test("overdue: the questions asked ask-timeout or longer ago, oldest first, until taken")
    func overdue() {
        // The poller's tick times questions out with it when their libdispatch timer is late (Scripts/faults "clock":
        // 17.7 s for an ask-timeout of 4 s under libfaketime's steps).
        var broker = AgentBroker()
        guard case .opened(let first) = broker.open(client: 1, identity: Self.alice, question: Self.once, request: "AUTHORIZE", now: Self.start),
              case .opened(let second) = broker.open(client: 2, identity: Self.bob, question: Self.once, request: "AUTHORIZE",
                                                     now: Self.start + .seconds(2)) else { Issue.record("not opened"); return }
        #expect(broker.overdue(now: Self.start + .seconds(3.9), timeout: .seconds(4)).isEmpty)
        #expect(broker.overdue(now: Self.start + .seconds(4), timeout: .seconds(4)) == [first.id])
        #expect(broker.overdue(now: Self.start + .seconds(7), timeout: .seconds(4)) == [first.id, second.id])
        _ = broker.take(first.id)
        #expect(broker.overdue(now: Self.start + .seconds(7), timeout: .seconds(4)) == [second.id])
    }

    @Test("a user opens at most questionsPerMinute questions a minute", arguments: [0, 59, 60])
    func rate(secondsLater: Int) {
        var broker = AgentBroker()
        var opened = 0
        for i in 0..<AgentBroker.questionsPerMinute {
            let program = ClientIdentity(pid: Int32(100 + i), uid: 1000, gid: 1000, executable: "/tmp/p\(i)")
            if case .opened(let ask) = broker.open(client: i, identity: program, question: Self.once, request: "AUTHORIZE", now: Self.start) {
                opened += 1
                _ = broker.take(ask.id)
            }
        }
        #expect(opened == AgentBroker.questionsPerMinute)
        let next = ClientIdentity(pid: 999, uid: 1000, gid: 1000, executable: "/tmp/next")
        let later = Self.start + .seconds(secondsLater)
        let outcome = broker.open(client: 99, identity: next, question: Self.once, request: "AUTHORIZE", now: later)
        if secondsLater >= 60 {
            guard case .opened = outcome else { Issue.record("not opened a minute later"); return }
        } else {
            guard case .tooMany = outcome else { Issue.record("the seventh question within the minute was opened"); return }
        }
        // Another user is not limited by this one.
        guard case .opened = broker.open(client: 100, identity: Self.bob, question: Self.once, request: "AUTHORIZE", now: later) else {
            Issue.record("another user was limited"); return
        }
    }

    @Test("a question is withdrawn when the last client waiting on it goes; an agent that goes is no longer one")
    func withdrawal() {
        var broker = AgentBroker()
        broker.register(50)
        _ = broker.open(client: 1, identity: Self.alice, question: Self.persistent, request: "AUTHORIZE", now: Self.start)
        _ = broker.open(client: 2, identity: Self.alice, question: Self.persistent, request: "AUTHORIZE", now: Self.start)
        let first = broker.remove(1), second = broker.remove(2)
        #expect(first.isEmpty)
        #expect(second.map(\.clients) == [[]])
        #expect(broker.isAgent(50))
        _ = broker.remove(50)
        #expect(!broker.hasAgents)
    }
}

@Suite("Output queue")
struct OutputQueueTests {
    @Test("a tagged message still wholly unsent can be withdrawn; one begun cannot")
    func withdraw() throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        var size: Int32 = 4096
        setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        var queue = OutputQueue()
        // Fill the socket so that what follows is queued.
        var queued = false
        while !queued { queued = try queue.send(Array(repeating: 65, count: 4096), isLocation: false, on: fds[0]) }
        let before = queue.byteCount
        _ = try queue.send(Array(repeating: 66, count: 100), isLocation: false, tag: 7, on: fds[0])
        #expect(queue.byteCount == before + 100)
        let withdrawn = queue.withdraw(tag: 7)
        #expect(withdrawn)
        #expect(queue.byteCount == before)
        let again = queue.withdraw(tag: 7)
        #expect(!again)
    }
}
