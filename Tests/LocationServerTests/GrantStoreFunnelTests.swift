#if canImport(Glibc)
import Glibc
#endif
import LocationPosix
@testable import LocationServer
import Testing

/// The grant store's atomic write goes through the syscall funnel, so a failing disk can be simulated.
@Suite("Grant store writes through the syscall funnel", .serialized)
struct GrantStoreFunnelTests {
    static func directory(_ name: String) -> String {
        let path = "/tmp/locationd-grantfunnel-\(getpid())-\(name)"
        mkdir(path, 0o700)
        return path
    }

    static func entries(of directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    @Test("a failing write, fsync or rename (EIO): the write throws it, the old file stays whole, no temporary file is left",
          arguments: [Syscall.fsync, .write, .rename])
    func failedWriteKeepsOldFile(call: Syscall) throws {
        let directory = Self.directory("fail-\(call.rawValue)")
        let path = directory + "/grants.json"
        defer {
            for name in Self.entries(of: directory) { FileDescriptorOps.unlink(directory + "/" + name) }
            rmdir(directory)
        }
        try GrantStore.writeAtomically(path: path, bytes: Array("old\n".utf8))
        SyscallFaults.inject(call, .fail(.ioError))
        defer { SyscallFaults.removeAll() }
        #expect(throws: Errno.ioError) { try GrantStore.writeAtomically(path: path, bytes: Array("new\n".utf8)) }
        SyscallFaults.removeAll()
        #expect(try FileDescriptorOps.readFile(atPath: path).get() == Array("old\n".utf8))
        #expect(Self.entries(of: directory) == ["grants.json"])
    }
}
