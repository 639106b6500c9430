#if canImport(Glibc)
import Glibc
#endif
import CPosixShims

/// Plain file-descriptor operations — the syscall funnel: each one syscall with EINTR retried and EAGAIN
/// returned as `Errno.wouldBlock` (not a failure to report); tests can inject a fault or a delay at any
/// of them (`SyscallFaults`). `close` is never retried (Linux frees the fd even when it fails).
public enum FileDescriptorOps {
    /// read(2). Returns bytes read; 0 at end of file.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        funnel(.read) { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// write(2). Returns bytes written.
    public static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Result<Int, Errno> {
        funnel(.write) { Glibc.write(fd, buffer.baseAddress, buffer.count) }
    }

    /// Writes all of `buffer`, continuing after partial writes; blocks if the fd is blocking.
    public static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Result<Void, Errno> {
        transferAll(buffer) { write(fd, $0) }
    }

    /// Hands all of `buffer` to `transfer` (a write(2) or send(2) of the funnel), again with the rest
    /// after each partial transfer, until it is all gone or `transfer` fails.
    public static func transferAll(_ buffer: UnsafeRawBufferPointer,
                                   _ transfer: (UnsafeRawBufferPointer) -> Result<Int, Errno>) -> Result<Void, Errno> {
        var offset = 0
        while offset < buffer.count {
            switch transfer(UnsafeRawBufferPointer(rebasing: buffer[offset...])) {
            case .success(let n): offset += n
            case .failure(let e): return .failure(e)
            }
        }
        return .success(())
    }

    /// open(2) with `O_CLOEXEC` added. Returns the new descriptor (the caller closes it; prefer
    /// `OwnedFileDescriptor(opening:flags:mode:)`).
    /// - Parameters: `mode`: permissions for a file that `O_CREAT` makes.
    public static func open(_ path: String, flags: Int32, mode: mode_t = 0o600) -> Result<Int32, Errno> {
        funnel(.open) { Glibc.open(path, flags | O_CLOEXEC, mode) }
    }

    /// fsync(2): the file's data and metadata reach the disk.
    public static func fsync(_ fd: Int32) -> Result<Void, Errno> {
        funnel(.fsync) { Glibc.fsync(fd) }.map { _ in () }
    }

    /// rename(2): atomically replaces `destination` with `source`.
    public static func rename(_ source: String, to destination: String) -> Result<Void, Errno> {
        funnel(.rename) { Glibc.rename(source, destination) }.map { _ in () }
    }

    /// unlink(2).
    @discardableResult
    public static func unlink(_ path: String) -> Result<Void, Errno> {
        funnel(.unlink) { Glibc.unlink(path) }.map { _ in () }
    }

    /// lseek(2) to `offset` bytes from the start. Returns the new offset.
    public static func seek(_ fd: Int32, toOffset offset: Int) -> Result<Int, Errno> {
        funnel(.lseek) { Int(Glibc.lseek(fd, off_t(offset), SEEK_SET)) }
    }

    /// ftruncate(2): cuts (or extends) the file to `size` bytes.
    /// - Parameters:
    ///   - fd: an open, writable file.
    ///   - size: the new size, bytes.
    public static func truncate(_ fd: Int32, toSize size: Int) -> Result<Void, Errno> {
        funnel(.ftruncate) { Glibc.ftruncate(fd, off_t(size)) }.map { _ in () }
    }

    /// fstat(2): the file's size in bytes.
    public static func size(_ fd: Int32) -> Result<Int, Errno> {
        var st = Glibc.stat()
        return funnel(.stat) { fstat(fd, &st) }.map { _ in Int(st.st_size) }
    }

    /// stat(2), following links: the device and inode of the file at `path` (what identifies a file).
    public static func identity(ofFileAt path: String) -> Result<(device: UInt64, inode: UInt64), Errno> {
        var device: UInt64 = 0, inode: UInt64 = 0
        return funnel(.stat) { locationd_file_identity(path, &device, &inode) }.map { _ in (device, inode) }
    }

    /// stat(2): the owner uid of the file at `path`.
    public static func owner(ofFileAt path: String) -> Result<UInt32, Errno> {
        var uid: UInt32 = 0
        return funnel(.stat) { locationd_file_owner(path, &uid) }.map { _ in uid }
    }

    /// stat(2), following links: the device, inode, owner uid and mode (type and permission bits) of the file at `path`.
    public static func status(ofFileAt path: String) -> Result<(device: UInt64, inode: UInt64, owner: UInt32, mode: UInt32), Errno> {
        var device: UInt64 = 0, inode: UInt64 = 0, owner: UInt32 = 0, mode: UInt32 = 0
        return funnel(.stat) { locationd_path_status(path, &device, &inode, &owner, &mode) }.map { _ in (device, inode, owner, mode) }
    }

    /// mkdir(2).
    public static func makeDirectory(_ path: String, mode: mode_t) -> Result<Void, Errno> {
        funnel(.mkdir) { mkdir(path, mode) }.map { _ in () }
    }

    /// fstat(2): the inode of an open descriptor.
    public static func inode(of fd: Int32) -> Result<UInt64, Errno> {
        var st = stat()
        return funnel(.stat) { fstat(fd, &st) }.map { _ in UInt64(st.st_ino) }
    }

    /// The names in a directory, "." and ".." left out (opendir(3)/readdir(3); the open goes through the
    /// funnel as `open`).
    public static func directoryEntries(atPath path: String) -> Result<[String], Errno> {
        if let fault = SyscallFaults.check(.open) { return .failure(fault) }
        guard let directory = opendir(path) else { return .failure(.current) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = entryName(entry)
            if name != "." && name != ".." { names.append(name) }
        }
        return .success(names)
    }

