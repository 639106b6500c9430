#if canImport(Glibc)
import Glibc
#endif
import CPosixShims

/// What the kernel says about a socket's peer beyond SO_PEERCRED: its groups, the process behind it
/// pinned by a pidfd, and — on kernels without SO_PEERPIDFD, or for TCP peers — which socket inode that
/// process must hold for the pin to be the peer (sock_diag, as ss(8) asks).
public enum PeerProcess {
    /// getsockopt(SO_PEERGROUPS): the supplementary group ids the peer had when it connected (the
    /// kernel's record, not /etc/group); nil where the kernel does not say.
    public static func groups(ofPeer socket: Int32) -> [UInt32]? {
        var ids = [UInt32](repeating: 0, count: 256)
        let count = ids.withUnsafeMutableBufferPointer { locationd_peer_groups(socket, $0.baseAddress, Int32($0.count)) }
        guard count >= 0 else { return nil }
        return Array(ids.prefix(Int(count)))
    }

    /// pidfd_open(2): a descriptor that pins process `pid` (its number cannot be reused while it is open).
    public static func pin(_ pid: Int32) -> Result<OwnedFileDescriptor, Errno> {
        funnel(.open) { locationd_pidfd_open(pid) }.map { OwnedFileDescriptor(taking: $0) }
    }

    /// Whether the process a pidfd pins is still running: a pidfd turns readable when its process exits
    /// (pidfd_open(2)). Polling needs no permission over the process, where signalling it does (the
    /// service runs as its own user, without CAP_KILL). A failed poll counts as exited.
    public static func isRunning(_ pidfd: borrowing OwnedFileDescriptor) -> Bool {
        guard case .success(let events) = FileDescriptorOps.poll(pidfd.rawValue, events: Int16(POLLIN), timeoutMilliseconds: 0) else {
            return false
        }
        return events == 0
    }

    /// Whether the other end of the connected Unix stream socket `socket` has closed it (both directions
    /// shut, poll(2) POLLHUP) and left nothing unread: nobody is there to serve, and nothing it sent can
    /// still be read (recv(2) with MSG_PEEK returns end of stream). A peer that only shut its writing
    /// side, or whose last request is still queued, is not gone.
    public static func hasLeft(_ socket: Int32) -> Bool {
        guard case .success(let events) = FileDescriptorOps.poll(socket, events: Int16(POLLIN), timeoutMilliseconds: 0),
              events & Int16(POLLHUP) != 0 else { return false }
        var byte: UInt8 = 0
        return recv(socket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 0
    }

    /// The inode of the socket at the other end of the connected Unix socket `socket` (sock_diag with
    /// UDIAG_SHOW_PEER); nil when the kernel does not say.
    public static func unixPeerInode(of socket: Int32) -> UInt64? {
        guard case .success(let ours) = FileDescriptorOps.inode(of: socket) else { return nil }
        var peer: UInt64 = 0
        guard locationd_unix_peer_inode(ours, &peer) == 0 else { return nil }
        return peer
    }

    /// Whether process `pid` has a descriptor open on the socket with inode `inode`: its /proc/PID/fd links
    /// read `socket:[INODE]`, or, where that directory may not be read, its /proc/PID/fdinfo entries say
    /// `mnt_id` sockfs and `ino` INODE.
    ///
    /// A process's /proc/PID/fd is mode 0500 for its owner: another user's needs CAP_DAC_READ_SEARCH, which
    /// would let the daemon read every file on the system. /proc/PID/fdinfo needs only ptrace read access
    /// (proc(5) "/proc/pid/fdinfo"; CAP_SYS_PTRACE for other users, the one capability the service keeps) and
    /// gives each descriptor's mount id and inode (Linux ≥ 5.14 prints `ino:`); sockets all live on the one
    /// internal sockfs mount, whose id is read from a socket of our own.
    public static func process(_ pid: Int32, holdsSocket inode: UInt64) -> Bool {
        var unlimited = Int.max
        return process(pid, holdsSocket: inode, budget: &unlimited) ?? false
    }

    /// `process(_:holdsSocket:)`, reading at most `budget` descriptors (what it reads is taken off); nil when the
    /// process has more than are left.
    static func process(_ pid: Int32, holdsSocket inode: UInt64, budget: inout Int) -> Bool? {
        let target = "socket:[\(inode)]"
        if case .success(let names) = FileDescriptorOps.directoryEntries(atPath: "/proc/\(pid)/fd") {
            guard names.count <= budget else { return nil }
            budget -= names.count
            return names.contains { name in
                guard case .success(let link) = FileDescriptorOps.readLink("/proc/\(pid)/fd/\(name)") else { return false }
                return link == target
            }
        }
        guard let sockfs = socketMountID,
              case .success(let names) = FileDescriptorOps.directoryEntries(atPath: "/proc/\(pid)/fdinfo") else { return false }
        guard names.count <= budget else { return nil }
        budget -= names.count
        return names.contains { name in
            guard let entry = descriptorInfo("/proc/\(pid)/fdinfo/\(name)") else { return false }
            return entry.mountID == sockfs && entry.inode == inode
        }
    }

    /// The mount id of sockfs, the kernel's internal mount every socket lives on: `mnt_id` in the fdinfo of a
    /// socket of our own; nil when fdinfo cannot be read.
    static let socketMountID: Int? = {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return descriptorInfo("/proc/self/fdinfo/\(fd)")?.mountID
    }()

    /// `mnt_id` and `ino` of one /proc/PID/fdinfo/N file; nil when unreadable or without them (kernels
    /// before 5.14 print no `ino:`).
    static func descriptorInfo(_ path: String) -> (mountID: Int, inode: UInt64)? {
        guard case .success(let bytes) = FileDescriptorOps.readFile(atPath: path, maximumBytes: 4096) else { return nil }
        var mountID: Int?, inode: UInt64?
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(whereSeparator: { $0 == 9 || $0 == 32 }).map { String(decoding: $0, as: UTF8.self) }
            guard fields.count == 2 else { continue }
            if fields[0] == "mnt_id:" { mountID = Int(fields[1]) }
            if fields[0] == "ino:" { inode = UInt64(fields[1]) }
        }
        guard let mountID, let inode else { return nil }
        return (mountID, inode)
    }

