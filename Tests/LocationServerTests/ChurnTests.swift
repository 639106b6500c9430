#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import FoundationEssentials
import LocationPosix
import Testing
import TestSupport

/// Clients coming and going while the daemon writes to them faster than they read. Found by
/// `Scripts/soak` (1000 clients churning; once in five runs): the daemon crashed in libdispatch
/// (`_dispatch_source_refs_finalize_unregistration`): a client's descriptor was closed once its current
/// sources were cancelled, while the write source it had when its output last backed up could still be
/// unregistering, and the kernel gave the number to the next client. It came back once in four soak runs
/// on 2026-12-02 with that fixed; client sockets now live in one epoll set (`EventPoller`), no dispatch
/// source each. This test drives the path — watching for room to write switched on and off, clients
/// leaving right after — hundreds of times, but it is a race: on the code before the first fix it passed in
/// three runs of a debug build. The soak is what caught it.
@Suite("Client churn", .serialized)
struct ChurnTests {
    @Test("slow readers with small buffers connect, back up, drain and leave by the hundred; the daemon stays up")
    func churnWithBackedUpWrites() throws {
        let daemon = try DaemonProcess(config: """
            [receiver demo]
            type = replay
            file = \(DaemonProcess.demoCapture)
            rate = 200
            loop = yes

            [policy]
            access = always
            accuracy = full
            """, daemonKeys: "log-level = notice\nmax-clients-per-user = 1000")
        let path = daemon.socketPath
        let turns = Locked(0)
        let end = monotonic() + 8
        DispatchQueue.concurrentPerform(iterations: 12) { worker in
            var generator = SplitMix64(seed: UInt64(worker + 1))
            while monotonic() < end {
                // A small receive buffer: the daemon's writes block within a few fixes (a write source).
                guard let client = try? LineSocket(path, receiveBuffer: 1024) else { continue }
                client.send(#"{"class":"WATCH"}"#)
                usleep(UInt32.random(in: 5_000...60_000, using: &generator))
                // Drain (the write source is cancelled once the daemon's queue is empty), then leave at once.
                for _ in 0..<Int.random(in: 1...40, using: &generator) where client.line(timeout: 0.05) == nil { break }
                turns.withLock { $0 += 1 }
            }
        }
        let alive = kill(daemon.pid, 0) == 0
        let probe = try? RawClient(path)
        #expect(alive && probe?.message("VERSION") != nil, "the daemon died after \(turns.withLock { $0 }) turns: \(daemon.log.suffix(2000))")
        #expect(turns.withLock { $0 } > 50)
    }
}
