#if canImport(Glibc)
import Glibc
#endif
import CPosixShims
import LocationPolicy
import LocationPosix

/// Reading a client's identity from the kernel only: SO_PEERCRED and SO_PEERGROUPS (the process's own
/// credentials when it connected — not /etc/group, so a process that dropped its groups has dropped
/// them), /proc/PID/exe (checked against a pidfd, so a reused pid cannot pass for another program, and
/// against the file at that path, so a path seen in another mount namespace cannot either) and the
/// systemd unit from /proc/PID/cgroup.
extension ClientIdentity {
    /// Reads the identity of the peer of a connected Unix socket, looking for its holders in a pass of its own
    /// (`PeerProcess.scanHolders`); the front identifies in batches with `ofPeer(socket:scan:cache:)`.
    /// - Parameter kernelPidFD: false to take the pidfd_open path even where SO_PEERPIDFD works (tests).
    /// - Throws: `PeerRefusal` (see `ofPeer(socket:scan:cache:kernelPidFD:)`).
    public static func ofPeer(socket fd: Int32, kernelPidFD: Bool = true) throws(PeerRefusal) -> ClientIdentity {
        let inode = PeerProcess.unixPeerInode(of: fd)
        let scan = PeerProcess.scanHolders(of: inode.map { [$0] } ?? [])
        var cache = HolderCache()
        return try ofPeer(socket: fd, peerInode: inode, scan: scan, cache: &cache, kernelPidFD: kernelPidFD)
    }

    /// Reads the identity of the peer of a connected Unix socket: the uid, gid and groups the kernel recorded
    /// at connect(2) (SO_PEERCRED, SO_PEERGROUPS), and what every process holding the other end — of any user,
    /// found in `scan` by the socket's peer inode (sock_diag), the connecting process included — says of the
    /// program (`HeldProgram.resolve`).
    ///
    /// The process is pinned by a pidfd before /proc is read and checked to be alive after: the kernel's
    /// SO_PEERPIDFD where it has one (Linux 6.5+), elsewhere pidfd_open(2) on the peer's pid. The native front
    /// then serves only requests written by that pid.
    /// - Parameters:
    ///   - peerInode: the inode of the other end (`PeerProcess.unixPeerInode`); nil when the kernel did not say,
    ///     and the client is known by its user alone.
    ///   - cache: holders' facts already read in this pass.
    /// - Throws: `PeerRefusal.noCredentials` when the socket has no peer credentials; `.exited` when the process
    ///   that connected cannot be pinned and checked (it exited, or its pid now names another process);
    ///   `.otherUsers` when processes of another user hold the other end.
    static func ofPeer(socket fd: Int32, peerInode: UInt64?, scan: SocketHolderScan, cache: inout HolderCache,
                       kernelPidFD: Bool = true) throws(PeerRefusal) -> ClientIdentity {
        let credentials: PeerCredentials
        do { credentials = try PeerCredentials(socket: fd) } catch { throw .noCredentials(error) }
        let pidfd: OwnedFileDescriptor
        do { pidfd = try pin(peerOf: fd, pid: credentials.pid, kernelPidFD: kernelPidFD) } catch {
            throw error == .noSuchProcess ? .exited : .noCredentials(error)
        }
        let holders = HeldProgram.facts(peerInode.map { scan.holders(of: $0) } ?? [], adding: credentials.pid, cache: &cache)
        if holders.isEmpty && cache.outOfDescriptors { throw .daemonOutOfDescriptors }
        var held = try HeldProgram.resolve(uid: credentials.uid, holders: holders, unreadUsers: scan.unreadUsers)
        if peerInode == nil {
            // Who else holds it cannot be told: known by its user alone.
            held = HeldProgram(executable: nil, unit: nil, userUnit: nil, interpreter: nil, program: held.program,
                               strength: .unverified(reason: "the kernel does not say which socket is at the other end"))
        }
        // A sandboxed app's id, where the kernel and the sandbox vouch for it (SandboxIdentity).
        let appID = sandboxAppID(pid: credentials.pid, socket: fd)
        // The process the pidfd pins must still be alive after we read /proc: else the pid may have been
        // reused between the pin and the read.
        guard PeerProcess.isRunning(pidfd) else { throw .exited }
        let user = UserDatabase.name(ofUser: credentials.uid)
        let gids = [credentials.gid] + (PeerProcess.groups(ofPeer: fd) ?? [])
        var identity = ClientIdentity(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid, user: user,
                                      groups: groupNames(gids), verifiedByPidFD: true, appID: appID)
        identity.apply(held)
        if appID != nil, identity.strength != IdentityStrength.systemUnit { identity.strength = IdentityStrength.sandboxedApp }
        return identity
    }

