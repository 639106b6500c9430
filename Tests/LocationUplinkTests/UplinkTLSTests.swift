#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Testing

/// Issue 17 over TLS: mosquitto's TLS listener with a CA and certificate made by openssl in the test.
@Suite("uplink: mqtts:// to a real mosquitto TLS listener", .serialized)
struct UplinkTLSTests {
    static func run(trusting ca: (Certificates) -> String) throws -> (reports: Spawned, daemon: UplinkDaemon, broker: Broker) {
        let scratch = try Scratch()
        let certificates = try Certificates(in: scratch)
        let broker = try Broker(scratch: scratch, tls: certificates)
        let passwordFile = scratch.write("fleet.password", Broker.password + "\n", mode: 0o600)
        let reports = try broker.subscribe("tls/fleet", seconds: 20, name: "reports")
        let daemon = try UplinkDaemon(scratch: scratch, uplink: """
            type = mqtt
            broker = mqtts://127.0.0.1:\(broker.tlsPort ?? 0)
            ca-file = \(ca(certificates))
            username = \(Broker.user)
            password-file = \(passwordFile)
            topic = tls/%n
            accuracy = full
            """)
        return (reports, daemon, broker)
    }

    @Test("trusting the test CA: reports arrive over TLS equal to locationctl decode's")
    func trusted() throws {
        let expected = try decodedPositions()
        let (reports, daemon, broker) = try Self.run { $0.caFile }
        _ = broker
        #expect(eventually(20) { locations(reports.output).count >= 10 }, "\(daemon.log)")
        for location in locations(reports.output) {
            let truth = try #require(expected[location.tst])
            #expect(abs(location.lat - truth.lat) < 5e-8 && abs(location.lon - truth.lon) < 5e-8)
        }
    }

    @Test("trusting another CA: the certificate is refused, the log says so, nothing is published")
    func untrusted() throws {
        let (reports, daemon, broker) = try Self.run { $0.otherCA }
        _ = broker
        #expect(eventually(15) { daemon.log.contains("certificate verify failed") }, "\(daemon.log)")
        #expect(locations(reports.output).isEmpty)
        // The rest of the daemon runs on: its socket answers.
        #expect(access(daemon.scratch.path + "/locationd.sock", F_OK) == 0)
    }
}
