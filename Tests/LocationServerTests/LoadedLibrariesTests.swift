#if canImport(Glibc)
import Glibc
#endif
import TestSupport
import Testing

/// Libraries a receiver needs are mapped only when one is configured (issue 16: memory).
@Suite("Libraries loaded only for the receivers configured")
struct LoadedLibrariesTests {
    /// libgps (gpsd 3.22) needs libstdc++ and libdbus: 1.2 MiB resident in the static daemon that read a
    /// serial port or a replay and never called it.
    @Test("libgps is mapped by a daemon with a gpsd receiver, not by one with a replay receiver")
    func libgpsOnlyForGpsd() throws {
        let replay = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = deny", clients: "", rate: "10"))
        let without = mappedLibraries(replay.pid)
        replay.stop()
        #expect(without.contains { $0.hasPrefix("libc.so") }, "\(without)")
        #expect(!without.contains { $0.hasPrefix("libgps") || $0.hasPrefix("libdbus") }, "\(without)")

        // Port 9 (discard) on loopback: nothing listens, the receiver retries; the library is loaded when
        // the configuration is read.
        let gpsd = try DaemonProcess(config: "[receiver g]\ntype = gpsd\nserver = 127.0.0.1:9\n")
        let with = mappedLibraries(gpsd.pid)
        gpsd.stop()
        #expect(with.contains { $0.hasPrefix("libgps.so.28") }, "\(with)")
    }
}
