#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import TestSupport

/// Runs the built `locationctl` and `locationd` binaries (beside the test bundle) as child processes,
/// capturing their output.
enum Tools {
    /// The directory holding the built products: the test bundle's, or the first parent holding
    /// `locationctl`.
    static var productsDirectory: String { BuiltProducts.directory(containing: "locationctl") }

    static var locationctl: String { productsDirectory + "/locationctl" }
    static var locationd: String { productsDirectory + "/locationd" }

    /// The repository's root (for Demo/ captures).
    static var repository: String {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path
    }

    /// A fresh temporary directory.
    static func temporaryDirectory(_ prefix: String) throws -> String {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        guard let made = TemporaryDirectories.mkdtemp(&template) else { throw Errno.current }
        return String(cString: made)
    }
}

/// How a child process ended, and what it wrote.
struct ToolResult: CustomStringConvertible {
    /// The exit status; 128 + N when killed by signal N; -1 when it could not run.
    var status: Int32
    var stdout: String
    var stderr: String

    var description: String { "exit \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
}

/// A child process writing to files in a temporary directory; killed (SIGKILL) if still running when
/// dropped.
final class ToolProcess: @unchecked Sendable {
    let pid: pid_t
    private let directory: String
    private var exitStatus: Int32? = nil

    /// Starts `executable` with `arguments`; `stdin` is written to a file first (nil: /dev/null).
    init(_ executable: String, _ arguments: [String], stdin: String? = nil) throws {
        directory = try Tools.temporaryDirectory("locationctl-run")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdin {
            _ = FileManager.default.createFile(atPath: directory + "/stdin", contents: Data(stdin.utf8))
            posix_spawn_file_actions_addopen(&actions, 0, directory + "/stdin", O_RDONLY, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, directory + "/stdout", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, directory + "/stderr", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, executable, &actions, nil, argv, environ)
        guard rc == 0 else { throw Errno(rawValue: rc) }
        pid = child
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        _ = try? FileManager.default.removeItem(atPath: directory)
    }

    /// What it wrote to standard output so far.
    var stdout: String { read("stdout") }
    /// What it wrote to standard error so far.
    var stderr: String { read("stderr") }

    private func read(_ name: String) -> String {
        FileManager.default.contents(atPath: directory + "/" + name).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// Waits (polling, without blocking a thread) until standard output contains `text`; false after
    /// `timeout` seconds or when the process ended without writing it.
    func waitForOutput(_ text: String, timeout: Double = 10) async -> Bool {
        let end = monotonicSeconds() + timeout
        while monotonicSeconds() < end {
            if stdout.contains(text) { return true }
            if exited() != nil { return stdout.contains(text) }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// The exit status when it has ended, else nil (waitpid with WNOHANG).
    func exited() -> Int32? {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        exitStatus = code
        return code
    }

    /// Waits for the end, at most `timeout` seconds (then kills it: status 128 + 9).
    func wait(timeout: Double = 30) async -> ToolResult {
        let end = monotonicSeconds() + timeout
        while exited() == nil {
            if monotonicSeconds() > end {
                kill(pid, SIGKILL)
                var status: Int32 = 0
                waitpid(pid, &status, 0)
                exitStatus = 128 + SIGKILL
                break
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return ToolResult(status: exitStatus ?? -1, stdout: stdout, stderr: stderr)
    }
}

/// Runs `locationctl` with `arguments` to the end (at most `timeout` seconds).
func runLocationctl(_ arguments: [String], stdin: String? = nil, timeout: Double = 30) async -> ToolResult {
    do {
        return try await ToolProcess(Tools.locationctl, arguments, stdin: stdin).wait(timeout: timeout)
    } catch {
        return ToolResult(status: -1, stdout: "", stderr: "cannot run \(Tools.locationctl): \(error)")
    }
}

func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
