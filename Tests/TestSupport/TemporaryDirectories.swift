#if canImport(Glibc)
import Glibc
#endif
import LocationPosix
import Synchronization

/// The temporary directories the tests make, removed with everything in them when the test process
/// exits (a test that fails half-way leaves nothing behind either). Tests make hundreds a run: config
/// files, grant stores, sockets, audit logs.
public enum TemporaryDirectories {
    private static let made = Mutex<[String]>([])
    private static let removalAtExit: Void = { atexit { TemporaryDirectories.removeAll() } }()

    /// mkdtemp(3) on `template` (a path ending in "XXXXXX", rewritten in place), the directory made
    /// registered for removal at exit.
    /// - Returns: `template`'s storage, now naming the directory; nil when mkdtemp failed (see `errno`).
    public static func mkdtemp(_ template: UnsafeMutablePointer<CChar>) -> UnsafeMutablePointer<CChar>? {
        _ = removalAtExit
        guard let path = Glibc.mkdtemp(template) else { return nil }
        let directory = String(cString: path)
        made.withLock { $0.append(directory) }
        return path
    }

    /// A new directory `/tmp/PREFIX-XXXXXX` with `mode` (0755 by default: other uids' clients reach its sockets),
    /// removed at exit.
    /// - Throws: `Errno` when mkdtemp(3) fails.
    public static func make(_ prefix: String, mode: mode_t = 0o755) throws -> String {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        guard let path = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { throw Errno.current }
        let directory = String(cString: path)
        chmod(directory, mode)
        return directory
    }

    /// Removes every directory registered; what cannot be removed stays.
    static func removeAll() {
        let all = made.withLock { made -> [String] in
            defer { made.removeAll() }
            return made
        }
        for directory in all { removeTree(directory) }
    }

    /// Removes `path` and what is below it, depth first, never following a link nor entering another file
    /// system mounted below (a container's overlay, a tmpfs).
    private static func removeTree(_ path: String, device: UInt64? = nil) {
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        if let device, UInt64(status.st_dev) != device { return }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            unlink(path)
            return
        }
        if case .success(let names) = FileDescriptorOps.directoryEntries(atPath: path) {
            for name in names where name != "." && name != ".." {
                removeTree(path + "/" + name, device: UInt64(status.st_dev))
            }
        }
        rmdir(path)
    }
}
