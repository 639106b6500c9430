#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// Watches one descriptor from a thread of its own, blocked in poll(2), and runs `handler` on `queue`
/// (synchronously: the thread waits for it) each time the descriptor is readable, or when the deadline
/// the handler last returned has passed, until cancelled.
///
/// For a receiver that reads a few hundred bytes every reporting cycle, this is one wake-up per read —
/// the kernel wakes this thread, which reads on the spot when `queue` is idle. A `DispatchSourceRead`
/// costs two wake-ups and a re-arm per read on Linux (libdispatch's event thread sees the descriptor
/// ready, wakes a worker to run the handler, and is woken again to re-arm its one-shot epoll entry).
///
/// `handler(readable)` must read until the descriptor would block (or cancel): otherwise poll(2)
/// reports it again at once. Hang-up and error conditions are reported as readable, so that the
/// handler's read sees them. It returns the seconds after which it wants to be called with `false` if
/// nothing arrives meanwhile (a receiver's staleness deadline: a timeout of the same poll, where a
/// dispatch timer would wake two more threads each time), or nil for no deadline.
public final class ReadabilityThread: @unchecked Sendable {
    private let fd: Int32
    private let queue: DispatchQueue
    private let handler: (_ readable: Bool) -> Double?
    /// The pipe whose write end `cancel` writes to: [read, write].
    private var wake: [Int32] = [-1, -1]
    /// Set on `queue` by `cancel`; read on `queue` before every handler call.
    private var cancelled = false
    private var finish: (() -> Void)?
    /// Set on `queue` once the thread has ended (cancelled, or poll failed).
    private var ended = false

    /// Starts the thread.
    /// - Parameters:
    ///   - fileDescriptor: watched for POLLIN; not closed here (do it in `cancel`'s `then`).
    ///   - queue: a serial queue; `handler`, `cancel` and its `then` run on it.
    ///   - handler: called with true when the descriptor is readable, false when its last returned
    ///     deadline (seconds) passed first; returns the next deadline or nil.
    /// - Throws: `Errno` when the wake-up pipe or the thread cannot be made.
    public init(fileDescriptor: Int32, queue: DispatchQueue, handler: @escaping (_ readable: Bool) -> Double?) throws(Errno) {
        fd = fileDescriptor
        self.queue = queue
        self.handler = handler
        guard pipe(&wake) == 0 else { throw .current }
        for end in wake {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { raw in
            Unmanaged<ReadabilityThread>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, context)
        guard started == 0 else {
            Unmanaged<ReadabilityThread>.fromOpaque(context).release()
            close(wake[0])
            close(wake[1])
            throw Errno(rawValue: started)
        }
        pthread_detach(thread)
    }

    /// Stops the thread: `handler` is not called again, and `then` runs on `queue` once the thread no
    /// longer looks at the descriptor (close it there). Call on `queue`.
    public func cancel(then: @escaping () -> Void) {
        guard !cancelled else { return }
        cancelled = true
        if ended { return then() }
        finish = then
        var byte: UInt8 = 1
        _ = write(wake[1], &byte, 1)
    }

    private static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    private func run() {
        // Signals are the daemon's dispatch sources' to take (signalfd on libdispatch's thread, with the
        // disposition set to ignore): a thread that left them unblocked could be picked to receive a
        // SIGTERM and drop it.
        var all = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_BLOCK, &all, nil)
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake[0], events: Int16(POLLIN), revents: 0)]
        var deadline: Double? = nil  // CLOCK_MONOTONIC seconds
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            let timeout = deadline.map { Int32(min(max(0, ($0 - Self.now()) * 1000).rounded(.up), 86_400_000)) } ?? -1
            let ready = poll(&fds, 2, timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            if fds[1].revents != 0 { break }
            if fds[0].revents & Int16(POLLNVAL) != 0 { break }
            let readable = fds[0].revents != 0
            if !readable && (deadline.map { Self.now() < $0 } ?? true) { continue }
            // The non-generic `sync`: the generic one costs a metadata look-up and a boxed result per call,
            // and this runs once per read (measured: 44 -> 32 us from poll(2) returning to read(2), cold).
            var stop = true
            var next: Double? = nil
            queue.sync {
                guard !cancelled else { return }
                next = handler(readable)
                stop = cancelled
            }
            if stop { break }
            deadline = next.map { Self.now() + $0 }
        }
        queue.async {
            close(self.wake[0])
            close(self.wake[1])
            self.ended = true
            let then = self.finish
            self.finish = nil
            then?()
        }
    }
}
