#if canImport(Glibc)
import Glibc
#endif
import LocationPolicy
import LocationPosix

/// A connection accepted and waiting to be identified (`PendingIdentifications`).
struct PendingConnection: Sendable {
    let fd: Int32
    /// The peer's uid as accept saw it (SO_PEERCRED; on TCP the socket table's owner); nil when unknown.
    let uid: UInt32?
    let front: Front
    /// TCP: the owner uid and inode of the peer's socket (`ClientIdentity.tcpPeerOwner`), or why not; nil on
    /// a Unix socket.
    let owner: Result<(uid: UInt32, inode: UInt64), PeerRefusal>?
}

/// What became of a waiting connection.
enum IdentificationOutcome: Sendable {
    /// Identified; `peerInode` is the inode of its other end, whose holders are checked again while it lives.
    case identified(PendingConnection, ClientIdentity, peerInode: UInt64?)
    /// It closed while it waited: nobody to serve.
    case left(PendingConnection)
    /// Not identified: refused, with the reason.
    case refused(PendingConnection, PeerRefusal)
}

/// Identifying connections a batch at a time (on the identity queue): one pass over every process's
/// descriptors finds the holders of the whole batch (`PeerProcess.scanHolders`), and each holder's facts are
/// read once (`HolderCache`), so N connections of one process cost one read of that process, not N.
enum IdentificationBatch {
    /// The most connections identified in one pass: a batch holds up the first of its connections by the
    /// time the others take (about 0.1 ms each), so it is kept well under a second.
    static let limit = 512
    /// The idle time owed after a pass that took `duration` before the next may start: nine times as long, so
    /// that passes take at most a tenth of the identity queue's time however connections arrive, but at most
    /// 20 ms, so that a client connecting again and again is greeted at 30 a second or more even where a
    /// pass is slow (a loaded machine, a debug build). After a pass that found the daemon out of descriptors,
    /// 200 ms, as accept backs off: each connection it then accepts would buy a pass only to be refused.
    static func gap(after duration: Duration, outOfDescriptors: Bool) -> Duration {
        outOfDescriptors ? .milliseconds(200) : min(duration * 9, .milliseconds(20))
    }

    /// Identifies `batch`, in its order.
    static func identify(_ batch: [PendingConnection]) -> [IdentificationOutcome] {
        var inodes: [UInt64?] = []
        var wanted = Set<UInt64>()
        for connection in batch {
            var inode: UInt64?
            switch connection.owner {
            case .some(.success(let owner)): inode = owner.inode
            case .some(.failure): inode = nil
            case .none:
                // Its requests are checked against the process that connected (`ServerState.readable`).
                _ = PeerProcess.passCredentials(connection.fd)
                inode = PeerProcess.unixPeerInode(of: connection.fd)
            }
            inodes.append(inode)
            if let inode { wanted.insert(inode) }
        }
        if outOfDescriptors(count: descriptorsPerPass) { return batch.map { .refused($0, .daemonOutOfDescriptors) } }
        let scan = PeerProcess.scanHolders(of: wanted)
        var cache = HolderCache()
        return zip(batch, inodes).map { connection, inode in
            let outcome = identify(connection, inode: inode, scan: scan, cache: &cache)
            // Nothing found because the daemon could open nothing in /proc: its own want, not the client's.
            if case .refused(_, .noProcess) = outcome, outOfDescriptors() { return .refused(connection, .daemonOutOfDescriptors) }
            return outcome
        }
    }

    /// The most descriptors a pass holds at once: the pidfd pinning a holder, the /proc file being read, the
    /// executable being compared; and one to spare.
    static let descriptorsPerPass = 4

    /// Whether this process cannot open `count` more files now (EMFILE, ENFILE). Asked before a pass: at the
    /// open-file limit a pass could still list /proc (one descriptor at a time) and only then fail to read a
    /// holder, 30–50 ms of a sanitized build's CPU for each connection refused (CI: 0.8 s of CPU in 2 s).
    static func outOfDescriptors(count: Int = 1) -> Bool {
        var opened: [Int32] = []
        defer { opened.forEach(FileDescriptorOps.close) }
        for _ in 0..<count {
            switch FileDescriptorOps.open("/dev/null", flags: O_RDONLY | O_CLOEXEC) {
            case .success(let fd): opened.append(fd)
            case .failure(let e): return e.rawValue == EMFILE || e.rawValue == ENFILE
            }
        }
        return false
    }

    /// Identifies one connection of a batch, with the batch's pass over /proc.
    private static func identify(_ connection: PendingConnection, inode: UInt64?, scan: SocketHolderScan,
                                 cache: inout HolderCache) -> IdentificationOutcome {
        switch connection.owner {
            case .some(.failure(let refusal)):
                return .refused(connection, refusal)
            case .some(.success(let owner)):
                do throws(PeerRefusal) {
                    let identity = try ClientIdentity.ofTCPPeer(owner: owner, scan: scan, cache: &cache)
                    return .identified(connection, identity, peerInode: owner.inode)
                } catch {
                    return .refused(connection, error)
                }
            case .none:
                // One that connected and closed while it waited for its turn is not worth a look.
                if PeerProcess.hasLeft(connection.fd) { return .left(connection) }
                do throws(PeerRefusal) {
                    let identity = try ClientIdentity.ofPeer(socket: connection.fd, peerInode: inode, scan: scan, cache: &cache)
                    return .identified(connection, identity, peerInode: inode)
                } catch {
                    return .refused(connection, error)
                }
        }
    }
}

/// A live connection whose holders are looked at again (`HolderRecheck`).
struct HolderCheck: Sendable {
    let id: Int
    let uid: UInt32
    let peerInode: UInt64
}

/// Looking again at who holds live connections (docs/SECURITY.md "Who a client is"): a descriptor sent with
/// SCM_RIGHTS is held by nobody while in flight, and the connection's identity was read then; once a process
/// of another program or user picks it up, the holders change, and what the old identity was granted ends.
enum HolderRecheck {
    /// What the holders of each of `checks` make of it now. A connection no readable process holds is left
    /// out: it is closing, or its only holder is one the daemon cannot read (another user's, when the daemon
    /// runs without CAP_SYS_PTRACE), as at its first look; when a process takes it up, the next pass sees it.
    static func run(_ checks: [HolderCheck]) -> [HolderCheckResult] {
        // Out of descriptors, the daemon could read no holder: nothing can be concluded this time.
        if IdentificationBatch.outOfDescriptors(count: IdentificationBatch.descriptorsPerPass) { return [] }
        let scan = PeerProcess.scanHolders(of: Set(checks.map(\.peerInode)))
        var cache = HolderCache()
        return checks.compactMap { check in
            let pids = scan.holders(of: check.peerInode)
            guard !pids.isEmpty else { return nil }
            let holders = HeldProgram.facts(pids, adding: nil, cache: &cache)
            // Out of descriptors, the daemon could not read them: nothing can be concluded this time.
            guard !cache.outOfDescriptors else { return nil }
            let held = Result { () throws(PeerRefusal) in
                try HeldProgram.resolve(uid: check.uid, holders: holders, unreadUsers: scan.unreadUsers)
            }
            return HolderCheckResult(id: check.id, held: held)
        }
    }
}

/// What a re-check found of one connection.
struct HolderCheckResult: Sendable {
    let id: Int
    let held: Result<HeldProgram, PeerRefusal>
}
