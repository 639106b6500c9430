#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import Testing
import TestSupport

/// Issue 13: when gpsd already holds the address `gpsd-listen` names, the daemon says so — the address is in
/// use, by gpsd, and how to free gpsd's port — instead of "in use by a running daemon".
@Suite("gpsd front: the port already in use", .serialized)
struct GpsdPortInUseTests {
    /// Starts the real daemon on a config whose `gpsd-listen` is `address`; returns its exit status and
    /// standard error.
    static func daemonFailing(on address: String) throws -> (status: Int32, stderr: String) {
        var template = Array("/tmp/locationd-inuse-XXXXXX".utf8CString)
        let directory = try #require(TemporaryDirectories.mkdtemp(&template).map { String(cString: $0) })
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let config = """
            [daemon]
            socket = \(directory)/locationd.sock
            state-directory = \(directory)/state
            gpsd-listen = \(address)
            """
        FileManager.default.createFile(atPath: directory + "/locationd.conf", contents: Data(config.utf8))
        let result = try PolicyEndToEndTests.run([DaemonProcess.binary, "--config", directory + "/locationd.conf"], in: directory)
        return (result.status, result.stderr)
    }

    @Test("Debian's gpsd on the port: the error names gpsd, its pid, and systemctl disable --now gpsd.socket gpsd")
    func gpsdHoldsThePort() throws {
        let port = try GpsdFrontEndToEndTests.freePort()
        var template = Array("/tmp/locationd-gpsd-XXXXXX".utf8CString)
        let directory = try #require(TemporaryDirectories.mkdtemp(&template).map { String(cString: $0) })
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        // The real gpsd, in the foreground, no device, listening on loopback `port` (-S).
        let gpsd = try PolicyEndToEndTests.start(["/usr/sbin/gpsd", "-N", "-n", "-S", String(port), "-F", directory + "/gpsd.sock"],
                                                 in: directory)
        defer { kill(gpsd.pid, SIGKILL); _ = PolicyEndToEndTests.finish(gpsd) }
        let end = monotonic() + 10
        while monotonic() < end, !GpsdPortInUseTests.listening(port: port) { usleep(20_000) }
        try #require(GpsdPortInUseTests.listening(port: port), "gpsd did not listen on \(port)")

        let (status, stderr) = try Self.daemonFailing(on: "127.0.0.1:\(port)")
        #expect(status == 71)  // EX_OSERR
        #expect(stderr.contains("cannot listen for gpsd clients on 127.0.0.1:\(port): the address is already in use by /usr/sbin/gpsd (pid \(gpsd.pid))"), "\(stderr)")
        #expect(stderr.contains("gpsd is running"))
        #expect(stderr.contains("systemctl disable --now gpsd.socket gpsd"))
        #expect(!stderr.contains("running daemon"))
    }

    @Test("another program on the port: named by its executable, with the same remedy")
    func otherProgramHoldsThePort() throws {
        let port = try GpsdFrontEndToEndTests.freePort()
        var template = Array("/tmp/locationd-socat-XXXXXX".utf8CString)
        let directory = try #require(TemporaryDirectories.mkdtemp(&template).map { String(cString: $0) })
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let socat = try PolicyEndToEndTests.start(["/usr/bin/socat", "TCP-LISTEN:\(port),bind=127.0.0.1,reuseaddr", "STDOUT"], in: directory)
        defer { kill(socat.pid, SIGKILL); _ = PolicyEndToEndTests.finish(socat) }
        let end = monotonic() + 10
        while monotonic() < end, !GpsdPortInUseTests.listening(port: port) { usleep(20_000) }
        try #require(GpsdPortInUseTests.listening(port: port), "socat did not listen on \(port)")

        let (status, stderr) = try Self.daemonFailing(on: "127.0.0.1:\(port)")
        #expect(status == 71)
        #expect(stderr.contains("the address is already in use by /usr/bin/socat (pid \(socat.pid))"), "\(stderr)")
        #expect(!stderr.contains("gpsd is running"))
        #expect(stderr.contains("or give gpsd-listen another address"))
    }

    /// Whether something listens on 127.0.0.1:`port`: binding it fails with EADDRINUSE (a connection would
    /// disturb the listener: socat serves one and exits).
    static func listening(port: UInt16) -> Bool {
        guard let address = TCPAddress(parsing: "127.0.0.1:\(port)") else { return false }
        do {
            let probe = try TCPListener(address: address)
            probe.close()
            return false
        } catch {
            return error == .addressInUse
        }
    }
}
