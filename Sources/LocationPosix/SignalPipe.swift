#if canImport(Glibc)
import Glibc
#endif
import CPosixShims

/// Process signals taken as data from a pipe (the self-pipe idiom): a handler installed for each signal,
/// first thing in `main`, writes the signal's number to the pipe, and the owner reads them when the pipe
/// is readable (`take()`). A signal sent at any moment after `install` — before the reader is set up,
/// on whatever thread the kernel picks — waits in the pipe; none is lost.
///
/// Why not libdispatch's signal sources: on Linux they set the disposition to "ignore" and register a
/// `signalfd` on libdispatch's event thread later, asynchronously. A SIGTERM sent in between was dropped —
/// the daemon, asked to stop right after binding its socket, ran on (NMEASocketTests "the socket is
/// removed when the daemon stops", under ASan, 2 runs in 4). Nor a `signalfd` of our own: `dispatchMain`
/// parks the main thread in `sigsuspend` with an empty mask, which takes a blocked signal at its default
/// action — the daemon died of the SIGTERM it was to handle.
///
/// Read it from one queue at a time (the daemon's main queue).
public final class SignalPipe: Sendable {
    /// The read end; watch it for readability, then call `take()`.
    public let descriptor: OwnedFileDescriptor
    private let writeEnd: OwnedFileDescriptor

    /// Makes the pipe and installs the handlers. Call it once, before anything starts a thread.
    /// - Throws: the errno of pipe2(2) (EMFILE) or sigaction(2) (EINVAL for a signal that cannot be caught).
    public init(install signals: [Int32]) throws(Errno) {
        let ends = try FileDescriptorOps.pipe().get()
        descriptor = OwnedFileDescriptor(taking: ends.read)
        writeEnd = OwnedFileDescriptor(taking: ends.write)
        let installed = signals.withUnsafeBufferPointer {
            locationd_signal_pipe_install(ends.write, $0.baseAddress, Int32($0.count))
        }
        guard installed == 0 else { throw Errno.current }
    }

    /// The signals received since the last call, in arrival order (a standard signal sent again while
    /// the kernel still holds it pending counts once); empty when none came.
    public func take() -> [Int32] {
        var taken: [Int32] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(descriptor.rawValue, $0.baseAddress, $0.count) }
            if n > 0 {
                taken += buffer[..<n].map { Int32($0) }
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return taken
            }
        }
    }
}
