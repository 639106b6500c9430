#if canImport(Glibc)
import Glibc
#endif
import LocationPosix

/// A test's end of a Unix stream socket carrying newline-delimited JSON (the location socket): connects,
/// writes lines, reads lines with timeouts, and keeps every byte received (for "not one byte of
/// location" checks). Blocking; one thread at a time. The end-to-end suites build their clients on it.
open class LineSocket: @unchecked Sendable {
    public let fd: Int32
    private var buffer: [UInt8] = []
    /// Every byte received so far.
    public private(set) var received: [UInt8] = []

    /// Connects to `path`; `receiveBuffer` sets SO_RCVBUF (bytes) first.
    /// - Throws: `Errno` when the connection fails.
    public init(_ path: String, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = try unixAddress(path)
        let r = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard r == 0 else { let e = Errno.current; close(fd); throw e }
    }

    deinit { close(fd) }

    /// Writes `line` and a newline. A server that closed the connection makes it fail quietly
    /// (`MSG_NOSIGNAL`): a SIGPIPE would end the whole test run.
    public func send(_ line: String) {
        sendRaw(Array((line + "\n").utf8))
    }

    /// Writes `bytes` as they are (see `send`).
    public func sendRaw(_ bytes: [UInt8]) {
        _ = UnixSocketOps.sendAll(fd, bytes)
    }

    /// The next line (without its newline), waiting up to `timeout` seconds; nil on timeout or when the
    /// server closed.
    public func line(timeout: Double = 5) -> String? {
        let end = Self.now() + timeout
        while true {
            if let nl = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<nl], as: UTF8.self)
                buffer.removeSubrange(...nl)
                return line
            }
            let left = end - Self.now()
            if left <= 0 { return nil }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, Int32(left * 1000) + 1) <= 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { return nil }
            buffer.append(contentsOf: chunk[..<n])
            received.append(contentsOf: chunk[..<n])
        }
    }

    /// True once the server has closed the connection (reads drained) within `timeout` seconds.
    public func closedByServer(timeout: Double) -> Bool {
        let end = Self.now() + timeout
        while Self.now() < end {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { return true }
            received.append(contentsOf: chunk[..<n])
        }
        return false
    }

    /// CLOCK_MONOTONIC, seconds.
    static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
