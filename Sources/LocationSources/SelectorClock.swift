import Dispatch
import LocationPosix

/// The thread that drives `FixSelector` when no event does: a `ReadabilityThread` polling a pipe of its
/// own, with the deadline `tick` returns as the poll's timeout, and woken through the pipe when the
/// deadline must come earlier. While the selected receiver keeps sending fixes the deadline only moves
/// later, so it wakes once per freshness period at most, and costs one thread wake-up then — no
/// dispatch timer, whose rescheduling wakes libdispatch's timer thread.
///
/// `@unchecked Sendable`: the pipe's ends never change until `stop`, which its owner calls after the
/// last `wake` (both under the owner's lock); `thread` is only touched on `queue`.
final class SelectorClock: @unchecked Sendable {
    private let queue = DispatchQueue(label: "locationd.receivers.clock")
    private var wakeRead: OwnedFileDescriptor
    private var wakeWrite: OwnedFileDescriptor
    private var thread: ReadabilityThread?

    /// Starts the thread; it calls `tick` (on its own queue) when woken and at each deadline `tick`
    /// returned (nil: none).
    /// - Throws: `Errno` when the pipe or the thread cannot be made.
    init(_ tick: @escaping @Sendable () -> Duration?) throws(Errno) {
        let ends = try FileDescriptorOps.pipe().get()
        wakeRead = OwnedFileDescriptor(taking: ends.read)
        wakeWrite = OwnedFileDescriptor(taking: ends.write)
        let fd = ends.read
        thread = try ReadabilityThread(fileDescriptor: fd, queue: queue) { readable in
            if readable {
                var bytes: (UInt64, UInt64) = (0, 0)
                while case .success(let n) = withUnsafeMutableBytes(of: &bytes, { FileDescriptorOps.read(fd, into: $0) }), n > 0 {}
            }
            return tick()
        }
    }

    /// Makes the thread call `tick` now, to learn an earlier deadline. Any thread, before `stop`.
    func wake() {
        var byte: UInt8 = 1
        // A full pipe (EAGAIN) already holds a wake-up.
        _ = withUnsafeBytes(of: &byte) { FileDescriptorOps.write(wakeWrite.rawValue, $0) }
    }

    /// Stops the thread and waits until `tick` no longer runs; the pipe closes once the thread stopped
    /// polling it.
    func stop() {
        queue.sync {
            thread?.cancel {
                self.wakeRead.close()
                self.wakeWrite.close()
            }
            thread = nil
        }
    }
}
