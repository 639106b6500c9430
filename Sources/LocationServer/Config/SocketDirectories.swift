#if canImport(Glibc)
import Glibc
#endif

extension DaemonConfiguration {
    /// Refuses a socket whose directory, or a directory above it, another user may write to without the
    /// sticky bit: that user could rename the socket away and put their own (or a link) in its place, and
    /// clients would talk to them (issue 32; sshd's StrictModes refuses such a home for the same reason).
    /// A sticky directory (1777, as /tmp) is safe: there only the owner may rename or remove a file.
    /// Directories that do not exist yet are skipped (the daemon makes them, 0755).
    /// - Parameter configurationFile: the main file, named when `socket` keeps its default.
    /// - Throws: `ConfigFileError` naming the file and line of `socket` or `nmea-socket`.
    public func checkSocketDirectories(configurationFile: String) throws(ConfigFileError) {
        var sockets: [(path: String, entry: ConfigEntry?, key: String)] = [(socketPath, socketEntry, "socket")]
        if let nmeaSocket { sockets.append((nmeaSocket, nmeaSocketEntry, "nmea-socket")) }
        for socket in sockets {
            guard let (directory, mode) = Self.unsafeDirectory(above: socket.path) else { continue }
            throw ConfigFileError(file: socket.entry?.file ?? configurationFile, line: socket.entry?.line, key: socket.key,
                                  message: "\(directory) is writable by group or others without the sticky bit (mode \(String(mode, radix: 8))): "
                                      + "another user could replace the socket there; make it 0755 (or sticky, 1777)")
        }
    }

    /// The first directory above `path` (its parent, then the parent's parent, up to /) that exists and that
    /// group or others may write to without the sticky bit, with its mode (permission bits).
    /// - Parameter path: an absolute path.
    /// - Returns: nil when every existing directory above `path` is safe.
    static func unsafeDirectory(above path: String) -> (directory: String, mode: mode_t)? {
        var directory = Substring(path)
        while let slash = directory.lastIndex(of: "/") {
            directory = directory[..<slash]
            let name = directory.isEmpty ? "/" : String(directory)
            var st = stat()
            guard stat(name, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else { continue }
            if st.st_mode & 0o022 != 0 && st.st_mode & 0o1000 == 0 { return (name, st.st_mode & 0o7777) }
        }
        return nil
    }
}
