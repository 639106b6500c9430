#if canImport(Glibc)
import Glibc
#endif
import LocationPosix
import Testing

/// The daemon's signals from the first moment its socket listens: a stop or a reload sent at once is
/// neither lost nor taken at the signal's default action (SignalPipe).
@Suite("Signals sent as soon as the daemon listens")
struct SignalTests {
    /// A daemon with work to start: a replay receiver at 20× the capture's pace.
    static func daemon() throws -> DaemonProcess {
        try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = deny", clients: "", rate: "20"))
    }

    /// Before the self-pipe, libdispatch's signal source ignored SIGTERM until its event thread had
    /// registered a signalfd: under ASan the daemon ran on after 2 SIGTERMs in 4 sent right after the
    /// socket appeared (NMEASocketTests "the socket is removed when the daemon stops").
    @Test("SIGTERM right after the socket listens: exit 0, the socket removed, 'stopping' logged — 10 times")
    func terminateAtOnce() throws {
        for _ in 0..<10 {
            let daemon = try Self.daemon()
            let status = daemon.stop(signal: SIGTERM)
            #expect(status & 0x7f == 0 && (status >> 8) & 0xff == 0, "wait status \(status)")
            #expect(access(daemon.socketPath, F_OK) != 0)
            #expect(daemon.log.contains("stopping signal=TERM"))
        }
    }

    /// SIGHUP's default action ends a process: one sent before the daemon was ready to take it killed it.
    @Test("SIGHUP right after the socket listens reloads the configuration; the daemon lives on")
    func hangupAtOnce() throws {
        let daemon = try Self.daemon()
        kill(daemon.pid, SIGHUP)
        let end = monotonic() + 10
        while !daemon.log.contains("configuration reloaded") && monotonic() < end { usleep(20_000) }
        #expect(daemon.log.contains("configuration reloaded"))
        #expect(kill(daemon.pid, 0) == 0, "the daemon is gone")
        let status = daemon.stop(signal: SIGINT)
        #expect(status & 0x7f == 0 && (status >> 8) & 0xff == 0, "wait status \(status)")
        #expect(daemon.log.contains("stopping signal=INT"))
    }
}
