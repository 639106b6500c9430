#if canImport(Glibc)
import Glibc
#endif

/// Starts threads: the one pthread trampoline of the project. For work that blocks in a system call
/// (poll(2) on a device, a blocking read) and so must not hold a Dispatch worker.
public enum PosixThread {
    /// Runs `body` on a new detached thread (pthread_create(3), pthread_detach(3)).
    /// - Parameter body: runs once; the thread ends when it returns.
    /// - Throws: the error number pthread_create returned (`EAGAIN`: no more threads).
    public static func detach(_ body: @escaping @Sendable () -> Void) throws(Errno) {
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            Unmanaged<Body>.fromOpaque(raw).takeRetainedValue().run()
            return nil
        }, box)
        guard result == 0 else {
            Unmanaged<Body>.fromOpaque(box).release()
            throw Errno(rawValue: result)
        }
        pthread_detach(thread)
    }

    private final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}

extension Duration {
    /// The duration in seconds, as a `Double` (for display and for C calls that take seconds).
    public var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration in whole milliseconds, rounded up and clamped to what poll(2) takes (a deadline
    /// polled for is never missed by waking a little early).
    public var pollMilliseconds: Int32 {
        // A deadline already passed is due now (a negative timeout would make poll(2) wait forever).
        guard self > .zero else { return 0 }
        let (seconds, attoseconds) = components
        let milliseconds = seconds.multipliedReportingOverflow(by: 1000)
        guard !milliseconds.overflow else { return Int32.max }
        let total = milliseconds.partialValue + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: total)
    }
}
