#if canImport(Glibc)
import Glibc
#endif
import LocationPolicy
import LocationPosix

/// What the daemon reads of one process holding a client's socket (docs/SECURITY.md "Who a client is"): its
/// user ids, the program it runs, its systemd unit, and whether that program was loaded cleanly.
struct HolderFacts: Equatable, Sendable {
    var pid: Int32
    /// Real, effective, saved and filesystem uids (/proc/PID/status `Uid:`).
    var uids: [UInt32]
    /// Effective gid and supplementary groups (/proc/PID/status `Gid:`, `Groups:`).
    var gid: UInt32
    var groups: [UInt32]
    /// What /proc/PID/exe names (display only).
    var program: String?
    /// `program` when it names the very file the process runs (`ClientIdentity.verifiedExecutable`).
    var executable: String?
    /// The unit from /proc/PID/cgroup (`ClientIdentity.unit(ofCgroup:)`): `navit.service`, or
    /// `user@1000.service/navit.service` for a unit of the user's own manager.
    var unit: String?
    /// True when the cgroup is below `/system.slice/`, which only root's service manager populates.
    var inSystemSlice: Bool
    /// True when its cgroup is known and not below `/user.slice/`: it runs outside every login session
    /// (`ClientIdentity.outsideLoginSessions`). Only root's service manager places processes outside the
    /// user slice, and a user's delegated subtree lies inside it, so a user cannot move a process out.
    var outsideLoginSessions = false
    /// Why its load is not clean (`ProcessLoad.taint`); nil when clean.
    var taint: String?

    /// Reads process `pid`; nil when it is gone.
    static func read(_ pid: Int32) -> HolderFacts? {
        guard let status = PeerProcess.status(of: pid) else { return nil }
        let program: String? = {
            guard case .success(let path) = FileDescriptorOps.readLink("/proc/\(pid)/exe"), !path.isEmpty else { return nil }
            return path
        }()
        let cgroup = ClientIdentity.cgroupPath(pid: pid)
        var taint = status.tracer != 0 ? "traced by pid \(status.tracer)" : nil
        if taint == nil { taint = ProcessLoad.taint(pid: pid) }
        return HolderFacts(pid: pid, uids: status.uids, gid: status.gid, groups: status.groups, program: program,
                           executable: ClientIdentity.verifiedExecutable(pid: pid),
                           unit: cgroup.flatMap { ClientIdentity.unit(ofCgroup: $0) },
                           inSystemSlice: cgroup?.hasPrefix("/system.slice/") ?? false,
                           outsideLoginSessions: cgroup.map { !($0 == "/user.slice" || $0.hasPrefix("/user.slice/")) } ?? false,
                           taint: taint)
    }

    /// Whether `uid` is among its user ids: a process of that user (a daemon that dropped privileges keeps
    /// the socket it made as root, and is still found by either).
    func isOfUser(_ uid: UInt32) -> Bool { uids.contains(uid) }
}

/// The holders' facts read once per pass (an identification batch, a re-check): 1000 connections of one
/// process read that process once.
struct HolderCache {
    private var facts: [Int32: HolderFacts?] = [:]

    init() {}

    /// Whether a holder could not be read because the daemon was out of file descriptors then (it holds the
    /// pinning pidfd while it reads): nothing about the client can be concluded from its absence.
    private(set) var outOfDescriptors = false

    /// The facts of `pid`, read on first use; nil when it is gone (or could not be read: `outOfDescriptors`).
    mutating func facts(_ pid: Int32) -> HolderFacts? {
        if let known = facts[pid] { return known }
        let read = HolderFacts.read(pid)
        if read == nil, IdentificationBatch.outOfDescriptors() { outOfDescriptors = true }
        facts[pid] = read
        return read
    }
}
