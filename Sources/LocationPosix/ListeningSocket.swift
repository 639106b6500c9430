#if canImport(Glibc)
import Glibc
#endif
import CPosixShims

/// A listening `AF_UNIX` `SOCK_STREAM` socket, non-blocking, close-on-exec.
public struct ListeningSocket: Sendable {
    public let fileDescriptor: Int32
    /// The path it is bound to; nil when it was inherited (socket activation) without one known.
    public let path: String?

    /// Wraps a descriptor that is already listening (e.g. from systemd's LISTEN_FDS).
    public init(inherited fd: Int32, path: String?) {
        fileDescriptor = fd
        self.path = path
        _ = FileDescriptorOps.setNonBlocking(fd)
    }

    /// Binds and listens on `path` with permissions `mode`. A stale socket file left by a dead daemon is
    /// replaced; one that a live process still accepts on is not (`EADDRINUSE`).
    ///
    /// The socket file has `mode` from the moment bind(2) makes it: bind runs under the umask that leaves
    /// exactly `mode` (`withFileCreationMask`). Nothing changes the mode by path afterwards: a chmod(2) of
    /// the path after bind follows whatever is there by then, and in a directory another user can write to,
    /// that user could swap the socket for a link to any file and have the daemon make it 0666 (issue 32).
    /// On Linux fchmod(2) on an unbound `AF_UNIX` socket does not set the file's mode, hence the umask.
    /// - Parameters:
    ///   - path: the socket file to make, at most 107 bytes.
    ///   - mode: its permission bits (0o666: anyone may connect).
    ///   - backlog: listen(2)'s backlog, in connections.
    /// - Throws: `Errno` of socket/bind/listen.
    public init(path: String, mode: mode_t = 0o666, backlog: Int32 = 128) throws(Errno) {
        var address = try unixAddress(path)
        // Owned until it listens: every throw below closes it.
        var socketFile = OwnedFileDescriptor(taking: try funnel(.socket) {
            socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }.get())
        let fd = socketFile.rawValue
        func bindOnce() -> Result<Int32, Errno> {
            // bind(2) makes the file with 0777 & ~umask (unix(7)): the umask that leaves `mode` gives it `mode`.
            withFileCreationMask(~mode & 0o777) {
                funnel(.bind) {
                    withUnsafePointer(to: &address) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                    }
                }
            }
        }
        if case .failure(let e) = bindOnce() {
            guard e == .addressInUse, !ListeningSocket.isLive(path) else { throw e }
            FileDescriptorOps.unlink(path)
            _ = try bindOnce().get()
        }
        _ = try funnel(.listen) { listen(fd, backlog) }.get()
        fileDescriptor = socketFile.release()
        self.path = path
    }

    /// True when something accepts connections on `path`.
    public static func isLive(_ path: String) -> Bool {
        guard var address = try? unixAddress(path),
              case .success(let fd) = funnel(.socket, { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) })
        else { return false }
        defer { FileDescriptorOps.close(fd) }
        let connected = funnel(.connect) {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        }
        if case .success = connected { return true }
        return false
    }

    /// accept4(2) with SOCK_NONBLOCK|SOCK_CLOEXEC; `.wouldBlock` when no connection is waiting.
    public func accept() -> Result<Int32, Errno> {
        funnel(.accept) { locationd_accept(fileDescriptor) }
    }

    /// Closes the socket and removes its file.
    public func close(unlinking: Bool = true) {
        FileDescriptorOps.close(fileDescriptor)
        if unlinking, let path { FileDescriptorOps.unlink(path) }
    }
}

/// Serializes `withFileCreationMask`: umask(2) is one value for the whole process.
private let fileCreationMaskLock = Locked(())

/// Runs `body` with the process's umask set to `mask`, then puts the previous one back.
///
/// umask(2) is process-wide, not per thread: a file another thread creates meanwhile gets `mask` too (a
/// file asked for with 0666 under a mask of 0o111 stays 0666). So callers keep `body` to the one call that
/// needs it (a bind(2)), and the daemon binds its sockets at start, before its threads create files; calls
/// of this function take turns (a lock), so two binds never see each other's mask.
/// - Parameters:
///   - mask: the permission bits files made in `body` must not have (umask(2)).
///   - body: the call that makes the file.
/// - Returns: what `body` returns.
public func withFileCreationMask<T>(_ mask: mode_t, _ body: () -> T) -> T {
    fileCreationMaskLock.withLock { _ in
        let previous = umask(mask)
        defer { umask(previous) }
        return body()
    }
}

/// A `sockaddr_un` for `path`. - Throws: `Errno.invalidArgument` when the path does not fit (108 bytes).
public func unixAddress(_ path: String) throws(Errno) -> sockaddr_un {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard !bytes.isEmpty, bytes.count < capacity else { throw .invalidArgument }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (i, b) in bytes.enumerated() { raw[i] = b }
        raw[bytes.count] = 0
    }
    return address
}

/// send(2) with MSG_NOSIGNAL (a vanished peer gives EPIPE, never SIGPIPE); `.wouldBlock` when full.
public func sendNoSignal(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Result<Int, Errno> {
    funnel(.send) { send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL)) }
}

/// Who is on the other end of a Unix socket, from the kernel (never from the client).
public struct PeerCredentials: Hashable, Sendable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    /// getsockopt(SO_PEERCRED). - Throws: `Errno`.
    public init(socket fd: Int32) throws(Errno) {
        var pid: Int32 = 0, uid: UInt32 = 0, gid: UInt32 = 0
        guard locationd_peer_credentials(fd, &pid, &uid, &gid) == 0 else { throw .current }
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}

/// getsockopt(SO_PEERPIDFD) (Linux 6.5+): a pidfd for the peer, or nil where the kernel lacks it.
public func peerPidFD(_ socket: Int32) -> Int32? {
    let fd = locationd_peer_pidfd(socket)
    return fd >= 0 ? fd : nil
}
