#if canImport(Glibc)
import Glibc
#endif
import LocationPosix
@testable import LocationServer
import Testing

/// The grant store's atomic write goes through the syscall funnel, so a failing disk can be simulated.
@Suite("Grant store writes through the syscall funnel", .serialized)
struct GrantStoreFunnelTests {
    @Test("a failing write, fsync or rename (EIO): the write throws it, the old file stays whole, no temporary file is left",
          arguments: [Syscall.fsync, .write, .rename])
    func failedWriteKeepsOldFile(call: Syscall) throws {
        let directory = GrantStoreTests.directory()
        let path = directory + "/grants.json"
        defer {
            for name in GrantStoreTests.files(in: directory) { FileDescriptorOps.unlink(directory + "/" + name) }
            rmdir(directory)
        }
        try FileDescriptorOps.writeAtomically(path: path, bytes: Array("old\n".utf8))
        SyscallFaults.inject(call, .fail(.ioError))
        defer { SyscallFaults.removeAll() }
        #expect(throws: Errno.ioError) { try FileDescriptorOps.writeAtomically(path: path, bytes: Array("new\n".utf8)) }
        SyscallFaults.removeAll()
        #expect(try FileDescriptorOps.readFile(atPath: path).get() == Array("old\n".utf8))
        #expect(GrantStoreTests.files(in: directory) == ["grants.json"])
    }
}
