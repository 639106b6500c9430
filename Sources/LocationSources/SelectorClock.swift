#if canImport(Glibc)
import Glibc
#endif
import CPosixShims
import Dispatch
import LocationPosix

/// The thread that drives `FixSelector` when no event does: a `ReadabilityThread` watching a timerfd(2)
/// that its owner sets to the moment the selected fix would stop qualifying. Fixes move that moment later
/// with a `timerfd_settime` on the receiver's thread, which is already awake (at every other fix:
/// `ReceiverSet.armTimer`); the clock's thread wakes only when the moment comes with no fix. (A poll timeout instead woke it every 2 of the 3 cycles
/// a fix stays fresh, only to learn the later moment: at 10 Hz, 3–4 wake-ups a second, ~6 % of the
/// 1-client daemon's CPU — Benchmarks/README.md.)
///
/// The timer counts `CLOCK_BOOTTIME`, as `ContinuousClock` does on Linux: time suspended counts.
///
/// `@unchecked Sendable`: the timer's descriptor never changes until `stop`, which its owner calls after
/// the last `arm` (both under the owner's lock); `thread` is only touched on `queue`.
final class SelectorClock: @unchecked Sendable {
    private let queue = DispatchQueue(label: "locationd.receivers.clock")
    private var timer: OwnedFileDescriptor
    private var thread: ReadabilityThread?

    /// Starts the thread, disarmed; it calls `tick` (on its own queue) each time the timer expires.
    /// - Throws: `Errno` when the timer or the thread cannot be made.
    init(_ tick: @escaping @Sendable () -> Void) throws(Errno) {
        let fd = locationd_timerfd()
        guard fd >= 0 else { throw Errno.current }
        timer = OwnedFileDescriptor(taking: fd)
        do {
            thread = try ReadabilityThread(fileDescriptor: fd, queue: queue) { readable in
                guard readable else { return nil }
                var expirations: UInt64 = 0
                guard case .success(8) = withUnsafeMutableBytes(of: &expirations, { FileDescriptorOps.read(fd, into: $0) }) else {
                    return nil
                }
                tick()
                return nil
            }
        } catch {
            timer.close()
            throw error
        }
    }

    /// Sets the timer to expire `delay` from now (at least 1 µs: a zero value would disarm it), replacing
    /// the previous setting. Any thread, before `stop`.
    func arm(after delay: Duration) {
        let (seconds, attoseconds) = max(delay, .microseconds(1)).components
        _ = locationd_timerfd_set(timer.rawValue, seconds, Int(attoseconds / 1_000_000_000))
    }

    /// Stops the thread and waits until `tick` no longer runs; the timer closes once the thread stopped
    /// watching it.
    func stop() {
        queue.sync {
            thread?.cancel { self.timer.close() }
            thread = nil
        }
    }
}
