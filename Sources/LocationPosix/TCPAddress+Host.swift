#if canImport(Glibc)
import Glibc
#endif

extension TCPAddress {
    /// Whether the address is this host's: loopback, or an address of one of its interfaces (getifaddrs(3)),
    /// an IPv4-mapped IPv6 address (`::ffff:A.B.C.D`) judged by its IPv4 part. True when the interfaces
    /// cannot be listed: whoever asks refuses what it cannot tell.
    public var isOnThisHost: Bool {
        if isLoopback { return true }
        let mapped: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
        let wanted = family == AF_INET6 && Array(bytes.prefix(12)) == mapped ? Array(bytes.suffix(4)) : bytes
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return true }
        defer { freeifaddrs(first) }
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            cursor = entry.pointee.ifa_next
            guard let address = entry.pointee.ifa_addr else { continue }
            var storage = sockaddr_storage()
            let length = address.pointee.sa_family == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size
            guard address.pointee.sa_family == AF_INET || address.pointee.sa_family == AF_INET6 else { continue }
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: length)) }
            if let own = TCPAddress(storage), own.bytes == wanted { return true }
        }
        return false
    }
}
