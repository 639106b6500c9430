#if canImport(Glibc)
import Glibc
#endif

/// The reports an uplink holds until its broker acknowledges them, kept in a file in the state
/// directory so that they survive a restart or a power loss: one report per line (each is one JSON
/// object without line ends), oldest first.
///
/// Written whole and atomically, as the grant store is: a temporary file beside it, `fsync`, `rename`
/// over the old one, `fsync` of the directory. A file that cannot be read is left alone and reported.
public struct UplinkSpool: Sendable {
    /// The spool file, e.g. `/var/lib/locationd/uplink-fleet.spool`.
    public let path: String

    /// - Parameters:
    ///   - directory: the state directory (absolute).
    ///   - name: the uplink's name; only letters, digits, `-`, `_` and `.` are kept in the file name.
    public init(directory: String, name: String) {
        let safe = String(name.unicodeScalars.map { s -> Character in
            (s.properties.isAlphabetic && s.isASCII) || ("0"..."9").contains(s) || s == "-" || s == "_" || s == "." ? Character(s) : "_"
        })
        path = directory + "/uplink-" + safe + ".spool"
    }

    /// The reports held, oldest first; empty when there is no file.
    /// - Throws: the errno when the file exists but cannot be read.
    public func load() throws(UplinkSpoolError) -> [[UInt8]] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return [] }
            throw UplinkSpoolError(path: path, operation: "open", errno: errno)
        }
        defer { close(fd) }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw UplinkSpoolError(path: path, operation: "read", errno: errno)
            }
            if n == 0 { break }
            data.append(contentsOf: buffer[0..<n])
        }
        // A line cut short (never written whole: the rename makes that impossible, but a file edited by
        // hand may end so) is dropped with the rest of the damage: only whole objects are sent.
        return data.split(separator: 10).filter { $0.first == UInt8(ascii: "{") && $0.last == UInt8(ascii: "}") }.map(Array.init)
    }

    /// Replaces the file with `reports` (oldest first); removes it when there are none.
    /// - Throws: the failing call and its errno.
    public func save(_ reports: [[UInt8]]) throws(UplinkSpoolError) {
        if reports.isEmpty {
            if unlink(path) != 0 && errno != ENOENT { throw UplinkSpoolError(path: path, operation: "unlink", errno: errno) }
            try syncDirectory()
            return
        }
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw UplinkSpoolError(path: temporary, operation: "open", errno: errno) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(reports.reduce(0) { $0 + $1.count + 1 })
        for report in reports {
            bytes.append(contentsOf: report)
            bytes.append(10)
        }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { raw in raw.baseAddress.map { write(fd, $0 + written, raw.count - written) } ?? 0 }
            if n < 0 {
                if errno == EINTR { continue }
                let e = errno
                close(fd)
                throw UplinkSpoolError(path: temporary, operation: "write", errno: e)
            }
            written += n
        }
        if fsync(fd) != 0 {
            let e = errno
            close(fd)
            throw UplinkSpoolError(path: temporary, operation: "fsync", errno: e)
        }
        close(fd)
        guard rename(temporary, path) == 0 else { throw UplinkSpoolError(path: path, operation: "rename", errno: errno) }
        try syncDirectory()
    }

    private func syncDirectory() throws(UplinkSpoolError) {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let fd = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw UplinkSpoolError(path: directory, operation: "open", errno: errno) }
        defer { close(fd) }
        if fsync(fd) != 0 { throw UplinkSpoolError(path: directory, operation: "fsync", errno: errno) }
    }
}

/// A spool file could not be read or written: the path, the call and its errno.
public struct UplinkSpoolError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var operation: String
    public var errno: Int32

    public var description: String {
        "\(operation) \(path): \(String(cString: strerror(errno)))"
    }
}
