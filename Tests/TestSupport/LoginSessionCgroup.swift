#if canImport(Glibc)
import Glibc
#endif

/// Puts the test process (and what it spawns after) in a login session's cgroup for a while, as pam_systemd
/// puts a login's processes: `/user.slice/user-UID.slice/session-NAME.scope` in the cgroup v2 hierarchy. The
/// daemon takes a client outside `/user.slice/` for one outside every login session, in use while it runs
/// under a When-In-Use grant made for such a client (docs/PROTOCOL.md "When In Use and Always"); tests of When In Use following logind's word (an `LD_PRELOAD` of
/// `sd_uid_get_state`) run their clients inside one. A real cgroup move of a real process, made by root.
public final class LoginSessionCgroup {
    private let mount: String
    private let original: String
    private let scope: String

    /// Moves this process into a session scope of `uid`.
    /// - Throws: `LoginSessionCgroup.Unavailable` when no writable cgroup v2 hierarchy is mounted (not root, or
    ///   no cgroup2 mount).
    public init(uid: UInt32 = getuid(), name: String = "locationd-test") throws {
        guard let mount = Self.cgroup2Mount(), let original = Self.ownCgroup() else { throw Unavailable() }
        self.mount = mount
        self.original = original
        scope = "/user.slice/user-\(uid).slice/session-\(name).scope"
        var path = mount
        for component in scope.split(separator: "/") {
            path += "/" + component
            if mkdir(path, 0o755) != 0 && errno != EEXIST { throw Unavailable() }
        }
        guard Self.write(String(getpid()), to: mount + scope + "/cgroup.procs") else { throw Unavailable() }
    }

    /// Moves the process back to where it was, and removes the scope.
    public func leave() {
        _ = Self.write(String(getpid()), to: mount + (original == "/" ? "" : original) + "/cgroup.procs")
        rmdir(mount + scope)
    }

    deinit { leave() }

    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String { "no writable cgroup v2 hierarchy (root and a cgroup2 mount are needed)" }
    }

    /// Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` beside v1).
    static func cgroup2Mount() -> String? {
        guard let text = read("/proc/self/mountinfo") else { return nil }
        for line in text.split(separator: "\n") {
            // proc(5) mountinfo: ID, parent, major:minor, root, mount point, options, optional fields, "-",
            // the file system type, the source, the options.
            let fields = line.split(separator: " ")
            guard let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count, fields[dash + 1] == "cgroup2", fields.count > 4
            else { continue }
            return String(fields[4])
        }
        return nil
    }

    /// This process's cgroup v2 path (`0::PATH` in /proc/self/cgroup).
    public static func ownCgroup() -> String? {
        read("/proc/self/cgroup")?.split(separator: "\n").first { $0.hasPrefix("0::") }.map { String($0.dropFirst(3)) }
    }

    static func read(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n <= 0 { break }
            bytes += buffer[..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func write(_ text: String, to path: String) -> Bool {
        let fd = open(path, O_WRONLY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == text.utf8.count
    }
}
