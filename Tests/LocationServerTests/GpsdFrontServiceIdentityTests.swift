#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Testing

/// Issue 13: under the service (its own user, CAP_SYS_PTRACE its one capability), the gpsd front still knows
/// which program each TCP client is. Another user's /proc/PID/fd needs CAP_DAC_READ_SEARCH, which the unit does
/// not grant (it would let the daemon read every file); the daemon finds the process holding the client's
/// socket through /proc/PID/fdinfo instead (docs/SECURITY.md "Identity of TCP clients").
@Suite("gpsd front: TCP identity as the service runs", .serialized)
struct GpsdFrontServiceIdentityTests {
    @Test("daemon as nobody with CAP_SYS_PTRACE only: gpspipe run by root and by uid 1 is identified by its executable",
          .enabled(if: getuid() == 0, "needs root to start the daemon as another user"))
    func identifiedWithPtraceOnly() throws {
        let executable = try #require(TCPPeerTests.realPath("/usr/bin/gpspipe"))
        let rule = "[client gpspipe]\nexecutable = \(executable)\naccess = always\naccuracy = full\n"
        let port = try GpsdFrontEndToEndTests.freePort()
        let config = PolicyEndToEndTests.config(policy: "access = deny", clients: rule, rate: "20",
                                                capture: try PolicyEndToEndTests.readableCapture())
        let daemon = try DaemonProcess(config: config, daemonKeys: "gpsd-listen = 127.0.0.1:\(port)\n",
            launcher: ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=+sys_ptrace", "--ambient-caps=+sys_ptrace"],
            owner: (65534, 65534))
        defer { daemon.stop() }
        let expected = try GpsdFrontEndToEndTests.gpsdPositions()
        for launcher in [[], ["setpriv", "--reuid=1", "--regid=1", "--clear-groups"]] {
            let output = try GpsdFrontEndToEndTests.run(["timeout", "20"] + launcher + ["gpspipe", "-w", "-n", "40", "127.0.0.1:\(port)"])
            let positions = GpsdFrontEndToEndTests.lines(output).compactMap { GpsdFrontEndToEndTests.positionMembers(of: $0) }
            #expect(!positions.isEmpty, "gpspipe \(launcher.isEmpty ? "as root" : "as uid 1") got no position: \(output.prefix(600))")
            for position in positions { #expect(expected.contains(position)) }
        }
        let log = daemon.log
        #expect(log.contains("client.uid=0") && log.contains("client.uid=1"), "\(log.suffix(2000))")
        #expect(log.contains("client.exe=\(executable)"), "\(log.suffix(2000))")
        #expect(!log.contains("no process holds the other end"), "\(log.suffix(2000))")
    }
}