    /// The name of a directory entry readdir(3) returned. Read in place, up to its NUL: the record is only
    /// as long as its name (`d_reclen`), so the last one of readdir's buffer can end before
    /// `sizeof(struct dirent)` would — `entry.pointee.d_name` copied all 256 bytes, past the buffer
    /// (AddressSanitizer: heap-buffer-overflow, identifying a client as /proc/PID/fd was listed).
    public static func entryName(_ entry: UnsafePointer<dirent>) -> String {
        let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        return String(cString: (UnsafeRawPointer(entry) + offset).assumingMemoryBound(to: CChar.self))
    }

    /// readlink(2): where a symbolic link points (at most 4095 bytes).
    public static func readLink(_ path: String) -> Result<String, Errno> {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = buffer.count - 1
        return funnel(.readlink) { Glibc.readlink(path, &buffer, count) }.map { n in
            buffer.withUnsafeBufferPointer { String(decoding: UnsafeRawBufferPointer($0).prefix(n), as: UTF8.self) }
        }
    }

    /// realpath(3): `path` absolute, with every symbolic link resolved, as the kernel names a running
    /// program's executable (`/proc/PID/exe`); nil when it does not exist or cannot be resolved.
    public static func resolvedPath(_ path: String) -> String? {
        guard let resolved = Glibc.realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// poll(2) on one descriptor. Returns its `revents` (0 when `timeout` passed first).
    /// - Parameters: `timeoutMilliseconds`: -1 waits forever, 0 does not wait.
    public static func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) -> Result<Int16, Errno> {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        return funnel(.poll) { Glibc.poll(&entry, 1, timeoutMilliseconds) }.map { _ in entry.revents }
    }

    /// poll(2) on several descriptors; a negative `fd` in an entry is skipped (its `revents` stays 0).
    /// Returns the number of entries with events (0 when `timeout` passed first).
    /// - Parameters: `timeoutMilliseconds`: -1 waits forever, 0 does not wait.
    public static func poll(_ entries: inout [pollfd], timeoutMilliseconds: Int32) -> Result<Int, Errno> {
        let count = nfds_t(entries.count)
        return entries.withUnsafeMutableBufferPointer { buffer in
            funnel(.poll) { Glibc.poll(buffer.baseAddress, count, timeoutMilliseconds) }.map(Int.init)
        }
    }

    /// pipe2(2) with `O_CLOEXEC | O_NONBLOCK`: the read and write ends, for the caller to own
    /// (`OwnedFileDescriptor(taking:)`).
    public static func pipe() -> Result<(read: Int32, write: Int32), Errno> {
        var ends: [Int32] = [-1, -1]
        return funnel(.pipe) { locationd_pipe_cloexec_nonblock(&ends) }.map { _ in (ends[0], ends[1]) }
    }

    /// Writes all of `bytes`, retrying partial writes; blocks if the fd is blocking.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Result<Void, Errno> {
        bytes.withUnsafeBytes { writeAll(fd, $0) }
    }

    /// Reads a whole file: open(2) read-only, read(2) until end of file, close(2).
    /// - Parameters:
    ///   - path: The file.
    ///   - maximumBytes: The most to read; a longer file fails with `Errno.fileTooLarge` (a bound on
    ///     what a stray or hostile file can make us allocate).
    /// - Returns: The file's bytes, or the errno of the call that failed (`noSuchFileOrDirectory` when
    ///   there is no file, `isADirectory` for a directory).
    public static func readFile(atPath path: String, maximumBytes: Int = 64 << 20) -> Result<[UInt8], Errno> {
        let file: OwnedFileDescriptor
        do {
            file = try OwnedFileDescriptor(opening: path, flags: O_RDONLY)
        } catch {
            return .failure(error)
        }
        return readToEnd(file, maximumBytes: maximumBytes)
    }

    /// read(2) until end of file, at most `maximumBytes` (more: `Errno.fileTooLarge`).
    public static func readToEnd(_ file: borrowing OwnedFileDescriptor, maximumBytes: Int) -> Result<[UInt8], Errno> {
        let fd = file.rawValue
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let result = chunk.withUnsafeMutableBytes { read(fd, into: $0) }
            switch result {
            case .success(0): return .success(bytes)
            case .success(let n):
                guard bytes.count + n <= maximumBytes else { return .failure(.fileTooLarge) }
                bytes.append(contentsOf: chunk[0..<n])
            case .failure(let e): return .failure(e)
            }
        }
    }

    /// close(2), not retried.
    public static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Sets or clears O_NONBLOCK.
    public static func setNonBlocking(_ fd: Int32, _ on: Bool = true) -> Result<Void, Errno> {
        funnel(.fcntl) { fcntl(fd, F_GETFL) }.flatMap { flags in
            let wanted = on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
            return funnel(.fcntl) { fcntl(fd, F_SETFL, wanted) }.map { _ in () }
        }
    }

    /// Sets `FD_CLOEXEC` (fcntl(2) `F_SETFD`): the descriptor is not inherited by programs this
    /// process starts. For descriptors a library opened without it (libgps's socket).
    @discardableResult
    public static func setCloseOnExec(_ fd: Int32) -> Result<Void, Errno> {
        funnel(.fcntl) { fcntl(fd, F_SETFD, FD_CLOEXEC) }.map { _ in () }
    }

    /// Number of open file descriptors of this process (entries of /proc/self/fd), for leak checks.
    public static func openCount() -> Int {
        guard let dir = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(dir) }
        var count = 0
        while let entry = readdir(dir) {
            if !entryName(entry).hasPrefix(".") { count += 1 }
        }
        return count - 1  // the directory stream's own descriptor
    }
}

/// Wall-clock time (CLOCK_REALTIME) as seconds since the Unix epoch.
public func wallClockSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
