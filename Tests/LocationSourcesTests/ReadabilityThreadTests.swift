#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import LocationPosix
import Testing

@Suite("ReadabilityThread: poll(2) on a thread of its own")
struct ReadabilityThreadTests {
    /// A non-blocking pipe: [read, write].
    static func pipeEnds() throws -> [Int32] {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw Errno.current }
        _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
        return ends
    }

    static func drain(_ fd: Int32) -> Int {
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 256)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { return total }
            total += n
        }
    }

    @Test("the handler runs on the queue for each write, with readable = true, and reads what was written")
    func readsOnQueue() throws {
        let ends = try Self.pipeEnds()
        defer { close(ends[1]) }
        let queue = DispatchQueue(label: "test.readability")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let seen = Locked<(bytes: Int, calls: Int, onQueue: Bool)>((0, 0, true))
        let reader = try ReadabilityThread(fileDescriptor: ends[0], queue: queue) { readable in
            let n = Self.drain(ends[0])
            seen.withLock { $0.bytes += n; $0.calls += 1; $0.onQueue = $0.onQueue && readable && DispatchQueue.getSpecific(key: key) == true }
            return nil
        }
        for _ in 0..<3 {
            _ = write(ends[1], "$GPGGA\r\n", 8)
            usleep(20_000)
        }
        let end = monotonic() + 2
        while seen.withLock({ $0.bytes }) < 24 && monotonic() < end { usleep(5_000) }
        let closed = Locked(false)
        queue.sync { reader.cancel { close(ends[0]); closed.withLock { $0 = true } } }
        let state = seen.withLock { $0 }
        #expect(state.bytes == 24)
        #expect(state.calls >= 1 && state.calls <= 3)
        #expect(state.onQueue)
        let until = monotonic() + 2
        while !closed.withLock({ $0 }) && monotonic() < until { usleep(5_000) }
        #expect(closed.withLock { $0 })
    }

    @Test("a returned deadline calls the handler with readable = false once it passes without data")
    func deadline() throws {
        let ends = try Self.pipeEnds()
        defer { close(ends[1]) }
        let queue = DispatchQueue(label: "test.readability")
        let calls = Locked<[(at: Double, readable: Bool)]>([])
        let reader = try ReadabilityThread(fileDescriptor: ends[0], queue: queue) { readable in
            _ = Self.drain(ends[0])
            let count = calls.withLock { $0.append((monotonic(), readable)); return $0.count }
            return count == 1 ? .milliseconds(300) : nil  // one deadline, after the first read
        }
        _ = write(ends[1], "x", 1)
        usleep(800_000)
        queue.sync { reader.cancel { close(ends[0]) } }
        let got = calls.withLock { $0 }
        #expect(got.count == 2, "calls: \(got.map(\.readable))")
        #expect(got.first?.readable == true)
        if got.count == 2 {
            #expect(got[1].readable == false)
            let after = got[1].at - got[0].at
            #expect(after >= 0.29 && after < 0.6, "deadline call \(after) s after the read")
        }
    }

    @Test("after cancel the handler is never called, and then runs once, on the queue")
    func cancelStops() throws {
        let ends = try Self.pipeEnds()
        defer { close(ends[1]) }
        let queue = DispatchQueue(label: "test.readability")
        let calls = Locked(0)
        let finished = Locked(0)
        let reader = try ReadabilityThread(fileDescriptor: ends[0], queue: queue) { _ in
            _ = Self.drain(ends[0])
            calls.withLock { $0 += 1 }
            return nil
        }
        queue.sync {
            reader.cancel { close(ends[0]); finished.withLock { $0 += 1 } }
            reader.cancel { finished.withLock { $0 += 100 } }  // a second cancel is ignored
        }
        _ = write(ends[1], "late", 4)
        usleep(200_000)
        #expect(calls.withLock { $0 } == 0)
        #expect(finished.withLock { $0 } == 1)
    }
}

@Suite("ReadabilityThread without a descriptor: paced by deadlines alone")
struct ReadabilityThreadPacingTests {
    @Test("with -1 and a first deadline, the handler runs at each returned deadline, with readable = false")
    func pacedByDeadlines() throws {
        let queue = DispatchQueue(label: "test.pacing")
        let calls = Locked<[(at: Double, readable: Bool)]>([])
        let start = monotonic()
        let pacer = try ReadabilityThread(fileDescriptor: -1, queue: queue, firstDeadline: .milliseconds(100)) { readable in
            let count = calls.withLock { $0.append((monotonic(), readable)); return $0.count }
            return count < 3 ? .milliseconds(150) : nil  // three calls, then wait for nothing
        }
        usleep(800_000)
        queue.sync { pacer.cancel {} }
        let got = calls.withLock { $0 }
        #expect(got.count == 3, "calls at \(got.map { $0.at - start })")
        #expect(got.allSatisfy { !$0.readable })
        if got.count == 3 {
            let first = got[0].at - start, second = got[1].at - got[0].at, third = got[2].at - got[1].at
            #expect(first >= 0.099 && first < 0.4, "first call \(first) s after start")
            #expect(second >= 0.149 && second < 0.45 && third >= 0.149 && third < 0.45, "then after \(second) s and \(third) s")
        }
    }

    @Test("a deadline already past is due at once (poll(2) must not wait forever)")
    func pastDeadlineIsDue() throws {
        let queue = DispatchQueue(label: "test.pacing")
        let called = Locked(false)
        let pacer = try ReadabilityThread(fileDescriptor: -1, queue: queue, firstDeadline: .milliseconds(-5)) { _ in
            called.withLock { $0 = true }
            return nil
        }
        let end = monotonic() + 2
        while !called.withLock({ $0 }) && monotonic() < end { usleep(2_000) }
        queue.sync { pacer.cancel {} }
        #expect(called.withLock { $0 })
    }
}
