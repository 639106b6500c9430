#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import TestSupport
import Testing

/// Runs blocking work (waitpid, poll, sleeps) on a thread of its own and awaits it, so that a test
/// waiting for the daemon for seconds does not hold one of Swift concurrency's few cooperative threads
/// (as many as cores), which the other suites' async tests need to make progress in time.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let job = Unmanaged.passRetained(ThreadJob { continuation.resume(with: Result { try work() }) })
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { context in
            Unmanaged<ThreadJob>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, job.toOpaque())
        if rc == 0 {
            pthread_detach(thread)
        } else {
            job.takeRetainedValue().run()  // no thread to be had: run it here
        }
    }
}

/// `offPool` for work that cannot throw.
func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    try! await offPool { () throws -> T in work() }
}

private final class ThreadJob: @unchecked Sendable {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

/// All the suites of this target, one test at a time: they start real daemons and systemd's tools,
/// and running them side by side would only add load to the timing-sensitive tests of other targets.
@Suite("systemd integration", .serialized)
struct SystemdIntegration {}

/// Paths of the repository and of the binaries built beside this test bundle.
enum Repository {
    /// The package root (this file is Tests/SystemdTests/Support.swift).
    static var root: String {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path
    }

    /// The build's binary directory (.build/<triple>/<configuration>), found from the running test bundle.
    static var binaryDirectory: String { BuiltProducts.directory(containing: "locationd") }

    /// The built `locationd`.
    static var locationd: String { binaryDirectory + "/locationd" }

    /// The bundled capture (a Haicom HI-305N in Brisbane, 1 Hz).
    static var demoCapture: String { root + "/Demo/haicom-305N.log" }
}

/// A temporary directory, removed at deinit.
final class TemporaryDirectory {
    let path: String

    init(_ prefix: String = "locationd-systemd") throws {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        guard let made = TemporaryDirectories.mkdtemp(&template) else { throw Errno.current }
        path = String(cString: made)
    }

    func write(_ name: String, _ text: String) {
        let full = path + "/" + name
        if let slash = full.lastIndex(of: "/") {
            try? FileManager.default.createDirectory(atPath: String(full[..<slash]), withIntermediateDirectories: true)
        }
        _ = FileManager.default.createFile(atPath: full, contents: Data(text.utf8))
    }

    func read(_ name: String) -> String {
        FileManager.default.contents(atPath: path + "/" + name).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    deinit { _ = try? FileManager.default.removeItem(atPath: path) }
}

/// The result of a finished command.
struct CommandResult {
    var status: Int32
    var output: String
    var errors: String

    /// True for a normal exit with status 0.
    var succeeded: Bool { status == 0 }
}

/// Where an executable is on PATH (plus the sbin directories), or nil.
func which(_ name: String) -> String? {
    let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin") + ":/usr/sbin:/sbin:/usr/lib/systemd"
    for dir in path.split(separator: ":") where access("\(dir)/\(name)", X_OK) == 0 {
        return "\(dir)/\(name)"
    }
    return nil
}

/// Finds a tool the tests need, or records a failure saying which Debian package provides it.
func requireTool(_ name: String, package: String) throws -> String {
    guard let path = which(name) else {
        Issue.record("\(name) is not installed: apt-get install \(package) (CI's .ci/run does)")
        throw ToolMissing(name: name)
    }
    return path
}

struct ToolMissing: Error { var name: String }

/// A child process with standard output and error sent to files in `directory`.
final class ChildProcess: @unchecked Sendable {
    private(set) var pid: pid_t = 0
    let outputPath: String
    let errorPath: String

    /// Starts `arguments[0]` (an absolute path) with `arguments` and `environment` (added to this process's).
    init(_ arguments: [String], environment: [String: String] = [:], removing: Set<String> = [],
         directory: String, name: String = "child") throws {
        outputPath = directory + "/\(name).out"
        errorPath = directory + "/\(name).err"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var env = ProcessInfo.processInfo.environment
        for key in removing { env[key] = nil }
        for key in env.keys where key.hasPrefix("LISTEN_") || key.hasPrefix("WATCHDOG_") || key == "NOTIFY_SOCKET" {
            env[key] = nil
        }
        for (k, v) in environment { env[k] = v }
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        let rc = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard rc == 0 else { throw Errno(rawValue: rc) }
    }

    var output: String { FileManager.default.contents(atPath: outputPath).map { String(decoding: $0, as: UTF8.self) } ?? "" }
    var errors: String { FileManager.default.contents(atPath: errorPath).map { String(decoding: $0, as: UTF8.self) } ?? "" }

    /// Waits up to `timeout` seconds for the exit, off the cooperative pool; returns the wait status,
    /// or nil when it still runs.
    func wait(timeout: Double) async -> Int32? {
        await offPool { self.waitBlocking(timeout: timeout) }
    }

    private func waitBlocking(timeout: Double) -> Int32? {
        guard pid > 0 else { return nil }
        let end = monotonic() + timeout
        var status: Int32 = 0
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { pid = 0; return status }
            if monotonic() >= end { return nil }
            usleep(10_000)
        }
    }

    /// Sends `signal`.
    func kill(_ signal: Int32) {
        if pid > 0 { _ = Glibc.kill(pid, signal) }
    }

