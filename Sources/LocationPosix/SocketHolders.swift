#if canImport(Glibc)
import Glibc
#endif

/// Which processes hold which sockets, found in one pass over /proc: the holders of every connection waiting to
/// be identified (or re-checked) at once, so that identifying N connections reads each process's descriptors
/// once, not N times (1000 connections of one process took ~30 s of a core when each read them all).
public struct SocketHolderScan: Sendable {
    /// Per socket inode asked for: the processes holding it, by increasing pid (processes whose descriptors
    /// could not be read at all — another user's, without CAP_SYS_PTRACE — are not among them).
    public var holders: [UInt64: [Int32]] = [:]
    /// Users (real uid) whose processes hold more descriptors than one pass reads of a user
    /// (`PeerProcess.descriptorScanLimit`): whether they hold any of the sockets cannot be told.
    public var unreadUsers: Set<UInt32> = []
    /// Descriptors read in all.
    public var descriptorsRead = 0
    /// Where each holder holds each socket: the descriptor number (`"pid inode"` → its name in /proc/PID/fd).
    var descriptors: [String: String] = [:]

    public init() {}

    /// The holders of `inode`, none when no readable process holds it.
    public func holders(of inode: UInt64) -> [Int32] { holders[inode] ?? [] }

    /// Whether process `pid` still holds socket `inode` at the descriptor where this pass found it: one look
    /// (a readlink, or one fdinfo file), where reading all its descriptors again cost a client of 1000
    /// connections half a million reads. A process pinned after the pass that passes this is the holder the
    /// pass saw, not another that took its pid.
    public func stillHolds(_ pid: Int32, _ inode: UInt64) -> Bool {
        guard let name = descriptors["\(pid) \(inode)"] else { return false }
        if case .success(let link) = FileDescriptorOps.readLink("/proc/\(pid)/fd/\(name)") {
            return PeerProcess.socketInode(link) == inode
        }
        guard let sockfs = PeerProcess.socketMountID, let entry = PeerProcess.descriptorInfo("/proc/\(pid)/fdinfo/\(name)") else { return false }
        return entry.mountID == sockfs && entry.inode == inode
    }
}

extension PeerProcess {
    /// Reads every process's descriptors once (`/proc/PID/fd`, else `/proc/PID/fdinfo`; see
    /// `process(_:holdsSocket:)`) and notes which of them hold the sockets `inodes`.
    ///
    /// Every user's processes are read, not only the socket owner's: a descriptor passed with SCM_RIGHTS to a
    /// process of another user is held there. Each user's processes are read up to `descriptorsPerUser`
    /// descriptors; the rest of that user's processes are skipped and the user is named in `unreadUsers`, so
    /// one user holding hundreds of thousands of descriptors costs each pass a bounded time per user.
    public static func scanHolders(of inodes: Set<UInt64>, descriptorsPerUser: Int = descriptorScanLimit) -> SocketHolderScan {
        var scan = SocketHolderScan()
        guard !inodes.isEmpty, case .success(let names) = FileDescriptorOps.directoryEntries(atPath: "/proc") else { return scan }
        var budgets: [UInt32: Int] = [:]
        let own = getpid()
        for name in names {
            guard let pid = Int32(name), pid > 0, pid != own else { continue }
            // A process gone since the listing, or a kernel thread (no Uid line is missing; no descriptors).
            guard let uid = userIDs(of: pid)?.first else { continue }
            guard !scan.unreadUsers.contains(uid) else { continue }
            var budget = budgets[uid] ?? descriptorsPerUser
            let before = budget
            let held = sockets(heldBy: pid, among: inodes, budget: &budget)
            budgets[uid] = budget
            scan.descriptorsRead += before - budget
            guard let held else {
                scan.unreadUsers.insert(uid)
                continue
            }
            for (inode, name) in held {
                scan.holders[inode, default: []].append(pid)
                scan.descriptors["\(pid) \(inode)"] = name
            }
        }
        for inode in scan.holders.keys { scan.holders[inode]?.sort() }
        return scan
    }

    /// The sockets among `inodes` that process `pid` has descriptors open on, each with the descriptor's name,
    /// reading at most `budget` descriptors (what it reads is taken off); nil when it has more than are left.
    /// Empty when its descriptors cannot be read.
    static func sockets(heldBy pid: Int32, among inodes: Set<UInt64>, budget: inout Int) -> [(inode: UInt64, descriptor: String)]? {
        var found: [(inode: UInt64, descriptor: String)] = []
        if case .success(let names) = FileDescriptorOps.directoryEntries(atPath: "/proc/\(pid)/fd") {
            guard names.count <= budget else { return nil }
            budget -= names.count
            for name in names {
                guard case .success(let link) = FileDescriptorOps.readLink("/proc/\(pid)/fd/\(name)"),
                      let inode = socketInode(link), inodes.contains(inode) else { continue }
                found.append((inode, name))
            }
            return found
        }
        guard let sockfs = socketMountID,
              case .success(let names) = FileDescriptorOps.directoryEntries(atPath: "/proc/\(pid)/fdinfo") else { return found }
        guard names.count <= budget else { return nil }
        budget -= names.count
        for name in names {
            guard let entry = descriptorInfo("/proc/\(pid)/fdinfo/\(name)"), entry.mountID == sockfs,
                  inodes.contains(entry.inode) else { continue }
            found.append((entry.inode, name))
        }
        return found
    }

    /// The inode of a `/proc/PID/fd` link that reads `socket:[INODE]`; nil for any other link.
    static func socketInode(_ link: String) -> UInt64? {
        let prefix = "socket:["
        guard link.hasPrefix(prefix), link.hasSuffix("]") else { return nil }
        return UInt64(link.dropFirst(prefix.count).dropLast())
    }
}
