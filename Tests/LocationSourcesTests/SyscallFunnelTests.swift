#if canImport(Glibc)
import Glibc
#endif
import LocationPosix
import Testing

/// The syscall funnel's test hook, the owning descriptor, the thread helper and the poll timeout of a
/// `Duration` (LocationPosix has no test target of its own; the receivers are its main users).
@Suite("Syscall funnel, owned descriptors, threads", .serialized)
struct SyscallFunnelTests {
    static func temporaryPath(_ name: String) -> String { "/tmp/locationd-funnel-\(getpid())-\(name)" }

    @Test("an injected failure replaces the call; removing it restores the call")
    func injectedFailure() throws {
        let path = Self.temporaryPath("fail")
        defer { FileDescriptorOps.unlink(path) }
        let file = try OwnedFileDescriptor(opening: path, flags: O_WRONLY | O_CREAT | O_TRUNC)
        SyscallFaults.inject(.fsync, .fail(.ioError))
        let failed = FileDescriptorOps.fsync(file.rawValue)
        SyscallFaults.removeAll()
        #expect(throws: Errno.ioError) { try failed.get() }
        #expect(throws: Never.self) { try FileDescriptorOps.fsync(file.rawValue).get() }
        // Only the named call is affected.
        SyscallFaults.inject(.rename, .fail(.permissionDenied))
        defer { SyscallFaults.removeAll() }
        #expect(throws: Never.self) { try FileDescriptorOps.fsync(file.rawValue).get() }
        #expect(throws: Errno.permissionDenied) { try FileDescriptorOps.rename(path, to: path + ".moved").get() }
    }

    @Test("an injected delay makes the call wait, then it runs")
    func injectedDelay() throws {
        let path = Self.temporaryPath("delay")
        defer { FileDescriptorOps.unlink(path) }
        let file = try OwnedFileDescriptor(opening: path, flags: O_WRONLY | O_CREAT | O_TRUNC)
        SyscallFaults.inject(.fsync, .delay(.milliseconds(200)))
        defer { SyscallFaults.removeAll() }
        let clock = ContinuousClock()
        var result: Result<Void, Errno> = .failure(.invalidArgument)
        let took = clock.measure { result = FileDescriptorOps.fsync(file.rawValue) }
        #expect(throws: Never.self) { try result.get() }
        #expect(took >= .milliseconds(190) && took < .seconds(2), "fsync took \(took)")
    }

    @Test("an owned descriptor is closed when its owner goes away, and once when closed early")
    func ownedDescriptorCloses() throws {
        let path = Self.temporaryPath("owned")
        defer { FileDescriptorOps.unlink(path) }
        do {
            let file = try OwnedFileDescriptor(opening: path, flags: O_WRONLY | O_CREAT | O_TRUNC)
            let isOpen = file.isOpen
            #expect(isOpen)
            #expect(descriptors(pointingTo: path) == 1)
        }
        #expect(descriptors(pointingTo: path) == 0)
        var file = try OwnedFileDescriptor(opening: path, flags: O_RDONLY)
        let raw = file.rawValue
        #expect(raw >= 0)
        file.close()
        let (isOpen, rawAfter) = (file.isOpen, file.rawValue)
        #expect(!isOpen && rawAfter == -1)
        #expect(descriptors(pointingTo: path) == 0)
    }

    @Test("opening a missing file throws its errno")
    func openMissing() {
        #expect(throws: Errno.noSuchFileOrDirectory) { _ = try OwnedFileDescriptor(opening: "/nonexistent/locationd", flags: O_RDONLY) }
    }

    @Test("the thread helper runs the body on another thread")
    func threadRuns() throws {
        let ran = Locked<pthread_t?>(nil)
        try PosixThread.detach { ran.withLock { $0 = pthread_self() } }
        let end = monotonic() + 2
        while ran.withLock({ $0 }) == nil && monotonic() < end { usleep(1_000) }
        let thread = try #require(ran.withLock { $0 })
        #expect(pthread_equal(thread, pthread_self()) == 0)
    }

    @Test("a Duration as poll(2)'s timeout: rounded up to whole milliseconds, 0 when due or past, capped",
          arguments: [
              (Duration.milliseconds(-4), Int32(0)), (.nanoseconds(-1), 0), (.zero, 0), (.nanoseconds(1), 1),
              (.microseconds(1500), 2), (.seconds(2), 2000), (.seconds(10_000_000), Int32.max),
          ])
    func pollTimeout(duration: Duration, milliseconds: Int32) {
        #expect(duration.pollMilliseconds == milliseconds)
    }
}