    /// Asks the kernel to attach the writer's credentials to what is written to the Unix socket `fd`
    /// (SO_PASSCRED); on a listening socket, to its connections from their first byte.
    public static func passCredentials(_ fd: Int32) -> Result<Void, Errno> {
        funnel(.setsockopt) { locationd_pass_credentials(fd) }.map { _ in () }
    }

    /// recvmsg(2) without blocking, on a Unix stream socket with SO_PASSCRED: the count of bytes read,
    /// and the process that wrote them (nil when the kernel attached none); one read never holds two
    /// writers' bytes. `.wouldBlock` when nothing is waiting.
    public static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<(count: Int, sender: Int32?), Errno> {
        var pid: Int32 = -1
        return funnel(.read) { locationd_receive_with_sender(fd, buffer.baseAddress, buffer.count, &pid) }
            .map { (count: Int($0), sender: pid >= 0 ? pid : nil) }
    }

    /// sock_diag (NETLINK_SOCK_DIAG, as `ss -p` asks): the owner uid and inode of the TCP socket at the
    /// other end of our connection — the one whose local end is `peer` and remote end `ours`; nil when
    /// the kernel has no such socket (it is not on this host, or already closed).
    public static func tcpSocketOwner(peer: TCPAddress, ours: TCPAddress) -> (uid: UInt32, inode: UInt64)? {
        tcpPeerSocket(peer: peer, ours: ours).map { ($0.uid, $0.inode) }
    }

    /// `tcpSocketOwner`, with the bytes that socket's owner has left unread in its receive queue (inet_diag
    /// `idiag_rqueue`): on loopback the kernel acknowledges what lands there, so our own send queue
    /// (SIOCOUTQ) does not show a peer that reads nothing until that queue is full.
    public static func tcpPeerSocket(peer: TCPAddress, ours: TCPAddress) -> (uid: UInt32, inode: UInt64, unread: Int)? {
        guard peer.family == ours.family else { return nil }
        var uid: UInt32 = 0, inode: UInt64 = 0, unread: UInt32 = 0
        let result = peer.bytes.withUnsafeBufferPointer { source in
            ours.bytes.withUnsafeBufferPointer { destination in
                funnel(.socket) {
                    locationd_tcp_socket_owner(peer.family, source.baseAddress, peer.port, destination.baseAddress, ours.port,
                                               &uid, &inode, &unread)
                }
            }
        }
        guard case .success = result, inode != 0 else { return nil }
        return (uid, inode, Int(unread))
    }

