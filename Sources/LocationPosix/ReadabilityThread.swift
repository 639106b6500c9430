#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// Watches one descriptor from a thread of its own, blocked in poll(2), and runs `handler` on `queue`
/// (synchronously: the thread waits for it) each time the descriptor is readable, or when the deadline
/// the handler last returned has passed, until cancelled. It is the one I/O model of the receivers: a
/// serial tty and a gpsd socket are watched for readability, and a replay (no descriptor to watch, -1)
/// is paced by the deadlines alone.
///
/// For a receiver that reads a few hundred bytes every reporting cycle, this is one wake-up per read —
/// the kernel wakes this thread, which reads on the spot when `queue` is idle. A `DispatchSourceRead`
/// costs two wake-ups and a re-arm per read on Linux (libdispatch's event thread sees the descriptor
/// ready, wakes a worker to run the handler, and is woken again to re-arm its one-shot epoll entry).
///
/// `handler(readable)` must read until the descriptor would block (or cancel): otherwise poll(2)
/// reports it again at once. Hang-up and error conditions are reported as readable, so that the
/// handler's read sees them. It returns how long after now it wants to be called with `false` if
/// nothing arrives meanwhile (a timeout of the same poll, where a dispatch timer would wake two more
/// threads each time), or nil for no deadline.
///
/// `@unchecked Sendable`: `fd`, `queue` and `handler` never change; `cancelled`, `finish`, `ended` and
/// the wake-up pipe's ends are only touched on `queue` (the thread reads the pipe's read end, which is
/// closed on `queue` only after the thread stopped polling it).
public final class ReadabilityThread: @unchecked Sendable {
    private let fd: Int32
    private let queue: DispatchQueue
    private let handler: (_ readable: Bool) -> Duration?
    /// The pipe `cancel` writes a byte to, to wake the thread.
    private var wakeRead: OwnedFileDescriptor
    private var wakeWrite: OwnedFileDescriptor
    /// Set on `queue` by `cancel`; read on `queue` before every handler call.
    private var cancelled = false
    private var finish: (() -> Void)?
    /// Set on `queue` once the thread has ended (cancelled, or poll failed).
    private var ended = false

    /// Starts the thread.
    /// - Parameters:
    ///   - fileDescriptor: watched for POLLIN; -1 for none (then only deadlines call the handler); not
    ///     closed here (do it in `cancel`'s `then`).
    ///   - queue: a serial queue; `handler`, `cancel` and its `then` run on it.
    ///   - handler: called with true when the descriptor is readable, false when its last returned
    ///     deadline passed first; returns the next deadline (a duration from now) or nil.
    ///   - firstDeadline: when to call the handler with `false` if the descriptor is not readable
    ///     before; nil: not before it is.
    /// - Throws: `Errno` when the wake-up pipe or the thread cannot be made.
    public init(fileDescriptor: Int32, queue: DispatchQueue, firstDeadline: Duration? = nil,
                handler: @escaping (_ readable: Bool) -> Duration?) throws(Errno) {
        fd = fileDescriptor
        self.queue = queue
        self.handler = handler
        let ends = try FileDescriptorOps.pipe().get()
        wakeRead = OwnedFileDescriptor(taking: ends.read)
        wakeWrite = OwnedFileDescriptor(taking: ends.write)
        let start = firstDeadline.map { Self.now() + $0 }
        do {
            try PosixThread.detach { [self] in run(deadline: start) }
        } catch {
            wakeRead.close()
            wakeWrite.close()
            throw error
        }
    }

    /// Stops the thread: `handler` is not called again, and `then` runs on `queue` once the thread no
    /// longer looks at the descriptor (close it there). Call on `queue`.
    public func cancel(then: @escaping () -> Void) {
        guard !cancelled else { return }
        cancelled = true
        if ended { return then() }
        finish = then
        var byte: UInt8 = 1
        _ = withUnsafeBytes(of: &byte) { FileDescriptorOps.write(wakeWrite.rawValue, $0) }
    }

    /// `CLOCK_BOOTTIME` (the clock `ContinuousClock` reads on Linux) as a `Duration`: a value of fixed layout,
    /// where an optional `ContinuousClock.Instant` (not frozen) is handled through value witnesses at
    /// every read.
    private static func now() -> Duration {
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return .seconds(ts.tv_sec) + .nanoseconds(ts.tv_nsec)
    }

    private func run(deadline start: Duration?) {
        // Signals are left to the daemon's other threads (SignalPipe's handler runs on whichever the kernel
        // picks): this thread's reads and polls are then never interrupted by one.
        var all = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_BLOCK, &all, nil)
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeRead.rawValue, events: Int16(POLLIN), revents: 0)]
        var deadline = start
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            let timeout = deadline.map { ($0 - Self.now()).pollMilliseconds } ?? -1
            guard case .success = FileDescriptorOps.poll(&fds, timeoutMilliseconds: timeout) else { break }
            if fds[1].revents != 0 { break }
            if fds[0].revents & Int16(POLLNVAL) != 0 { break }
            let readable = fds[0].revents != 0
            if !readable && (deadline.map { Self.now() < $0 } ?? true) { continue }
            // The non-generic `sync`: the generic one costs a metadata look-up and a boxed result per call,
            // and this runs once per read (measured: 44 -> 32 us from poll(2) returning to read(2), cold).
            var stop = true
            var next: Duration? = nil
            queue.sync {
                guard !cancelled else { return }
                next = handler(readable)
                stop = cancelled
            }
            if stop { break }
            deadline = next.map { Self.now() + $0 }
        }
        queue.async {
            self.wakeRead.close()
            self.wakeWrite.close()
            self.ended = true
            let then = self.finish
            self.finish = nil
            then?()
        }
    }
}
