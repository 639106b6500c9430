#if canImport(Glibc)
import Glibc
#endif
import LocationPolicy
import LocationPosix

/// Why a process's `/.flatpak-info` was or was not taken for its app id (`ClientIdentity.flatpakCheck`).
enum FlatpakCheck: Equatable, Sendable {
    /// Flatpak app `id` (`org.gnome.Maps`).
    case app(String)
    /// /proc/PID/root could not be opened: the process is gone, or we may not trace it.
    case noRoot(Errno)
    /// Its root directory is ours: Flatpak always starts an app in a root of its own.
    case sameRootAsDaemon
    /// It shares our mount or pid namespace: Flatpak always gives an app new ones.
    case sharedNamespace
    /// No `/.flatpak-info` (or a symbolic link there): not a Flatpak app.
    case noFile
    /// `/.flatpak-info` is not a regular file, or longer than 64 KiB.
    case notAPlainFile
    /// `/.flatpak-info` is on a writable mount: Flatpak's is a read-only bind mount.
    case writableMount
    /// The process may gain privileges or make system calls unfiltered (/proc/PID/status `NoNewPrivs` not 1
    /// or `Seccomp` not 2): every Flatpak app runs under no_new_privs and flatpak's seccomp filter, the filter
    /// that keeps it from making the namespaces it would need to rewrite its own `/.flatpak-info`.
    case notFiltered
    /// The file could not be read, or names no valid app (`flatpakApp(fromFlatpakInfo:)`).
    case invalid
}

extension ClientIdentity {
    /// The sandboxed app the peer of Unix socket `socket` (process `pid`) is, as its sandbox records it:
    /// `snap:NAME` when the kernel's label for the peer (SO_PEERSEC, as it was at connect) is an enforcing
    /// snap profile (`snapApp(fromAppArmorLabel:)`), `flatpak:ID` when its `/.flatpak-info` passes
    /// `flatpakCheck(pid:)`; nil otherwise. Every other process of the peer's user that holds the other
    /// end of the socket must be the same app, or there is none (as `soleProgram` does for executables:
    /// an unsandboxed process could otherwise read and write through a sandboxed app's connection).
    ///
    /// What this vouches for, and what it cannot (docs/SECURITY.md "Who a client is"): that the process
    /// runs confined as that app, so that an app cannot pass for another or for an unconfined program. It
    /// does not keep the same *user's* unconfined programs out: from unconfined, AppArmor lets a process
    /// change into any profile (aa-exec(1), aa_change_profile(2)), and a user can build a sandbox like
    /// Flatpak's (bwrap is unprivileged; `flatpak run --command=sh ID` runs a shell as app ID).
    ///
    /// The caller pins `pid` with a pidfd before and checks it still runs after (`ofPeer`).
    static func sandboxAppID(pid: Int32, socket: Int32) -> String? {
        guard let id = sandboxAppID(ofProcess: pid, label: PeerProcess.securityLabel(ofPeer: socket)) else { return nil }
        guard let credentials = try? PeerCredentials(socket: socket),
              let peer = PeerProcess.unixPeerInode(of: socket),
              let holders = PeerProcess.processes(holdingSocket: peer, uid: credentials.uid) else { return nil }
        for holder in holders where holder != pid {
            guard sandboxAppID(ofProcess: holder, label: PeerProcess.securityLabel(ofProcess: holder)) == id else { return nil }
        }
        return id
    }

    /// `snap:NAME` for an enforcing snap `label`, else `flatpak:ID` when process `pid` passes
    /// `flatpakCheck(pid:)`, else nil.
    static func sandboxAppID(ofProcess pid: Int32, label: String?) -> String? {
        if let label, let snap = snapApp(fromAppArmorLabel: label) { return "snap:" + snap }
        if case .app(let id) = flatpakCheck(pid: pid) { return "flatpak:" + id }
        return nil
    }