    /// The processes with `uid` among their user ids (/proc/PID/status `Uid:`: real, effective, saved,
    /// filesystem) that hold the socket with inode `inode`, by increasing pid; any process when `uid` is nil
    /// (a daemon that dropped privileges keeps the socket it made as root). Other users' processes are read
    /// through /proc/PID/fdinfo with CAP_SYS_PTRACE (the service's one capability; see `process(_:holdsSocket:)`).
    ///
    /// It reads every descriptor of those processes: at most `descriptorLimit` of them, so that a user who holds
    /// hundreds of thousands (an attacker's 792,000 took 3.7 s to read) cannot make each of its connections hold
    /// up those of others that long; nil when there are more (who holds the socket cannot be told).
    public static func processes(holdingSocket inode: UInt64, uid: UInt32?, descriptorLimit: Int = descriptorScanLimit) -> [Int32]? {
        guard case .success(let names) = FileDescriptorOps.directoryEntries(atPath: "/proc") else { return [] }
        var holders: [Int32] = []
        var budget = descriptorLimit
        for name in names {
            guard let pid = Int32(name), pid > 0 else { continue }
            if let uid { guard let uids = userIDs(of: pid), uids.contains(uid) else { continue } }
            guard let holds = process(pid, holdsSocket: inode, budget: &budget) else { return nil }
            if holds { holders.append(pid) }
        }
        return holders.sorted()
    }

    /// The most descriptors one look-up of a socket's holders reads (`processes(holdingSocket:uid:)`): about
    /// 0.3 s of reading on this project's test machine (4.6 us a descriptor), and far more than a user's
    /// programs hold (a desktop session: a few thousand).
    public static let descriptorScanLimit = 65_536

    /// The `Uid:` fields of /proc/PID/status (real, effective, saved, filesystem), read without splitting
    /// the rest of the file: `processes(holdingSocket:uid:)` reads it for every process on the system at
    /// every connection (with `status(of:)`, a quarter of a second per connection in a debug build).
    /// Nil when the file cannot be read (the process is gone) or has no such line.
    static func userIDs(of pid: Int32) -> [UInt32]? {
        // The `Uid:` line comes within the first few hundred bytes (after Name, Umask, State, Tgid, Ngid, Pid,
        // PPid, TracerPid): one read of 2 KiB on the stack, no allocation per process.
        guard let file = try? OwnedFileDescriptor(opening: "/proc/\(pid)/status", flags: O_RDONLY) else { return nil }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 2048) { buffer -> [UInt32]? in
            guard case .success(let count) = FileDescriptorOps.read(file.rawValue, into: UnsafeMutableRawBufferPointer(buffer)) else { return nil }
            return userIDs(inStatus: UnsafeBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// The numbers of the `Uid:` line of /proc/PID/status text `bytes`; nil without one.
    static func userIDs(inStatus bytes: UnsafeBufferPointer<UInt8>) -> [UInt32]? {
        let key: [UInt8] = Array("\nUid:".utf8)
        var start = 0
        while start + key.count <= bytes.count {
            guard let newline = bytes[start...].firstIndex(of: key[0]), newline + key.count <= bytes.count else { return nil }
            if bytes[newline..<(newline + key.count)].elementsEqual(key) {
                var uids: [UInt32] = [], value: UInt32?
                for byte in bytes[(newline + key.count)...] {
                    if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                        let (times, o1) = (value ?? 0).multipliedReportingOverflow(by: 10)
                        let (sum, o2) = times.addingReportingOverflow(UInt32(byte - UInt8(ascii: "0")))
                        guard !o1, !o2 else { return nil }
                        value = sum
                    } else {
                        if let v = value { uids.append(v) }
                        value = nil
                        if byte == UInt8(ascii: "\n") { break }
                    }
                }
                return uids.isEmpty ? nil : uids
            }
            start = newline + 1
        }
        return nil
    }

    /// What /proc/PID/status says of a process's credentials: its `Uid:` fields (real, effective, saved,
    /// filesystem), its effective gid (`Gid:` field 2), supplementary groups (`Groups:`) and the pid of the
    /// process tracing it (`TracerPid:`, 0 when none); nil when the file cannot be read (the process is gone).
    public static func status(of pid: Int32) -> (uids: [UInt32], gid: UInt32, groups: [UInt32], tracer: Int32)? {
        guard case .success(let bytes) = FileDescriptorOps.readFile(atPath: "/proc/\(pid)/status", maximumBytes: 1 << 16) else { return nil }
        var uids: [UInt32] = [], gid: UInt32?, groups: [UInt32] = [], tracer: Int32 = 0
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(whereSeparator: { $0 == 9 || $0 == 32 }).map { String(decoding: $0, as: UTF8.self) }
            guard let key = fields.first else { continue }
            let numbers = fields.dropFirst().compactMap { UInt32($0) }
            switch key {
            case "Uid:": uids = numbers
            case "Gid:": gid = numbers.count > 1 ? numbers[1] : numbers.first
            case "Groups:": groups = numbers
            case "TracerPid:": tracer = Int32(truncatingIfNeeded: numbers.first ?? 0)
            default: continue
            }
        }
        guard !uids.isEmpty, let gid else { return nil }
        return (uids, gid, groups, tracer)
    }
}
