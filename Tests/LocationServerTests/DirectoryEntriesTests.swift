#if canImport(Glibc)
import Glibc
#endif
import LocationPosix
import Testing
import TestSupport

/// `FileDescriptorOps.directoryEntries` / `entryName`: identifying a client lists `/proc/PID/fd` of its
/// user's processes. Found under AddressSanitizer (the identity-queue flood test, 19 500 descriptors a
/// process): each name was read as the whole 256-byte `d_name`, past the end of readdir's buffer when
/// the buffer's last record was shorter.
@Suite("Directory entries", .serialized)
struct DirectoryEntriesTests {
    @Test("every name of a listing that fills readdir's buffer several times: 3000 descriptors in /proc/self/fd")
    func fullBuffers() throws {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let saved = limit
        limit.rlim_cur = max(limit.rlim_cur, min(limit.rlim_max, 8192))
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        var restored = saved
        defer { setrlimit(Int32(RLIMIT_NOFILE.rawValue), &restored) }
        try #require(limit.rlim_cur >= 4000, "RLIMIT_NOFILE \(limit.rlim_cur)")
        let null = open("/dev/null", O_RDONLY)
        try #require(null >= 0)
        let copies = (0..<3000).map { _ in dup(null) }
        defer { for fd in copies + [null] where fd >= 0 { close(fd) } }
        try #require(copies.allSatisfy { $0 >= 0 })
        // Names of 1 to 4 digits: records of 24 bytes, so that a 32 KiB buffer ends with less than one.
        let names = Set(try FileDescriptorOps.directoryEntries(atPath: "/proc/self/fd").get())
        for fd in copies + [null] { #expect(names.contains(String(fd)), "\(fd) missing") }
        #expect(!names.contains(".") && !names.contains(".."))
    }

    @Test("names of every length up to NAME_MAX, read to their end and no further")
    func longNames() throws {
        var template = Array("/tmp/locationd-dirent-XXXXXX".utf8CString)
        let directory = try #require(TemporaryDirectories.mkdtemp(&template).map { String(cString: $0) })
        defer { _ = try? FileDescriptorOps.directoryEntries(atPath: directory).get().forEach { unlink(directory + "/" + $0) }; rmdir(directory) }
        let expected = Set((1...255).map { String(repeating: "n", count: $0) })
        for name in expected { close(open(directory + "/" + name, O_CREAT | O_WRONLY, 0o600)) }
        #expect(Set(try FileDescriptorOps.directoryEntries(atPath: directory).get()) == expected)
    }
}