    /// Reads the Flatpak app id of process `pid` as xdg-desktop-portal does (xdp-app-info-flatpak.c,
    /// `open_flatpak_info`), with more checks than it makes, because the portal trusts the user's own
    /// unsandboxed programs and this daemon serves other users too:
    ///
    /// 1. `/proc/PID/root` is opened as a directory and `.flatpak-info` beneath it with `openat(2)`,
    ///    `O_NOFOLLOW` and `O_NONBLOCK` (the portal's way: the file the *process* sees, through its mounts,
    ///    not a path in ours; no symbolic link, no FIFO to hang on). It must be a regular file (fstat) of at
    ///    most 64 KiB, read from that descriptor.
    /// 2. Its root must not be ours (a process that only bind-mounts a file at `/.flatpak-info` in a mount
    ///    namespace of its own, `unshare -Urm`, keeps our root), and its mount and pid namespaces must not
    ///    be ours: bwrap always pivots an app into a new root in new mount and pid namespaces.
    /// 3. The file must be on a read-only mount (fstatvfs ST_RDONLY): flatpak binds it read-only
    ///    (`--ro-bind-data`), and the app's seccomp filter keeps it from remounting it.
    /// 4. The process must run with no_new_privs and a seccomp filter (/proc/PID/status `NoNewPrivs: 1`,
    ///    `Seccomp: 2`), as every Flatpak app does: that filter forbids the user namespaces and mount calls
    ///    an app would need to put another `/.flatpak-info` in its own view (flatpak#5921 lists what keeps
    ///    an app from changing or hiding its file: no user namespaces, no mount calls).
    /// 5. The content must name a valid app with an instance id and no `[Runtime]`
    ///    (`flatpakApp(fromFlatpakInfo:)`, as the portal requires `instance-id`).
    ///
    /// All of these are properties a process of the same user could give a sandbox it builds itself with
    /// bwrap: they stop the cheap forgeries (and other users, who cannot enter this user's namespaces), not a
    /// determined program of the same user (see `sandboxAppID(pid:socket:)`).
    static func flatpakCheck(pid: Int32) -> FlatpakCheck {
        let root: OwnedFileDescriptor
        switch PeerProcess.openRoot(of: pid) {
        case .success(let fd): root = fd
        case .failure(let e): return .noRoot(e)
        }
        guard case .success(let rootStatus) = PeerProcess.status(of: root.rawValue) else { return .noRoot(.noSuchProcess) }
        if let ours = daemonRoot, ours.device == rootStatus.device, ours.inode == rootStatus.inode { return .sameRootAsDaemon }
        let me = getpid()
        for kind in ["mnt", "pid"] {
            guard let theirs = PeerProcess.namespace(kind, of: pid), let mine = PeerProcess.namespace(kind, of: me), theirs != mine else {
                return .sharedNamespace
            }
        }
        let file: OwnedFileDescriptor
        switch PeerProcess.open(".flatpak-info", beneath: root) {
        case .success(let fd): file = fd
        case .failure: return .noFile
        }
        guard case .success(let status) = PeerProcess.status(of: file.rawValue), status.isRegularFile,
              status.sizeBytes <= Self.flatpakInfoLimit else { return .notAPlainFile }
        guard status.onReadOnlyMount else { return .writableMount }
        guard case .success(let processStatus) = FileDescriptorOps.readFile(atPath: "/proc/\(pid)/status", maximumBytes: 1 << 16),
              isFiltered(status: processStatus) else { return .notFiltered }
        guard case .success(let bytes) = FileDescriptorOps.readToEnd(file, maximumBytes: Self.flatpakInfoLimit),
              let id = flatpakApp(fromFlatpakInfo: bytes) else { return .invalid }
        return .app(id)
    }

    /// The longest `/.flatpak-info` read: flatpak's are a few hundred bytes to a few KiB.
    static let flatpakInfoLimit = 64 << 10

    /// Device and inode of the daemon's own root directory.
    static let daemonRoot: (device: UInt64, inode: UInt64)? = {
        guard case .success(let id) = FileDescriptorOps.identity(ofFileAt: "/") else { return nil }
        return id
    }()

    /// Whether /proc/PID/status text `bytes` says `NoNewPrivs: 1` and `Seccomp: 2` (filter mode;
    /// proc(5)).
    static func isFiltered(status bytes: [UInt8]) -> Bool {
        var noNewPrivs = false, filtered = false
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(whereSeparator: { $0 == 9 || $0 == 32 }).map { String(decoding: $0, as: UTF8.self) }
            guard fields.count == 2 else { continue }
            if fields[0] == "NoNewPrivs:" { noNewPrivs = fields[1] == "1" }
            if fields[0] == "Seccomp:" { filtered = fields[1] == "2" }
        }
        return noNewPrivs && filtered
    }
}
