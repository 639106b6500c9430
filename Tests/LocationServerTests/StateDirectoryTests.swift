#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Testing
import TestSupport

/// The state directory must be the daemon's own: one that others can write to, or that another user owns,
/// is refused at start. Found by a helper attacking the uplink: in a 1777 state directory another user
/// planted a symbolic link that the daemon then wrote through, and spool records it then published.
@Suite("The state directory is the daemon's own", .serialized)
struct StateDirectoryTests {
    /// Starts the real daemon with its state directory made with `mode` and owned by `owner` (nil: root, as
    /// the tests run); returns its exit status and standard error.
    static func start(stateMode mode: mode_t, owner: uid_t? = nil) throws -> (status: Int32, stderr: String) {
        var template = Array("/tmp/locationd-statedir-XXXXXX".utf8CString)
        let directory = try #require(TemporaryDirectories.mkdtemp(&template).map { String(cString: $0) })
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let state = directory + "/state"
        #expect(mkdir(state, 0o700) == 0)
        #expect(chmod(state, mode) == 0)
        if let owner { #expect(chown(state, owner, owner) == 0) }
        let config = """
            [daemon]
            socket = \(directory)/locationd.sock
            state-directory = \(state)

            [receiver demo]
            type = replay
            file = \(DaemonProcess.demoCapture)
            """
        FileManager.default.createFile(atPath: directory + "/locationd.conf", contents: Data(config.utf8))
        // A daemon that does start is stopped after 1 s (`timeout`, SIGTERM), which then exits 124.
        let result = try PolicyEndToEndTests.run(["timeout", "1", DaemonProcess.binary, "--config", directory + "/locationd.conf"],
                                                 in: directory)
        return (result.status, result.stderr)
    }

    @Test("writable by others (1777, 0777, 0770): refused, saying why", arguments: [mode_t(0o1777), 0o777, 0o770])
    func writableByOthers(mode: mode_t) throws {
        let (status, stderr) = try Self.start(stateMode: mode)
        #expect(status == 71, "\(stderr)")  // EX_OSERR
        #expect(stderr.contains("is not safe: others may write to it (mode \(String(mode, radix: 8)))"), "\(stderr)")
    }

    @Test("owned by another user: refused")
    func ownedByAnother() throws {
        let (status, stderr) = try Self.start(stateMode: 0o700, owner: 65534)
        #expect(status == 71, "\(stderr)")
        #expect(stderr.contains("is not safe: it is owned by uid 65534, not the daemon's uid 0"), "\(stderr)")
    }

    @Test("the daemon's own, 0700 or 0755: it starts", arguments: [mode_t(0o700), 0o755])
    func ownDirectory(mode: mode_t) throws {
        let (status, stderr) = try Self.start(stateMode: mode)
        #expect(status == 124, "still running after 1 s, then stopped by timeout: \(status) \(stderr)")
        #expect(!stderr.contains("not safe"), "\(stderr)")
    }
}
