#if canImport(Glibc)
import Glibc
#endif

/// Plain file-descriptor operations, each one syscall with EINTR retried and EAGAIN returned as
/// `Errno.wouldBlock` (not a failure to report). `close` is never retried (Linux frees the fd even
/// when it fails).
public enum FileDescriptorOps {
    /// read(2). Returns bytes read; 0 at end of file.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        retryingOnInterrupt { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// write(2). Returns bytes written.
    public static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Result<Int, Errno> {
        retryingOnInterrupt { Glibc.write(fd, buffer.baseAddress, buffer.count) }
    }

    /// Writes all of `bytes`, retrying partial writes; blocks if the fd is blocking.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Result<Void, Errno> {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                switch write(fd, UnsafeRawBufferPointer(rebasing: raw[offset...])) {
                case .success(let n): offset += n
                case .failure(let e): return .failure(e)
                }
            }
            return .success(())
        }
    }

    /// Reads a whole file: open(2) read-only, read(2) until end of file, close(2).
    /// - Parameters:
    ///   - path: The file.
    ///   - maximumBytes: The most to read; a longer file fails with `Errno.fileTooLarge` (a bound on
    ///     what a stray or hostile file can make us allocate).
    /// - Returns: The file's bytes, or the errno of the call that failed (`noSuchFileOrDirectory` when
    ///   there is no file, `isADirectory` for a directory).
    public static func readFile(atPath path: String, maximumBytes: Int = 64 << 20) -> Result<[UInt8], Errno> {
        let fd: Int32
        switch retryingOnInterrupt({ Glibc.open(path, O_RDONLY | O_CLOEXEC) }) {
        case .success(let opened): fd = opened
        case .failure(let e): return .failure(e)
        }
        defer { close(fd) }
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
        let flags = fcntl(fd, F_GETFL)
        if flags < 0 { return .failure(.current) }
        let wanted = on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if fcntl(fd, F_SETFL, wanted) < 0 { return .failure(.current) }
        return .success(())
    }

    /// Number of open file descriptors of this process (entries of /proc/self/fd), for leak checks.
    public static func openCount() -> Int {
        guard let dir = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(dir) }
        var count = 0
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in raw.first ?? 0 }
            if name != UInt8(ascii: ".") { count += 1 }
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
