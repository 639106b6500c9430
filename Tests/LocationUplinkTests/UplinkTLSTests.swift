#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Testing

/// Issue 17 over TLS: mosquitto's TLS listener with a CA and certificate made by openssl in the test.
@Suite("uplink: mqtts:// to a real mosquitto TLS listener", .serialized)
struct UplinkTLSTests {
    /// The daemon publishing over TLS to the broker's plain TLS listener, or with `requireClient` to the
    /// one that requires a client certificate; `client` picks the certificate and key it presents.
    static func run(trusting ca: (Certificates) -> String, requireClient: Bool = false,
                    client: (Certificates) -> (cert: String, key: String)? = { _ in nil }) throws -> (reports: Spawned, daemon: UplinkDaemon, broker: Broker) {
        let scratch = try Scratch()
        let certificates = try Certificates(in: scratch)
        let broker = try Broker(scratch: scratch, tls: certificates)
        let passwordFile = scratch.write("fleet.password", Broker.password + "\n", mode: 0o600)
        let reports = try broker.subscribe("tls/fleet", seconds: 20, name: "reports")
        let port = (requireClient ? broker.clientCertificatePort : broker.tlsPort) ?? 0
        let presented = client(certificates).map { "cert-file = \($0.cert)\nkey-file = \($0.key)" } ?? ""
        let daemon = try UplinkDaemon(scratch: scratch, uplink: """
            type = mqtt
            broker = mqtts://127.0.0.1:\(port)
            ca-file = \(ca(certificates))
            \(presented)
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

    @Test("a listener requiring a client certificate: cert-file/key-file signed by the CA connect, and reports equal locationctl decode's")
    func clientCertificate() throws {
        let expected = try decodedPositions()
        let (reports, daemon, broker) = try Self.run(trusting: { $0.caFile }, requireClient: true) { ($0.clientCert, $0.clientKey) }
        _ = broker
        #expect(eventually(20) { locations(reports.output).count >= 10 }, "\(daemon.log)")
        for location in locations(reports.output) {
            let truth = try #require(expected[location.tst])
            #expect(abs(location.lat - truth.lat) < 5e-8 && abs(location.lon - truth.lon) < 5e-8)
        }
        let status = try UplinkEndToEndTests.locationctlStatus(daemon)
        #expect(status.split(separator: "\n").first { $0.hasPrefix("fleet ") }?.split(separator: " ").prefix(2).map(String.init)
                    == ["fleet", "connected"], "\(status)")
    }

    /// The broker's refusal as the daemon reports it: a log line, and the reason under the uplink's row
    /// in `locationctl status`; nothing published; the daemon answers (status works at all).
    /// - Parameter meaning: what the reason must say.
    static func expectRefused(_ reports: Spawned, _ daemon: UplinkDaemon, meaning: String) throws {
        #expect(eventually(15) { daemon.log.contains("uplink not connected") }, "\(daemon.log)")
        sleep(2)
        let status = try UplinkEndToEndTests.locationctlStatus(daemon)
        let lines = status.split(separator: "\n").map(String.init)
        let row = try #require(lines.firstIndex { $0.hasPrefix("fleet ") }, "\(status)")
        #expect(lines[row].split(separator: " ").prefix(2).map(String.init) == ["fleet", "disconnected"], "\(status)")
        #expect(lines.contains { $0.hasPrefix("demo ") && $0.contains(" connected ") }, "the receiver runs on: \(status)")
        let reason = row + 1 < lines.count ? lines[row + 1] : ""
        #expect(reason.contains(meaning), "the reason names the certificate: \(status)\n\(daemon.log)")
        #expect(daemon.log.split(separator: "\n").contains { $0.contains("uplink not connected: ") && $0.contains(meaning) }, "\(daemon.log)")
        _ = reports.wait(seconds: 25)
        #expect(locations(reports.output).isEmpty)
    }

    @Test("a listener requiring a client certificate, none presented: refused, the log and locationctl status say why, nothing published")
    func missingClientCertificate() throws {
        let (reports, daemon, broker) = try Self.run(trusting: { $0.caFile }, requireClient: true)
        _ = broker
        // Either OpenSSL reads the broker's alert ("tlsv13 alert certificate required": "the broker
        // requires a client certificate") or the broker has closed the connection first (EPROTO, no
        // OpenSSL error: "the broker may require a client certificate"); which comes first is timing.
        try Self.expectRefused(reports, daemon, meaning: "a client certificate (cert-file, key-file)")
    }

    @Test("a client certificate another CA signed: refused, the log and locationctl status say why, nothing published")
    func wrongClientCertificate() throws {
        let (reports, daemon, broker) = try Self.run(trusting: { $0.caFile }, requireClient: true) { ($0.strangerCert, $0.strangerKey) }
        _ = broker
        // "tlsv1 alert unknown ca" ("does not accept"), or EPROTO when the close came first ("may not accept").
        try Self.expectRefused(reports, daemon, meaning: "not accept the client certificate (cert-file)")
    }
}
