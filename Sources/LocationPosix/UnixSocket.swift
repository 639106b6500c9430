#if canImport(Glibc)
import Glibc
#endif

/// The client side of `AF_UNIX` `SOCK_STREAM` sockets (the server side is `ListeningSocket`): each one
/// syscall with EINTR retried and EAGAIN returned as `Errno.wouldBlock`. Descriptors are opened
/// close-on-exec and blocking; sending never raises SIGPIPE, a vanished peer is `Errno.brokenPipe`.
public enum UnixSocketOps {
    /// socket(2) + connect(2): a blocking stream socket connected to the socket file at `path`.
    /// - Parameter path: the socket's file system path, at most 107 bytes.
    /// - Returns: the connected descriptor, or the errno: `noSuchFileOrDirectory` (no socket there),
    ///   `connectionRefused` (a stale socket file nobody listens on), `permissionDenied`,
    ///   `invalidArgument` for an empty or overlong path (`unixAddress`).
    public static func connect(path: String) -> Result<Int32, Errno> {
        var address: sockaddr_un
        do {
            address = try unixAddress(path)
        } catch {
            return .failure(error)
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let fd: Int32
        switch funnel(.socket, { socket(AF_UNIX, streamType | Int32(SOCK_CLOEXEC.rawValue), 0) }) {
        case .success(let s): fd = s
        case .failure(let e): return .failure(e)
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> Errno? in
                if let fault = SyscallFaults.check(.connect) { return fault }
                var result = Glibc.connect(fd, address, length)
                // A connect interrupted by a signal goes on in the background; retrying reports EISCONN
                // once it has completed (connect(2) "EINTR").
                while result < 0 && errno == EINTR {
                    result = Glibc.connect(fd, address, length)
                    if result < 0 && errno == EISCONN { result = 0 }
                }
                return result < 0 ? Errno.current : nil
            }
        }
        if let error = result {
            FileDescriptorOps.close(fd)
            return .failure(error)
        }
        return .success(fd)
    }

    /// Sends all of `bytes` with `sendNoSignal` (send(2), `MSG_NOSIGNAL`), continuing after partial
    /// sends; blocks (up to the send timeout, if one is set) on a blocking socket.
    public static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Result<Void, Errno> {
        bytes.withUnsafeBytes { raw in FileDescriptorOps.transferAll(raw) { sendNoSignal(fd, $0) } }
    }

    /// shutdown(2) with `SHUT_RDWR`: ends the connection in both directions without closing the
    /// descriptor; a thread blocked in read(2) on it returns 0 (end of file).
    @discardableResult
    public static func shutdown(_ fd: Int32) -> Result<Void, Errno> {
        funnel(.shutdown) { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }.map { _ in () }
    }

    /// setsockopt(2) `SO_SNDTIMEO`: a blocking send gives up with `Errno.wouldBlock` after `timeout`
    /// (`.zero` = wait forever; microsecond resolution).
    public static func setSendTimeout(_ fd: Int32, _ timeout: Duration) -> Result<Void, Errno> {
        setTimeout(fd, option: SO_SNDTIMEO, seconds: timeout.inSeconds)
    }

    /// setsockopt(2) `SO_RCVTIMEO`: a blocking read gives up with `Errno.wouldBlock` after `timeout`
    /// (`.zero` = wait forever; microsecond resolution).
    public static func setReceiveTimeout(_ fd: Int32, _ timeout: Duration) -> Result<Void, Errno> {
        setTimeout(fd, option: SO_RCVTIMEO, seconds: timeout.inSeconds)
    }

    /// setsockopt(2) `SO_SNDTIMEO`: a blocking send gives up with `Errno.wouldBlock` after `seconds`
    /// (0 = wait forever). Prefer `setSendTimeout(_:_:)` with a `Duration`.
    public static func setSendTimeout(_ fd: Int32, seconds: Double) -> Result<Void, Errno> {
        setTimeout(fd, option: SO_SNDTIMEO, seconds: seconds)
    }

    /// setsockopt(2) `SO_RCVTIMEO`: a blocking read gives up with `Errno.wouldBlock` after `seconds`
    /// (0 = wait forever). Prefer `setReceiveTimeout(_:_:)` with a `Duration`.
    public static func setReceiveTimeout(_ fd: Int32, seconds: Double) -> Result<Void, Errno> {
        setTimeout(fd, option: SO_RCVTIMEO, seconds: seconds)
    }

    private static func setTimeout(_ fd: Int32, option: Int32, seconds: Double) -> Result<Void, Errno> {
        let clamped = max(0, min(seconds, 1e9))
        var value = timeval(tv_sec: Int(clamped), tv_usec: Int((clamped - clamped.rounded(.down)) * 1e6))
        let size = socklen_t(MemoryLayout<timeval>.size)
        return funnel(.setsockopt) { setsockopt(fd, SOL_SOCKET, option, &value, size) }.map { _ in () }
    }

    private static var streamType: Int32 { Int32(SOCK_STREAM.rawValue) }
}
