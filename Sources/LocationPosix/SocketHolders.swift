#if canImport(Glibc)
import Glibc
#endif
import CPosixShims

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

    /// The first holder of `inode` that holds it in its own descriptor table (not only a thread's or an io_uring's),
    /// which `stillHolds` can check after pinning; nil when none does.
    public func tableHolder(of inode: UInt64) -> Int32? {
        holders(of: inode).first { descriptors["\($0) \(inode)"] != nil }
    }

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
            var held: [(inode: UInt64, descriptor: String)]? = []
            // Every descriptor table of the process: its threads share the leader's unless one called
            // unshare(CLONE_FILES), and then a socket it holds is in its own table alone (found by a helper
            // attacking the daemon: a hidden thread read as `/usr/bin/sleep`).
            for table in descriptorTables(of: pid) {
                guard let found = sockets(heldIn: table, among: inodes, budget: &budget) else { held = nil; break }
                held? += found.map { (inode: $0.inode, descriptor: table == "/proc/\(pid)" ? $0.descriptor : "") }
            }
            budgets[uid] = budget
            scan.descriptorsRead += before - budget
            guard let held else {
                scan.unreadUsers.insert(uid)
                continue
            }
            for (inode, name) in held {
                if scan.holders[inode]?.last != pid { scan.holders[inode, default: []].append(pid) }
                if !name.isEmpty { scan.descriptors["\(pid) \(inode)"] = name }
            }
        }
        for inode in scan.holders.keys { scan.holders[inode]?.sort() }
        return scan
    }

    /// The /proc directories of process `pid`'s distinct descriptor tables: `/proc/PID` (the leader's, which its
    /// threads share), and `/proc/PID/task/TID` for each thread with a table of its own (kcmp(2) KCMP_FILES).
    /// Where the kernel will not compare (a process even root may not inspect so, such as a sandbox's init),
    /// a thread whose descriptor numbers differ from the leader's: its 40 threads' 300 descriptors each read
    /// one by one cost every pass 12,000 reads.
    static func descriptorTables(of pid: Int32) -> [String] {
        var tables = ["/proc/\(pid)"]
        guard case .success(let tasks) = FileDescriptorOps.directoryEntries(atPath: "/proc/\(pid)/task"), tasks.count > 1 else { return tables }
        var leader: Set<String>?
        for task in tasks {
            guard let tid = Int32(task), tid != pid else { continue }
            switch locationd_same_file_table(pid, tid) {
            case 0: continue
            case -1:
                if leader == nil, case .success(let names) = FileDescriptorOps.directoryEntries(atPath: "/proc/\(pid)/fd") { leader = Set(names) }
                guard case .success(let names) = FileDescriptorOps.directoryEntries(atPath: "/proc/\(pid)/task/\(tid)/fd"),
                      Set(names) != leader else { continue }
                tables.append("/proc/\(pid)/task/\(tid)")
            default:
                tables.append("/proc/\(pid)/task/\(tid)")
            }
        }
        return tables
    }

    /// The sockets among `inodes` that the descriptor table at `table` (`/proc/PID` or `/proc/PID/task/TID`) has
    /// descriptors open on, each with the descriptor's name, reading at most `budget` descriptors (what it reads
    /// is taken off); nil when it has more than are left. Empty when its descriptors cannot be read. A socket
    /// registered with an io_uring instance of the table (`IORING_REGISTER_FILES`) is held there even once its
    /// descriptor is closed: the instance's fdinfo lists it.
    static func sockets(heldIn table: String, among inodes: Set<UInt64>, budget: inout Int) -> [(inode: UInt64, descriptor: String)]? {
        var found: [(inode: UInt64, descriptor: String)] = []
        if case .success(let names) = FileDescriptorOps.directoryEntries(atPath: "\(table)/fd") {
            guard names.count <= budget else { return nil }
            budget -= names.count
            for name in names {
                guard case .success(let link) = FileDescriptorOps.readLink("\(table)/fd/\(name)") else { continue }
                if let inode = socketInode(link) {
                    if inodes.contains(inode) { found.append((inode, name)) }
                } else if link == "anon_inode:[io_uring]" {
                    found += ringSockets("\(table)/fdinfo/\(name)", among: inodes).map { ($0, "") }
                }
            }
            return found
        }
        guard let sockfs = socketMountID,
              case .success(let names) = FileDescriptorOps.directoryEntries(atPath: "\(table)/fdinfo") else { return found }
        guard names.count <= budget else { return nil }
        budget -= names.count
        for name in names {
            let path = "\(table)/fdinfo/\(name)"
            guard let entry = descriptorInfo(path) else { continue }
            if entry.mountID == sockfs {
                if inodes.contains(entry.inode) { found.append((entry.inode, name)) }
            } else {
                // An io_uring instance's fdinfo names its registered files; other files' do not hold sockets.
                found += ringSockets(path, among: inodes).map { ($0, "") }
            }
        }
        return found
    }

    /// The sockets among `inodes` an io_uring instance's /proc fdinfo lists among its registered files
    /// (`UserFiles:` entries, each `N: socket:[INODE]`); none for any other file's fdinfo.
    static func ringSockets(_ fdinfo: String, among inodes: Set<UInt64>) -> [UInt64] {
        guard case .success(let bytes) = FileDescriptorOps.readFile(atPath: fdinfo, maximumBytes: 1 << 20) else { return [] }
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.contains("UserFiles:") else { return [] }
        var found: [UInt64] = []
        for token in text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }) {
            if let inode = socketInode(String(token)), inodes.contains(inode) { found.append(inode) }
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
