import LocationPolicy
import LocationPosix

/// Identity of a TCP peer on loopback, from the kernel only (ARCHITECTURE.md "Policy model"): the owner
/// uid and inode of the peer's socket from the kernel's socket table (sock_diag, as `ss -p`), and every
/// process of any user holding `socket:[INODE]` (/proc/PID/fd), the first pinned with pidfd_open(2) and
/// re-checked after its executable, unit and groups (/proc/PID/status) were read.
extension ClientIdentity {
    /// Reads the identity of the peer of the accepted TCP socket `fd` in a pass of its own.
    /// - Throws: `PeerRefusal` when it cannot be identified; the front then closes the connection.
    public static func ofTCPPeer(socket fd: Int32) throws(PeerRefusal) -> ClientIdentity {
        let owner = try tcpPeerOwner(socket: fd)
        var cache = HolderCache()
        return try ofTCPPeer(owner: owner, scan: PeerProcess.scanHolders(of: [owner.inode]), cache: &cache)
    }

    /// The owner uid and inode of the peer's socket, from the kernel's socket table (one sock_diag query:
    /// cheap, unlike finding the process, which reads every process's descriptors).
    /// - Throws: `PeerRefusal` when the peer is not on loopback or not in the table.
    public static func tcpPeerOwner(socket fd: Int32) throws(PeerRefusal) -> (uid: UInt32, inode: UInt64) {
        let ours: TCPAddress, peer: TCPAddress
        switch (TCPAddress.of(socket: fd, peer: false), TCPAddress.of(socket: fd, peer: true)) {
        case (.success(let o), .success(let p)): (ours, peer) = (o, p)
        case (.failure(let e), _), (_, .failure(let e)): throw .noAddress(e)
        }
        guard peer.isLoopback else { throw .notLoopback(peer.description) }
        guard let owner = PeerProcess.tcpSocketOwner(peer: peer, ours: ours) else { throw .noSocketOwner }
        return owner
    }

    /// The identity of the peer whose socket `owner` (`tcpPeerOwner`) is, its holders found in `scan`.
    /// - Throws: `PeerRefusal` when no process holds it, processes of different programs or of other users
    ///   do, or the owner's processes hold more descriptors than are read.
    static func ofTCPPeer(owner: (uid: UInt32, inode: UInt64), scan: SocketHolderScan, cache: inout HolderCache) throws(PeerRefusal) -> ClientIdentity {
        let pids = scan.holders(of: owner.inode)
        guard let pid = scan.tableHolder(of: owner.inode) ?? pids.first else {
            throw scan.unreadUsers.contains(owner.uid) ? .tooManyDescriptors : .noProcess
        }
        guard case .success(let pidfd) = PeerProcess.pin(pid) else { throw .exited }
        let holders = HeldProgram.facts(pids, adding: nil, cache: &cache)
        if holders.isEmpty && cache.outOfDescriptors { throw .daemonOutOfDescriptors }
        let held = try HeldProgram.resolve(uid: owner.uid, holders: holders, unreadUsers: scan.unreadUsers)
        guard let status = PeerProcess.status(of: pid) else { throw .exited }
        // Still the same process, still holding the socket: else the pid was reused or the socket handed on.
        guard scan.stillHolds(pid, owner.inode), PeerProcess.isRunning(pidfd) else { throw .exited }
        var identity = ClientIdentity(pid: pid, uid: owner.uid, gid: status.gid, user: UserDatabase.name(ofUser: owner.uid),
                                      groups: groupNames([status.gid] + status.groups), verifiedByPidFD: true)
        identity.apply(held)
        return identity
    }
}
