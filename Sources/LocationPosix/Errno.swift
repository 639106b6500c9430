#if canImport(Glibc)
import Glibc
#endif

/// A POSIX error number with English names (as swift-system's `Errno`).
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's current `errno`.
    public static var current: Errno { Errno(rawValue: errno) }

    /// strerror(3) text, e.g. "No such file or directory".
    public var description: String { String(cString: strerror(rawValue)) }

    public static let interrupted = Errno(rawValue: EINTR)
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    public static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    public static let noSuchDevice = Errno(rawValue: ENODEV)
    public static let noSuchDeviceOrAddress = Errno(rawValue: ENXIO)
    public static let ioError = Errno(rawValue: EIO)
    public static let resourceBusy = Errno(rawValue: EBUSY)
    public static let permissionDenied = Errno(rawValue: EACCES)
    public static let badFileDescriptor = Errno(rawValue: EBADF)
    public static let brokenPipe = Errno(rawValue: EPIPE)
    public static let fileExists = Errno(rawValue: EEXIST)
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    public static let connectionReset = Errno(rawValue: ECONNRESET)
    public static let invalidArgument = Errno(rawValue: EINVAL)
    public static let notATerminal = Errno(rawValue: ENOTTY)
    public static let protocolNotAvailable = Errno(rawValue: ENOPROTOOPT)
    public static let addressInUse = Errno(rawValue: EADDRINUSE)
    public static let timedOut = Errno(rawValue: ETIMEDOUT)
    public static let fileTooLarge = Errno(rawValue: EFBIG)
    public static let isADirectory = Errno(rawValue: EISDIR)
    public static let noSuchProcess = Errno(rawValue: ESRCH)
    /// ENOSPC: the filesystem is full.
    public static let noSpaceLeftOnDevice = Errno(rawValue: ENOSPC)

    /// True for the errors a vanished device gives: USB unplug, pty master closed.
    public var meansDeviceGone: Bool {
        self == .ioError || self == .noSuchDeviceOrAddress || self == .noSuchDevice || self == .noSuchFileOrDirectory
    }
}

/// Runs a syscall-style closure, retrying on EINTR; a negative result becomes the errno.
/// (One syscall, one funnel: swift-system `valueOrErrno`, `retryOnInterrupt`.)
@inline(__always)
public func retryingOnInterrupt<T: BinaryInteger>(_ call: () -> T) -> Result<T, Errno> {
    while true {
        let result = call()
        if result >= 0 { return .success(result) }
        let error = Errno.current
        if error != .interrupted { return .failure(error) }
    }
}
