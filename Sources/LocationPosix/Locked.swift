import CPosixShims
import Synchronization

/// A value that several threads share, behind a `Synchronization.Mutex` that ThreadSanitizer can see.
///
/// On Linux the toolchain's `Mutex` takes its fast path with atomics compiled into the caller, which
/// ThreadSanitizer sees, but under contention it waits and wakes with `FUTEX_LOCK_PI` / `FUTEX_UNLOCK_PI`
/// system calls inside `libswiftSynchronization.so`, which it does not: the hand-over from one critical
/// section to the next then has no happens-before edge, and every access in them is reported as a race
/// (docs/FUZZING.md "ThreadSanitizer"). Each critical section here is announced to it with
/// `__tsan_acquire` / `__tsan_release` on this object's address; in a build without the sanitizer those
/// are two calls that return at once. Otherwise this is `Mutex`: not reentrant, and `body` must not block.
public final class Locked<Value: ~Copyable>: Sendable {
    @usableFromInline let mutex: Mutex<Value>

    /// A lock holding `initialValue`.
    public init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with the value, the lock held; returns what it returns, rethrows what it throws.
    /// Inlinable, as `Mutex.withLock` is: specialized in the caller, with no generic call per lock.
    @inlinable
    public func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        let address = Unmanaged.passUnretained(self).toOpaque()
        return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            locationd_tsan_acquire(address)
            defer { locationd_tsan_release(address) }
            return try body(&value)
        }
    }
}
