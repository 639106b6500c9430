#if canImport(Glibc)
import Glibc
#endif

extension FileDescriptorOps {
    /// Replaces the file at `path` with `bytes` so that a crash leaves either the old file or the new one,
    /// whole: a temporary file beside it (mode 0600, `PATH.tmp-PID`, opened with O_NOFOLLOW so that a link
    /// planted under that name is not written through) → write → fsync → rename → fsync of the directory.
    /// Every call goes through the syscall funnel (EINTR retried; tests can delay or fail any of them with
    /// `SyscallFaults`). Used by the grant store, the fudger's secret, the sharing switch and the uplinks'
    /// spools.
    /// - Throws: the errno of the first call that failed; the temporary file is removed then. A failed
    ///   fsync of the directory is not reported: the data is on disk, only the rename may not be yet.
    public static func writeAtomically(path: String, bytes: [UInt8]) throws(Errno) {
        let temporary = path + ".tmp-\(getpid())"
        var file = try OwnedFileDescriptor(opening: temporary, flags: O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600)
        let written = writeAll(file.rawValue, bytes).flatMap { fsync(file.rawValue) }
        file.close()
        if case .failure(let e) = written {
            unlink(temporary)
            throw e
        }
        if case .failure(let e) = rename(temporary, to: path) {
            unlink(temporary)
            throw e
        }
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if let directoryFile = try? OwnedFileDescriptor(opening: directory.isEmpty ? "." : directory, flags: O_RDONLY | O_DIRECTORY) {
            _ = fsync(directoryFile.rawValue)
        }
    }
}
