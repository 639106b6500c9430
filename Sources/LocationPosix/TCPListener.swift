#if canImport(Glibc)
import Glibc
#endif
import CPosixShims

/// An IPv4 or IPv6 address and TCP port, as written in the config (`127.0.0.1:2947`, `[::1]:2947`).
public struct TCPAddress: Hashable, Sendable, CustomStringConvertible {
    /// `AF_INET` or `AF_INET6`.
    public let family: Int32
    /// The address in network byte order: 4 bytes (IPv4) or 16 (IPv6).
    public let bytes: [UInt8]
    /// The port, host byte order.
    public let port: UInt16

    public init(family: Int32, bytes: [UInt8], port: UInt16) {
        self.family = family
        self.bytes = bytes
        self.port = port
    }

    /// Parses `A.B.C.D:PORT` or `[V6]:PORT` (inet_pton(3)); nil when it is neither.
    public init?(parsing text: String) {
        let host: Substring, portText: Substring
        let v6: Bool
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
            v6 = true
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            v6 = false
        }
        guard let port = UInt16(portText), !host.isEmpty else { return nil }
        var buffer = [UInt8](repeating: 0, count: 16)
        let family = v6 ? AF_INET6 : AF_INET
        guard inet_pton(family, String(host), &buffer) == 1 else { return nil }
        self.init(family: family, bytes: Array(buffer.prefix(v6 ? 16 : 4)), port: port)
    }

    /// Whether the address is on loopback: 127.0.0.0/8, ::1, or an IPv4-mapped 127.x (`::ffff:127.0.0.1`).
    public var isLoopback: Bool {
        if family == AF_INET { return bytes.first == 127 }
        if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
        return bytes.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff][...] && bytes[12] == 127
    }

    /// `127.0.0.1:2947`, `[::1]:2947` (inet_ntop(3)).
    public var description: String {
        var text = [CChar](repeating: 0, count: 64)
        var raw = bytes
        _ = inet_ntop(family, &raw, &text, socklen_t(text.count))
        let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The address as a `sockaddr_storage`, and its length.
    func socketAddress() -> (sockaddr_storage, socklen_t) {
        var storage = sockaddr_storage()
        if family == AF_INET {
            withUnsafeMutableBytes(of: &storage) { raw in
                raw.withMemoryRebound(to: sockaddr_in.self) { sin in
                    sin[0].sin_family = sa_family_t(AF_INET)
                    sin[0].sin_port = port.bigEndian
                    withUnsafeMutableBytes(of: &sin[0].sin_addr) { $0.copyBytes(from: bytes) }
                }
            }
            return (storage, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
        withUnsafeMutableBytes(of: &storage) { raw in
            raw.withMemoryRebound(to: sockaddr_in6.self) { sin in
                sin[0].sin6_family = sa_family_t(AF_INET6)
                sin[0].sin6_port = port.bigEndian
                withUnsafeMutableBytes(of: &sin[0].sin6_addr) { $0.copyBytes(from: bytes) }
            }
        }
        return (storage, socklen_t(MemoryLayout<sockaddr_in6>.size))
    }

    /// Reads a `sockaddr_in`/`sockaddr_in6` the kernel filled in; nil for another family.
    init?(_ storage: sockaddr_storage) {
        var storage = storage
        let family = Int32(storage.ss_family)
        let parsed: (bytes: [UInt8], port: UInt16)? = withUnsafeBytes(of: &storage) { raw in
            if family == AF_INET {
                let sin = raw.load(as: sockaddr_in.self)
                return (withUnsafeBytes(of: sin.sin_addr) { Array($0) }, UInt16(bigEndian: sin.sin_port))
            }
            if family == AF_INET6 {
                let sin = raw.load(as: sockaddr_in6.self)
                return (withUnsafeBytes(of: sin.sin6_addr) { Array($0) }, UInt16(bigEndian: sin.sin6_port))
            }
            return nil
        }
        guard let parsed else { return nil }
        self.init(family: family, bytes: parsed.bytes, port: parsed.port)
    }

    /// getsockname(2) (`peer` false) or getpeername(2) (`peer` true) of a TCP socket.
    public static func of(socket fd: Int32, peer: Bool) -> Result<TCPAddress, Errno> {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = funnel(.socketAddress) {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length) }
            }
        }
        return result.flatMap { _ in TCPAddress(storage).map { .success($0) } ?? .failure(.invalidArgument) }
    }
}

/// A listening TCP socket (gpsd's port), non-blocking, close-on-exec.
public struct TCPListener: Sendable {
    public let fileDescriptor: Int32
    /// The address it listens on (with the port the kernel chose when it was asked for port 0).
    public let address: TCPAddress?

    /// Wraps a descriptor that is already listening (systemd's LISTEN_FDS).
    public init(inherited fd: Int32) {
        fileDescriptor = fd
        _ = FileDescriptorOps.setNonBlocking(fd)
        address = try? TCPAddress.of(socket: fd, peer: false).get()
    }

    /// socket(2), SO_REUSEADDR, IPV6_V6ONLY (IPv6: so that `[::1]` and `127.0.0.1` can both be bound), bind(2),
    /// listen(2).
    /// - Throws: `Errno` of the call that failed (`addressInUse` when another program holds the port).
    public init(address: TCPAddress, backlog: Int32 = 128) throws(Errno) {
        var socketFile = OwnedFileDescriptor(taking: try funnel(.socket) {
            socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }.get())
        let fd = socketFile.rawValue
        var on: Int32 = 1
        let size = socklen_t(MemoryLayout<Int32>.size)
        _ = try funnel(.setsockopt) { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, size) }.get()
        if address.family == AF_INET6 {
            _ = try funnel(.setsockopt) { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, size) }.get()
        }
        var (storage, length) = address.socketAddress()
        _ = try funnel(.bind) {
            withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        }.get()
        _ = try funnel(.listen) { listen(fd, backlog) }.get()
        self.address = try TCPAddress.of(socket: fd, peer: false).get()
        fileDescriptor = socketFile.release()
    }

    /// accept4(2) with SOCK_NONBLOCK|SOCK_CLOEXEC; `.wouldBlock` when no connection is waiting.
    public func accept() -> Result<Int32, Errno> {
        funnel(.accept) { locationd_accept(fileDescriptor) }
    }

    public func close() {
        FileDescriptorOps.close(fileDescriptor)
    }
}
