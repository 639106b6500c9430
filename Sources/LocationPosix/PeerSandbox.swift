#if canImport(Glibc)
import Glibc
#endif
import CPosixShims

/// What the kernel says of a peer's sandbox: its LSM security label (SO_PEERSEC; AppArmor confines
/// snaps) and files read beneath its own root directory (/proc/PID/root, where Flatpak's `/.flatpak-info`
/// is). The meaning of either is LocationServer's (`Identity/SandboxIdentity.swift`).
extension PeerProcess {
    /// getsockopt(SO_PEERSEC) on a connected Unix socket: the security label the peer had when it
    /// connected, as its LSM prints it — AppArmor gives the profile and its mode, `snap.firefox.firefox
    /// (enforce)`, or `unconfined` (apparmor(7); socket(7) SO_PEERSEC). Trailing NULs and line ends are
    /// cut. Nil where the kernel gives no label: no LSM that labels sockets (ENOPROTOOPT), or an empty one.
    public static func securityLabel(ofPeer socket: Int32) -> String? {
        var capacity = 256
        while capacity <= 1 << 16 {
            var buffer = [CChar](repeating: 0, count: capacity)
            let length = funnel(.socket) { locationd_peer_security_label(socket, &buffer, buffer.count) }
            switch length {
            case .success(let n): return label(buffer.prefix(Int(n)).map { UInt8(bitPattern: $0) })
            case .failure(let e) where e.rawValue == ERANGE: capacity *= 4
            case .failure: return nil
            }
        }
        return nil
    }

    /// The AppArmor label process `pid` runs under now, as /proc/PID/attr/apparmor/current (Linux 5.8+)
    /// or /proc/PID/attr/current prints it (apparmor(7)); nil where neither can be read (no AppArmor, or
    /// no ptrace read access to the process).
    public static func securityLabel(ofProcess pid: Int32) -> String? {
        for path in ["/proc/\(pid)/attr/apparmor/current", "/proc/\(pid)/attr/current"] {
            if case .success(let bytes) = FileDescriptorOps.readFile(atPath: path, maximumBytes: 1 << 16) { return label(bytes) }
        }
        return nil
    }

    /// `bytes` as a label: UTF-8 up to the first NUL, without trailing line ends; nil when empty or not UTF-8.
    static func label(_ bytes: [UInt8]) -> String? {
        var text = bytes.prefix { $0 != 0 }[...]
        while let last = text.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { text = text.dropLast() }
        guard !text.isEmpty, let string = String(validating: text, as: UTF8.self) else { return nil }
        return string
    }

    /// What fstat(2) and fstatvfs(3) say of an open file.
    public struct FileStatus: Sendable, Equatable {
        public var device: UInt64
        public var inode: UInt64
        /// True for a regular file (S_ISREG).
        public var isRegularFile: Bool
        public var sizeBytes: Int
        /// The mount it is on is read-only (ST_RDONLY), so nobody can write it through that mount.
        public var onReadOnlyMount: Bool
    }

    /// fstat(2) and fstatvfs(3) of `fd`.
    public static func status(of fd: Int32) -> Result<FileStatus, Errno> {
        var device: UInt64 = 0, inode: UInt64 = 0, mode: UInt32 = 0, size: Int64 = 0, readOnly: Int32 = 0
        return funnel(.stat) { locationd_file_status(fd, &device, &inode, &mode, &size, &readOnly) }.map { _ in
            FileStatus(device: device, inode: inode, isRegularFile: mode & UInt32(S_IFMT) == UInt32(S_IFREG),
                       sizeBytes: Int(size), onReadOnlyMount: readOnly != 0)
        }
    }

    /// The root directory of process `pid` (/proc/PID/root, opened as a directory): lookups beneath it see
    /// that process's mounts, whatever mount namespace it is in (proc(5) "/proc/pid/root"). Needs ptrace
    /// read access to the process.
    public static func openRoot(of pid: Int32) -> Result<OwnedFileDescriptor, Errno> {
        funnel(.open) { Glibc.open("/proc/\(pid)/root", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY) }
            .map { OwnedFileDescriptor(taking: $0) }
    }

    /// openat(2) of `name` beneath the open directory `directory`, read-only, non-blocking (a FIFO put
    /// there cannot hold us), never following a symbolic link at the last component (ELOOP).
    public static func open(_ name: String, beneath directory: borrowing OwnedFileDescriptor) -> Result<OwnedFileDescriptor, Errno> {
        let fd = directory.rawValue
        return funnel(.open) { locationd_open_beneath(fd, name, O_RDONLY | O_NONBLOCK) }.map { OwnedFileDescriptor(taking: $0) }
    }

    /// The inode of namespace `kind` (`mnt`, `pid`, `user`, ...) of process `pid`: /proc/PID/ns/KIND
    /// (namespaces(7): two processes are in the same namespace when these inodes are equal); nil when it
    /// cannot be read.
    public static func namespace(_ kind: String, of pid: Int32) -> UInt64? {
        guard case .success(let id) = FileDescriptorOps.identity(ofFileAt: "/proc/\(pid)/ns/\(kind)") else { return nil }
        return id.inode
    }
}
