#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import FoundationEssentials
import LocationPosix
import Testing
import TestSupport

/// Sockets get their mode when bind(2) makes them, never by a chmod(2) of the path afterwards, and a
/// socket's directory that another user may write to (without the sticky bit) is a config error (issue 32:
/// in such a directory a user swapped the socket for a link between bind and chmod, and the daemon made
/// the link's target 0666).
@Suite("Socket modes and socket directories", .serialized)
struct SocketModeTests {
    /// The permission bits and file type of `path`, not following a link.
    static func lstatMode(_ path: String) -> mode_t? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode : nil
    }

    @Test("the socket has its mode as bind returns, whatever the process's umask; the umask is put back",
          arguments: [mode_t(0o666), 0o600])
    func modeFromBind(mode: mode_t) throws {
        let directory = try TemporaryDirectories.make("locationd-sockmode", mode: 0o700)
        let previous = umask(0o022)
        defer { umask(previous) }
        let listener = try ListeningSocket(path: directory + "/s.sock", mode: mode)
        defer { listener.close() }
        let st = try #require(Self.lstatMode(directory + "/s.sock"))
        #expect(st & S_IFMT == S_IFSOCK)
        #expect(st & 0o7777 == mode, "mode \(String(st & 0o7777, radix: 8))")
        #expect(umask(0o022) == 0o022, "the umask is the process's again")
    }

    @Test("no chmod by path: a chmod that would fail does not stop the bind")
    func noChmodByPath() throws {
        let directory = try TemporaryDirectories.make("locationd-sockmode", mode: 0o700)
        SyscallFaults.inject(.chmod, .fail(.permissionDenied))
        defer { SyscallFaults.removeAll() }
        let listener = try ListeningSocket(path: directory + "/s.sock", mode: 0o666)
        listener.close()
    }

    @Test("a socket swapped for a link right after bind: the link's target keeps its mode")
    func symlinkSwap() throws {
        let directory = try TemporaryDirectories.make("locationd-sockmode", mode: 0o700)
        let victim = directory + "/victim", socket = directory + "/s.sock"
        close(open(victim, O_WRONLY | O_CREAT, 0o600))
        #expect(chmod(victim, 0o600) == 0)
        // The old code chmod'ed the path after bind: a delay there leaves the attacker all the time needed.
        SyscallFaults.inject(.chmod, .delay(.milliseconds(500)))
        defer { SyscallFaults.removeAll() }
        let swapped = DispatchSemaphore(value: 0)
        try PosixThread.detach {
            // Waits for the socket file to appear (the bind), then puts a link to the victim in its place.
            let deadline = ContinuousClock.now + .seconds(10)
            while Self.lstatMode(socket).map({ $0 & S_IFMT != S_IFSOCK }) ?? true, ContinuousClock.now < deadline { sched_yield() }
            unlink(socket)
            symlink(victim, socket)
            swapped.signal()
        }
        let listener = try ListeningSocket(path: socket, mode: 0o666)
        defer { listener.close(unlinking: false) }
        #expect(swapped.wait(timeout: .now() + 10) == .success)
        let st = try #require(Self.lstatMode(victim))
        #expect(st & 0o7777 == 0o600, "the victim's mode became \(String(st & 0o7777, radix: 8))")
    }

    /// Writes a configuration whose socket is in `socketDirectory` (made with `mode`) and runs the daemon with
    /// `arguments` after `--config FILE`, stopped after 1 s if it starts (`timeout`, then status 124).
    static func run(socketDirectoryMode mode: mode_t, key: String, arguments: [String]) throws -> (status: Int32, stderr: String, config: String) {
        let directory = try TemporaryDirectories.make("locationd-sockdir", mode: 0o755)
        let shared = directory + "/shared"
        #expect(mkdir(shared, 0o755) == 0 && chmod(shared, mode) == 0)
        let native = key == "socket" ? shared + "/locationd.sock" : directory + "/locationd.sock"
        let config = directory + "/locationd.conf"
        let text = """
            [daemon]
            state-directory = \(directory)/state
            socket = \(native)
            nmea-socket = \(key == "nmea-socket" ? shared + "/nmea.sock" : "")

            [receiver demo]
            type = replay
            file = \(DaemonProcess.demoCapture)
            """
        FileManager.default.createFile(atPath: config, contents: Data(text.utf8))
        let result = try PolicyEndToEndTests.run(["timeout", "1", DaemonProcess.binary, "--config", config] + arguments, in: directory)
        return (result.status, result.stderr, config)
    }

    @Test("a socket directory writable by group or others without the sticky bit: config error with file:line, in --check-config and at start",
          arguments: [("socket", mode_t(0o777), ["--check-config"]), ("socket", 0o775, []), ("nmea-socket", 0o757, ["--check-config"]),
                      ("nmea-socket", 0o777, [])])
    func unsafeDirectory(key: String, mode: mode_t, arguments: [String]) throws {
        let (status, stderr, config) = try Self.run(socketDirectoryMode: mode, key: key, arguments: arguments)
        #expect(status == 78, "\(stderr)")  // EX_CONFIG
        let line = key == "socket" ? 3 : 4
        #expect(stderr.contains("\(config):\(line): \(key): "), "\(stderr)")
        #expect(stderr.contains("is writable by group or others without the sticky bit (mode \(String(mode, radix: 8)))"), "\(stderr)")
    }

    @Test("a sticky (1777) or private (0755) socket directory is accepted", arguments: [mode_t(0o1777), 0o755])
    func safeDirectory(mode: mode_t) throws {
        let check = try Self.run(socketDirectoryMode: mode, key: "socket", arguments: ["--check-config"])
        #expect(check.status == 0, "\(check.stderr)")
        let start = try Self.run(socketDirectoryMode: mode, key: "socket", arguments: [])
        #expect(start.status == 124, "still running after 1 s, then stopped by timeout: \(start.status) \(start.stderr)")
    }
}
