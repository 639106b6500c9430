#if canImport(Glibc)
import Glibc
#endif
import CPosixShims
import LocationPolicy
import LocationPosix

/// Reading a client's identity from the kernel only: SO_PEERCRED, /proc/PID/exe (checked against a
/// pidfd where the kernel offers SO_PEERPIDFD, so a reused pid cannot pass for another program) and the
/// systemd unit from /proc/PID/cgroup.
extension ClientIdentity {
    /// Reads the identity of the peer of a connected Unix socket.
    public static func ofPeer(socket fd: Int32) throws(Errno) -> ClientIdentity {
        let credentials = try PeerCredentials(socket: fd)
        let pidfd = peerPidFD(fd)
        defer { if let pidfd { close(pidfd) } }
        var executable = readLink("/proc/\(credentials.pid)/exe")
        let unit = systemdUnit(pid: credentials.pid)
        var verified = false
        if let pidfd {
            // The process the pidfd pins must still be alive after we read /proc: else the pid may have
            // been reused between accept() and the read.
            if pidfdAlive(pidfd) { verified = true } else { executable = nil }
        }
        let user = userName(credentials.uid)
        return ClientIdentity(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid, user: user,
                              groups: groupNames(user: user, gid: credentials.gid), executable: executable, unit: unit,
                              verifiedByPidFD: verified)
    }

    static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        var s = buffer.withUnsafeBufferPointer { String(decoding: UnsafeRawBufferPointer($0).prefix(n), as: UTF8.self) }
        if s.hasSuffix(" (deleted)") { s.removeLast(" (deleted)".count) }
        return s
    }

    /// The unit from /proc/PID/cgroup's unified line, e.g. `0::/system.slice/navit.service` → `navit.service`;
    /// for user sessions the innermost `.service` or `.scope` (e.g. `app-foo.scope`).
    static func systemdUnit(pid: Int32) -> String? {
        guard let f = fopen("/proc/\(pid)/cgroup", "r") else { return nil }
        defer { fclose(f) }
        var line = [CChar](repeating: 0, count: 4096)
        while fgets(&line, Int32(line.count), f) != nil {
            let text = String(decoding: line.prefix(while: { $0 != 0 && $0 != 10 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard text.hasPrefix("0::") else { continue }
            let components = text.dropFirst(3).split(separator: "/")
            if let unit = components.last(where: { $0.hasSuffix(".service") || $0.hasSuffix(".scope") }) {
                return String(unit)
            }
        }
        return nil
    }

    static func pidfdAlive(_ pidfd: Int32) -> Bool {
        // pidfd_send_signal(pidfd, 0, NULL, 0): succeeds while the process exists.
        locationd_pidfd_alive(pidfd) == 0
    }

    static func userName(_ uid: UInt32) -> String? {
        var pwd = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &pwd, &buffer, buffer.count, &result) == 0, result != nil, let name = pwd.pw_name else { return nil }
        return String(cString: name)
    }

    /// The uid of the user `name` (getpwnam_r(3)); nil when there is no such user.
    static func userID(_ name: String) -> UInt32? {
        var pwd = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwnam_r(name, &pwd, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return pwd.pw_uid
    }

    static func groupNames(user: String?, gid: UInt32) -> [String] {
        var names: [String] = []
        var ids = [gid_t](repeating: 0, count: 256)
        var count: Int32 = Int32(ids.count)
        if let user, getgrouplist(user, gid, &ids, &count) >= 0 {
            ids = Array(ids.prefix(Int(count)))
        } else {
            ids = [gid]
        }
        for id in ids {
            var grp = group()
            var result: UnsafeMutablePointer<group>?
            var buffer = [CChar](repeating: 0, count: 4096)
            if getgrgid_r(id, &grp, &buffer, buffer.count, &result) == 0, result != nil, let name = grp.gr_name {
                names.append(String(cString: name))
            }
        }
        return names
    }
}