    /// The daemon's own identity, as the kernel tells it (its uid and groups, /proc/self/exe, its systemd
    /// unit): whom the policy sees in an uplink (`Policy.uplinkState`), so that a `[client]` rule naming
    /// the daemon's executable, user, group or unit applies to the uplinks.
    public static func ofDaemon() -> ClientIdentity {
        let pid = getpid()
        var groups = [UInt32](repeating: 0, count: 256)
        let count = getgroups(Int32(groups.count), &groups)
        let gids = [getgid()] + groups.prefix(max(0, Int(count))).filter { $0 != getgid() }
        var identity = ClientIdentity(pid: pid, uid: getuid(), gid: getgid(), user: UserDatabase.name(ofUser: getuid()),
                                      groups: groupNames(gids), verifiedByPidFD: false)
        if let facts = HolderFacts.read(pid),
           let held = try? HeldProgram.resolve(uid: getuid(), holders: [facts], unreadUsers: []) {
            identity.apply(held)
        }
        return identity
    }

    /// A pidfd for the peer of `socket`: the kernel's (SO_PEERPIDFD), or pidfd_open(`pid`). Either may pin
    /// a process that is no longer the one behind the socket — it exec'd another program, or exited and
    /// its pid went to another process — so the native front also checks that every request comes from
    /// this pid (SCM_CREDENTIALS, `NativeFront`).
    static func pin(peerOf socket: Int32, pid: Int32, kernelPidFD: Bool) throws(Errno) -> OwnedFileDescriptor {
        if kernelPidFD, let fd = peerPidFD(socket) { return OwnedFileDescriptor(taking: fd) }
        switch PeerProcess.pin(pid) {
        case .success(let pidfd): return pidfd
        case .failure(let e) where e.rawValue == ESRCH: throw .noSuchProcess
        case .failure(let e): throw e  // out of descriptors, say: not the client's doing
        }
    }

    /// The path of the program `pid` runs, if that path names the very file it runs in this daemon's
    /// mount namespace (same device and inode): /proc/PID/exe reads as the path in the *client's*
    /// namespace, which a client can populate with a bind mount (an unprivileged user namespace is
    /// enough), so the path alone proves nothing. Nil when it cannot be read (another user's process
    /// without CAP_SYS_PTRACE), when the file was deleted or replaced since the program started, or when
    /// the path leads to another file here.
    static func verifiedExecutable(pid: Int32) -> String? {
        let link = "/proc/\(pid)/exe"
        guard case .success(let path) = FileDescriptorOps.readLink(link), !path.isEmpty else { return nil }
        // stat(2) on the link follows it to the file the process runs, whatever namespace it is in.
        guard case .success(let running) = FileDescriptorOps.identity(ofFileAt: link),
              case .success(let named) = FileDescriptorOps.identity(ofFileAt: path),
              running == named else { return nil }
        return path
    }

    /// The unit from /proc/PID/cgroup's unified line (`0::PATH`); see `unit(ofCgroup:)`.
    static func systemdUnit(pid: Int32) -> String? {
        cgroupPath(pid: pid).flatMap { unit(ofCgroup: $0) }
    }

    /// The cgroup v2 path of `pid` (/proc/PID/cgroup's unified line, `0::PATH`); nil when unreadable.
    static func cgroupPath(pid: Int32) -> Substring? {
        let cgroup = FileDescriptorOps.readFile(atPath: "/proc/\(pid)/cgroup", maximumBytes: 1 << 16)
        guard case .success(let bytes) = cgroup else { return nil }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("0::") {
            return line.dropFirst(3)
        }
        return nil
    }

    /// The systemd unit a cgroup path (cgroup v2, as in /proc/PID/cgroup) belongs to: the innermost
    /// `.service` or `.scope`, e.g. `/system.slice/navit.service` → `navit.service`, and
    /// `/user.slice/user-1000.slice/session-2.scope` → `session-2.scope`. A unit that a user's own
    /// service manager runs — below `user@UID.service`, whose cgroup subtree systemd delegates to that
    /// user — is named with its manager, `user@1000.service/navit.service`: the user chooses its name
    /// (`systemd-run --user --unit=navit.service`), so it must not pass for the system's unit.
    static func unit(ofCgroup path: Substring) -> String? {
        let components = path.split(separator: "/")
        let isUnit = { (c: Substring) in c.hasSuffix(".service") || c.hasSuffix(".scope") }
        guard let innermost = components.lastIndex(where: isUnit) else { return nil }
        if let manager = components.firstIndex(where: { $0.hasPrefix("user@") && $0.hasSuffix(".service") }), manager < innermost {
            return "\(components[manager])/\(components[innermost])"
        }
        return String(components[innermost])
    }

    /// The names of groups `ids` (getgrgid_r(3)), in order, without repeats; an id without a name is given as its
    /// number, as a rule's `group =` may name it (DaemonConfiguration.groupName).
    static func groupNames(_ ids: [UInt32]) -> [String] {
        var names: [String] = []
        for id in ids {
            let text = UserDatabase.name(ofGroup: id) ?? String(id)
            if !names.contains(text) { names.append(text) }
        }
        return names
    }
}
