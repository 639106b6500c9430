#if canImport(Glibc)
import Glibc
#endif

/// The file names of the shared objects a process maps (`/proc/PID/maps`), e.g. "libc.so.6": what a daemon
/// loaded, for the tests of libraries loaded only when configured.
public func mappedLibraries(_ pid: pid_t) -> Set<String> {
    // Read to the end: a /proc file says it has 0 bytes.
    var bytes: [UInt8] = []
    let fd = open("/proc/\(pid)/maps", O_RDONLY)
    var chunk = [UInt8](repeating: 0, count: 65536)
    while fd >= 0 {
        let n = read(fd, &chunk, chunk.count)
        if n <= 0 { break }
        bytes += chunk[..<n]
    }
    if fd >= 0 { close(fd) }
    return Set(String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        .compactMap { $0.split(separator: "/").last.map(String.init) }.filter { $0.contains(".so") })
}