    /// The executable the process runs now (/proc/PID/exe).
    var executable: String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit {
        if pid > 0 {
            _ = Glibc.kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }
}

/// Runs a command to its end (at most `timeout` seconds) and returns its status and output.
func runCommand(_ arguments: [String], environment: [String: String] = [:], timeout: Double = 120) async throws -> CommandResult {
    let scratch = try TemporaryDirectory("locationd-cmd")
    let child = try ChildProcess(arguments, environment: environment, directory: scratch.path)
    guard let status = await child.wait(timeout: timeout) else {
        child.kill(SIGKILL)
        _ = await child.wait(timeout: 5)
        return CommandResult(status: -1, output: child.output, errors: child.errors + "\n(timed out after \(timeout) s)")
    }
    return CommandResult(status: exitStatus(status), output: child.output, errors: child.errors)
}

/// The exit status of a wait status, or 128 + the signal for a killed process.
func exitStatus(_ status: Int32) -> Int32 {
    (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
}

/// Seconds as whole milliseconds, for printing.
func milliseconds(_ seconds: Double) -> Int { Int((seconds * 1000).rounded()) }

func monotonic() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Polls `condition` every 10 ms for up to `timeout` seconds (sleeping without holding a thread).
func eventually(timeout: Double, _ condition: () -> Bool) async -> Bool {
    let end = monotonic() + timeout
    while monotonic() < end {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// Sleeps without holding a thread.
func pause(_ seconds: Double) async {
    try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
}

/// The daemon's config for a test: socket and state in `directory`, a looping replay receiver.
func daemonConfig(directory: String, logLevel: String = "debug", rate: String = "4", extra: String = "") -> String {
    """
    [daemon]
    socket = \(directory)/locationd.sock
    state-directory = \(directory)/state
    log-level = \(logLevel)

    [receiver demo]
    type = replay
    file = \(Repository.demoCapture)
    rate = \(rate)
    loop = yes

    [policy]
    access = always
    accuracy = full
    \(extra)
    """
}

/// A raw protocol client: newline-delimited JSON lines over the socket, with timeouts (`LineSocket`),
/// read off the cooperative pool.
final class LineClient: LineSocket, @unchecked Sendable {
    /// The next line within `timeout` seconds, waited for off the cooperative pool; nil on timeout or
    /// when the server closed.
    func line(timeout: Double = 5) async -> String? {
        await offPool { self.line(timeout: timeout) as String? }
    }

    /// The next line whose `"class"` is `name`, skipping others, within `timeout` seconds.
    func message(_ name: String, timeout: Double) async -> String? {
        await offPool {
            let end = monotonic() + timeout
            while let l = self.line(timeout: max(0, end - monotonic())) as String? {
                if l.contains("\"class\":\"\(name)\"") { return l }
            }
            return nil
        }
    }

    /// Lines whose `"class"` is `name`, read for `duration` seconds; `open` is false when the server
    /// closed the connection before the end.
    func count(_ name: String, during duration: Double) async -> (count: Int, open: Bool) {
        await offPool {
            let end = monotonic() + duration
            var count = 0
            while monotonic() < end {
                guard let l = self.line(timeout: end - monotonic()) as String? else {
                    return (count, monotonic() >= end - 0.01)
                }
                if l.contains("\"class\":\"\(name)\"") { count += 1 }
            }
            return (count, true)
        }
    }
}

/// A datagram socket standing in for systemd's `NOTIFY_SOCKET`: records every sd_notify message with
/// its arrival time.
final class NotifySocket: @unchecked Sendable {
    let path: String
    let fd: Int32

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = try unixAddress(path)
        let r = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard r == 0 else { throw Errno.current }
    }

    deinit { close(fd) }

    /// The next message within `timeout` seconds, with its arrival time (monotonic seconds), waited for
    /// off the cooperative pool.
    func receive(timeout: Double) async -> (text: String, at: Double)? {
        await offPool { self.receiveBlocking(timeout: timeout) }
    }

    /// Every message for `duration` seconds, received on one thread that waits all along, so that
    /// arrival times are exact.
    func collect(for duration: Double) async -> [(text: String, at: Double)] {
        await offPool {
            let end = monotonic() + duration
            var messages: [(text: String, at: Double)] = []
            while monotonic() < end, let m = self.receiveBlocking(timeout: end - monotonic()) { messages.append(m) }
            return messages
        }
    }

    private func receiveBlocking(timeout: Double) -> (text: String, at: Double)? {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, Int32(max(0, timeout) * 1000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        guard n > 0 else { return nil }
        return (String(decoding: buffer[..<n], as: UTF8.self), monotonic())
    }

    /// Messages until one contains `needle` or `timeout` passes; returns all received, and whether found.
    func receive(until needle: String, timeout: Double) async -> (messages: [(text: String, at: Double)], found: Bool) {
        await offPool {
            let end = monotonic() + timeout
            var messages: [(text: String, at: Double)] = []
            while monotonic() < end {
                guard let m = self.receiveBlocking(timeout: end - monotonic()) else { break }
                messages.append(m)
                if m.text.contains(needle) { return (messages, true) }
            }
            return (messages, false)
        }
    }
}
