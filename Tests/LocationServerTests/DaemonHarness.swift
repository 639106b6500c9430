#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationCore
import LocationPosix
import TestSupport
import NMEA
import Testing

/// Runs the real `locationd` binary on a temporary config, socket and state directory.
final class DaemonProcess {
    let directory: String
    let socketPath: String
    let logPath: String
    /// Runs before the binary, e.g. `setpriv` with its options (found on PATH).
    let launcher: [String]
    private(set) var pid: pid_t = 0

    static var sharedDirectory: String {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return ProcessInfo.processInfo.environment["LOCATIOND_SHARED"] ?? path + "/../shared"
    }

    static var demoCapture: String {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path + "/Demo/haicom-305N.log"
    }

    /// The built binary beside the test bundle (.build/<config>/locationd).
    static var binary: String { BuiltProducts.directory(containing: "locationd") + "/locationd" }

    /// - Parameters:
    ///   - body: config text after the `[daemon]` socket/state lines; `SOCKET` and `STATE` are filled in.
    ///   - owner: a uid:gid to give the temporary directory to, for a daemon run as that user (`launcher`).
    init(config body: String, daemonKeys: String = "", launcher: [String] = [], owner: (uid: uid_t, gid: gid_t)? = nil) throws {
        self.launcher = launcher
        var template = Array("/tmp/locationd-e2e-XXXXXX".utf8CString)
        guard let made = TemporaryDirectories.mkdtemp(&template) else { throw Errno.current }
        directory = String(cString: made)
        socketPath = directory + "/locationd.sock"
        logPath = directory + "/daemon.log"
        let config = """
            [daemon]
            socket = \(socketPath)
            \(daemonKeys.contains("state-directory") ? "" : "state-directory = \(directory)/state")
            \(daemonKeys.contains("log-level") ? "" : "log-level = debug")
            \(daemonKeys)

            \(body)
            """
        FileManager.default.createFile(atPath: directory + "/locationd.conf", contents: Data(config.utf8))
        if let owner {
            chown(directory, owner.uid, owner.gid)
            chmod(directory, 0o755)
        }
        try start()
    }

    func start() throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 2, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        let arguments = launcher + [Self.binary, "--config", directory + "/locationd.conf"]
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let rc = posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ)
        posix_spawn_file_actions_destroy(&actions)
        guard rc == 0 else { throw Errno(rawValue: rc) }
        let end = monotonic() + 10
        while monotonic() < end {
            if ListeningSocket.isLive(socketPath) { return }
            usleep(20_000)
        }
        throw Errno.timedOut
    }

    /// Sends a signal and waits for the exit; returns the exit status.
    ///
    /// Under ThreadSanitizer a SIGTERM can be lost: libdispatch's handler, on the thread the kernel picked,
    /// hands the signal on to its manager thread (`pthread_kill`) for the signal source's `signalfd`, and
    /// TSan, which defers signals to a point where its handler may run, once dropped it (the daemon stayed
    /// in `sigsuspend` until a second SIGTERM stopped it). That was libdispatch's signal source, which the
    /// daemon no longer uses (SignalPipe); the signal is still sent again every 2 s under TSan until a run
    /// shows it is not needed. In any other build one signal must do: after 20 s that is an issue, and the
    /// daemon is killed.
    @discardableResult
    func stop(signal sig: Int32 = SIGTERM) -> Int32 {
        guard pid > 0 else { return -1 }
        kill(pid, sig)
        var status: Int32 = 0
        let start = ContinuousClock.now
        var lastSent = start
        while waitpid(pid, &status, sig == SIGKILL ? 0 : WNOHANG) == 0 {
            usleep(20_000)
            let now = ContinuousClock.now
            if Sanitizers.thread && now - lastSent > .seconds(2) {
                kill(pid, sig)
                lastSent = now
            } else if !Sanitizers.thread && now - start > .seconds(20) {
                Issue.record("the daemon did not exit within 20 s of signal \(sig); killed")
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                break
            }
        }
        pid = 0
        return status
    }

    var log: String { (FileManager.default.contents(atPath: logPath)).map { String(decoding: $0, as: UTF8.self) } ?? "" }

    /// Waits until the log satisfies `condition`, for up to `timeout` seconds: woken by each write to it
    /// (inotify IN_MODIFY), not by a guessed sleep. Returns whether it did.
    func waitForLog(timeout: Double, _ condition: (String) -> Bool) -> Bool {
        let watch = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        defer { if watch >= 0 { close(watch) } }
        if watch >= 0 { _ = inotify_add_watch(watch, logPath, UInt32(IN_MODIFY)) }
        let end = monotonic() + timeout
        while !condition(log) {
            let left = end - monotonic()
            guard left > 0, watch >= 0 else { return condition(log) }
            var ready = pollfd(fd: watch, events: Int16(POLLIN), revents: 0)
            _ = poll(&ready, 1, Int32(min(left, 1) * 1000) + 1)
            var events = [UInt8](repeating: 0, count: 4096)
            while read(watch, &events, events.count) > 0 {}
        }
        return true
    }

    deinit {
        stop(signal: SIGKILL)
        _ = try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A raw protocol client: newline-delimited JSON over the socket, with timeouts (`LineSocket`).
final class RawClient: LineSocket, @unchecked Sendable {
    /// A connection to `socket` registered as an agent (AGENT, answered; the test runs as root).
    static func agent(_ socket: String) throws -> RawClient {
        let agent = try RawClient(socket)
        agent.send(#"{"class":"AGENT"}"#)
        #expect(agent.message("AGENT") != nil, "not registered as an agent")
        return agent
    }

    /// Answers the question `ask` (an ASK message) with `answer`.
    func answer(_ ask: [String: JSONValue], _ answer: String) throws {
        send(#"{"class":"ANSWER","id":\#(Int(try #require(ask["id"]?.number))),"answer":"\#(answer)"}"#)
    }

    /// The next line whose JSON `class` is `name`.
    func message(_ name: String, timeout: Double = 5) -> [String: JSONValue]? {
        let end = monotonic() + timeout
        while let l = line(timeout: max(0, end - monotonic())) {
            if let object = JSONValue.object(l), object["class"]?.string == name { return object }
        }
        return nil
    }
}

/// Minimal JSON values for assertions.
enum JSONValue: Decodable, Equatable {
    case number(Double), string(String), bool(Bool), array([JSONValue]), object([String: JSONValue]), null

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let n = try? c.decode(Double.self) { self = .number(n) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    static func object(_ line: String) -> [String: JSONValue]? {
        guard case .object(let o)? = try? JSONDecoder().decode(JSONValue.self, from: Data(line.utf8)) else { return nil }
        return o
    }

    var string: String? { if case .string(let s) = self { return s } else { return nil } }
    var number: Double? { if case .number(let n) = self { return n } else { return nil } }
    var bool: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    var object: [String: JSONValue]? { if case .object(let o) = self { return o } else { return nil } }
    var array: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
}

func monotonic() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// The decoder's fixes for a capture, keyed by ISO time.
func decodedFixes(_ path: String) -> [String: Fix] {
    guard let data = FileManager.default.contents(atPath: path) else { return [:] }
    var filter = CaptureFilter()
    var bytes: [UInt8] = []
    [UInt8](data).withUnsafeBufferPointer { filter.filter($0, into: &bytes) }
    var decoder = NMEADecoder()
    var out: [String: Fix] = [:]
    decoder.decode(bytes) { if let t = $0.time, $0.hasPosition { out[t.iso8601] = $0 } }
    decoder.finish { if let t = $0.time, $0.hasPosition { out[t.iso8601] = $0 } }
    return out
}
