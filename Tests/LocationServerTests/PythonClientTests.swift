#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import TestSupport
import Testing

/// The Python client (`clients/python`, issue 33) against the daemon this build made: runs its unittest
/// suite, `python3 -m unittest discover -s clients/python/tests`, so that `swift test` stays the one test
/// command. The suite starts the daemon itself (on the bundled capture, a temporary config each), as an
/// authorized, a denied, a reduced and an asked client, with an agent answering.
@Suite("Python client", .serialized)
struct PythonClientTests {
    static var checkout: String {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path
    }

    @Test("python3 -m unittest discover -s clients/python/tests passes against the built daemon")
    func unittestSuite() throws {
        var template = Array("/tmp/locationd-pytests-XXXXXX".utf8CString)
        guard let made = TemporaryDirectories.mkdtemp(&template) else { throw Errno.current }
        let directory = String(cString: made)
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let binary = DaemonProcess.binary
        let started = try PolicyEndToEndTests.start(
            ["env", "LOCATIOND_BINARY=\(binary)", "LOCATIONCTL_BINARY=\(BuiltProducts.directory(containing: "locationctl"))/locationctl",
             "timeout", "300",
             "python3", "-m", "unittest", "discover", "-s", Self.checkout + "/clients/python/tests", "-v"],
            in: directory)
        let (status, stdout, stderr) = PolicyEndToEndTests.finish(started)
        let output = stdout + stderr
        let summary = output.split(separator: "\n").last { $0.hasSuffix(" failed") }.map(String.init)
        #expect(status == 0, "python3 -m unittest exited \(status):\n\(output.suffix(6000))")
        #expect(summary?.hasSuffix(" 0 failed") == true, "no clean summary line:\n\(output.suffix(6000))")
        #expect(!output.contains("skipped"), "tests skipped:\n\(output.suffix(3000))")
    }
}
