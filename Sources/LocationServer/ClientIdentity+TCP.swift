import LocationPolicy
import LocationPosix

/// Why a TCP peer (the gpsd front) was not identified, and so refused.
public enum TCPPeerRefusal: Error, Equatable, CustomStringConvertible {
    /// The peer's address is not on loopback.
    case notLoopback(String)
    /// getsockname(2)/getpeername(2) failed.
    case noAddress(Errno)
    /// The kernel's socket table has no socket at the other end (it is not on this host, or closed).
    case noSocketOwner
    /// No process of the socket's owner holds its other end.
    case noProcess
    /// Processes running different programs hold it: which one speaks cannot be told.
    case ambiguous([Int32])
    /// The process exited, or its pid was reused, while it was being identified.
    case exited
    /// The owner's processes hold more descriptors than one look-up reads (`PeerProcess.descriptorScanLimit`).
    case tooManyDescriptors

    public var description: String {
        switch self {
        case .notLoopback(let address): return "peer \(address) is not on loopback"
        case .noAddress(let e): return "no socket address: \(e)"
        case .noSocketOwner: return "the kernel has no socket at the other end"
        case .noProcess: return "no process holds the other end"
        case .ambiguous(let pids): return "processes running different programs hold the other end (pids \(pids.map(String.init).joined(separator: ",")))"
        case .exited: return "the connecting process exited before it was identified"
        case .tooManyDescriptors: return "its user's processes hold more than \(PeerProcess.descriptorScanLimit) descriptors"
        }
    }
}

/// Identity of a TCP peer on loopback, from the kernel only (ARCHITECTURE.md "Policy model"): the owner
/// uid and inode of the peer's socket from the kernel's socket table (sock_diag, as `ss -p`), the process
/// of that uid holding `socket:[INODE]` (/proc/PID/fd), pinned with pidfd_open(2) and re-checked after
/// its executable, unit and groups (/proc/PID/status) were read.
extension ClientIdentity {
    /// Reads the identity of the peer of the accepted TCP socket `fd`.
    /// - Throws: `TCPPeerRefusal` when it cannot be identified; the front then closes the connection.
    public static func ofTCPPeer(socket fd: Int32) throws(TCPPeerRefusal) -> ClientIdentity {
        try ofTCPPeer(socket: fd, owner: tcpPeerOwner(socket: fd))
    }

    /// The owner uid and inode of the peer's socket, from the kernel's socket table (one sock_diag query:
    /// cheap, unlike finding the process, which reads every descriptor of that user's processes).
    /// - Throws: `TCPPeerRefusal` when the peer is not on loopback or not in the table.
    public static func tcpPeerOwner(socket fd: Int32) throws(TCPPeerRefusal) -> (uid: UInt32, inode: UInt64) {
        let ours: TCPAddress, peer: TCPAddress
        switch (TCPAddress.of(socket: fd, peer: false), TCPAddress.of(socket: fd, peer: true)) {
        case (.success(let o), .success(let p)): (ours, peer) = (o, p)
        case (.failure(let e), _), (_, .failure(let e)): throw .noAddress(e)
        }
        guard peer.isLoopback else { throw .notLoopback(peer.description) }
        guard let owner = PeerProcess.tcpSocketOwner(peer: peer, ours: ours) else { throw .noSocketOwner }
        return owner
    }

    /// The identity of the peer whose socket `owner` (`tcpPeerOwner`) is.
    /// - Throws: `TCPPeerRefusal` when no process, or processes of different programs, hold it.
    public static func ofTCPPeer(socket fd: Int32, owner: (uid: UInt32, inode: UInt64)) throws(TCPPeerRefusal) -> ClientIdentity {
        guard let holders = PeerProcess.processes(holdingSocket: owner.inode, uid: owner.uid) else { throw .tooManyDescriptors }
        guard let pid = holders.first else { throw .noProcess }
        guard case .success(let pidfd) = PeerProcess.pin(pid) else { throw .exited }
        let executable = verifiedExecutable(pid: pid)
        if holders.count > 1 {
            // A program and the children it forked share the socket; different programs: refuse.
            let others = holders.dropFirst().map { verifiedExecutable(pid: $0) }
            guard executable != nil, others.allSatisfy({ $0 == executable }) else { throw .ambiguous(holders) }
        }
        let unit = systemdUnit(pid: pid)
        guard let status = PeerProcess.status(of: pid) else { throw .exited }
        // Still the same process, still holding the socket: else the pid was reused or the socket handed on.
        guard PeerProcess.process(pid, holdsSocket: owner.inode), PeerProcess.isRunning(pidfd) else { throw .exited }
        return ClientIdentity(pid: pid, uid: owner.uid, gid: status.gid, user: UserDatabase.name(ofUser: owner.uid),
                              groups: groupNames([status.gid] + status.groups), executable: executable, unit: unit,
                              verifiedByPidFD: true)
    }
}
