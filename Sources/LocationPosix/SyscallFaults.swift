#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The system calls that go through the funnel (`FileDescriptorOps`, `OwnedFileDescriptor`), by name:
/// what a test names to inject a fault at one of them.
public enum Syscall: String, Hashable, Sendable, CaseIterable {
    case open, read, write, fsync, ftruncate, rename, unlink, mkdir, lseek, readlink, stat, poll, pipe, fcntl
    case socket, bind, listen, chmod, connect, accept, send, setsockopt, shutdown
    /// getsockname(2)/getpeername(2): the two ends of a connected socket.
    case socketAddress
    /// tcgetattr(3)/tcsetattr(3)/tcflush(3) and the tty's flock(2) (a serial device's configuration).
    case termios
}

/// Fault injection at the syscall funnel, for tests (swift-system's mocking of its syscall layer): make
/// a named call wait, or fail with an errno, before it runs. Process-wide; off by default, and then the
/// funnel pays one relaxed atomic load per call.
///
/// ```swift
/// SyscallFaults.inject(.fsync, .delay(.milliseconds(500)))   // every fsync(2) now waits 0.5 s first
/// defer { SyscallFaults.removeAll() }
/// ```
///
/// A delay runs on the calling thread (it sleeps there, as a slow disk would keep it), then the real call
/// runs. Tests that inject faults must not run beside others that use the funnel (`--no-parallel`, or a
/// `.serialized` suite).
public enum SyscallFaults {
    /// What happens at a call.
    public enum Fault: Hashable, Sendable {
        /// The call waits this long, then runs.
        case delay(Duration)
        /// The call does not run; the funnel returns this errno.
        case fail(Errno)
    }

    /// True while any fault is installed: the funnel's fast check.
    private static let armed = Atomic<Bool>(false)
    private static let faults = Locked<[Syscall: Fault]>([:])

    /// Installs `fault` for every later `call` through the funnel (replacing one installed before).
    public static func inject(_ call: Syscall, _ fault: Fault) {
        faults.withLock {
            $0[call] = fault
            armed.store(true, ordering: .releasing)
        }
    }

    /// Removes the fault of `call`, if any.
    public static func remove(_ call: Syscall) {
        faults.withLock {
            $0[call] = nil
            armed.store(!$0.isEmpty, ordering: .releasing)
        }
    }

    /// Removes every fault.
    public static func removeAll() {
        faults.withLock {
            $0.removeAll()
            armed.store(false, ordering: .releasing)
        }
    }

    /// Applies the installed fault of `call`: sleeps for a delay; returns the errno of a failure.
    @inline(__always)
    static func check(_ call: Syscall) -> Errno? {
        guard armed.load(ordering: .acquiring) else { return nil }
        return apply(call)
    }

    private static func apply(_ call: Syscall) -> Errno? {
        switch faults.withLock({ $0[call] }) {
        case nil: return nil
        case .fail(let errno)?: return errno
        case .delay(let duration)?:
            let (seconds, attoseconds) = duration.components
            var request = timespec(tv_sec: Int(max(0, seconds)), tv_nsec: Int(max(0, attoseconds) / 1_000_000_000))
            var remaining = timespec()
            while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
            return nil
        }
    }
}

/// One system call through the funnel: an injected fault first (tests), then `call`, retried on EINTR;
/// a negative result becomes the errno (swift-system `valueOrErrno`, `retryOnInterrupt`).
@inline(__always)
func funnel<T: BinaryInteger>(_ name: Syscall, _ call: () -> T) -> Result<T, Errno> {
    if let fault = SyscallFaults.check(name) { return .failure(fault) }
    return retryingOnInterrupt(call)
}
