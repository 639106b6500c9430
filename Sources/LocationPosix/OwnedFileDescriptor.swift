#if canImport(Glibc)
import Glibc
#endif

/// A file descriptor with one owner, closed exactly once: when the owner closes it, replaces it, or
/// goes away (`deinit`). Noncopyable, so no second copy can close it again or use it after the close.
///
/// An owner that may hold no descriptor (a receiver between connections) keeps an empty one
/// (`OwnedFileDescriptor()`, `rawValue` -1) rather than an optional.
public struct OwnedFileDescriptor: ~Copyable, Sendable {
    /// The descriptor number; -1 when empty or closed. Borrowed: never close it yourself.
    public private(set) var rawValue: Int32

    /// An empty owner: holds no descriptor.
    public init() { rawValue = -1 }

    /// Takes ownership of `fd` (closed here from now on).
    public init(taking fd: Int32) { rawValue = fd }

    /// open(2) through the funnel (EINTR retried; tests may inject faults), close-on-exec added.
    /// - Parameters:
    ///   - path: the file.
    ///   - flags: `O_RDONLY`, `O_WRONLY | O_CREAT | O_TRUNC`, ... (`O_CLOEXEC` is always added).
    ///   - mode: permissions for a file `O_CREAT` makes.
    /// - Throws: the errno of open(2), e.g. `Errno.noSuchFileOrDirectory`.
    public init(opening path: String, flags: Int32, mode: mode_t = 0o600) throws(Errno) {
        rawValue = try FileDescriptorOps.open(path, flags: flags, mode: mode).get()
    }

    /// True while it holds a descriptor.
    public var isOpen: Bool { rawValue >= 0 }

    /// Closes the descriptor now (close(2), never retried); the owner is empty afterwards.
    public mutating func close() {
        if rawValue >= 0 { FileDescriptorOps.close(rawValue) }
        rawValue = -1
    }

    /// Closes the descriptor held (if any) and takes ownership of `other`'s.
    public mutating func replace(with other: consuming OwnedFileDescriptor) {
        close()
        rawValue = other.release()
    }

    /// Gives the descriptor up without closing it (to an owner that closes it some other way, e.g.
    /// libgps's `gps_close`). The owner is empty afterwards.
    public mutating func release() -> Int32 {
        let fd = rawValue
        rawValue = -1
        return fd
    }

    deinit {
        if rawValue >= 0 { FileDescriptorOps.close(rawValue) }
    }
}
