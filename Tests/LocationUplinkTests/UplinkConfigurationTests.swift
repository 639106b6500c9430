#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationUplink
import Testing

/// `[uplink NAME]` keys: defaults, placeholders, and errors naming key and line.
@Suite("uplink configuration")
struct UplinkConfigurationTests {
    static func parse(_ keys: [String: String]) throws(UplinkConfigurationError) -> UplinkConfiguration {
        let lines = Dictionary(uniqueKeysWithValues: keys.keys.sorted().enumerated().map { ($1, $0 + 10) })
        return try UplinkConfiguration(name: "fleet", hostname: "van7") { key in keys[key].map { ($0, lines[key] ?? 0) } }
    }

    @Test("defaults: client id and tid from the hostname, reduced, QoS 1, owntracks, no retain")
    func defaults() throws {
        let c = try Self.parse(["type": "mqtt", "broker": "mqtt://broker.example", "topic": "owntracks/%n/%h"])
        #expect(c.broker == BrokerAddress(parsing: "mqtt://broker.example:1883"))
        #expect(c.clientID == "van7" && c.trackerID == "n7")
        #expect(c.topic == "owntracks/fleet/van7" && c.statusTopic == "owntracks/fleet/van7/status")
        #expect(c.accuracy == .reduced && c.qos == 1 && c.format == .owntracks && !c.retain && c.spoolMax == 10_000)
    }

    @Test("bad values are refused with their key and line", arguments: [
        ("broker", "http://x"), ("format", "xml"), ("accuracy", "exact"), ("qos", "3"), ("retain", "maybe"),
        ("tracker-id", "abc"), ("spool-max", "0"), ("min-interval", "soon"), ("distance-filter", "far"), ("topic", "a/#"),
        ("password-file", "relative"), ("ca-file", "/etc/ssl/ca.pem"), ("cert-file", "/etc/ssl/c.pem"),
    ])
    func badValue(key: String, value: String) {
        var keys = ["type": "mqtt", "broker": "mqtt://[::1]:1883", "username": "u"]
        keys[key] = value
        let lines = Dictionary(uniqueKeysWithValues: keys.keys.sorted().enumerated().map { ($1, $0 + 10) })
        do {
            _ = try Self.parse(keys)
            Issue.record("\(key) = \(value) was accepted")
        } catch {
            #expect(error.key == key)
            #expect(error.line == lines[key])
            #expect(error.message.contains(value) || ["password-file", "topic", "ca-file", "cert-file"].contains(key), "\(error.message)")
        }
    }

    @Test("locationd --check-config names file and line of a bad uplink key and of a missing password file")
    func checkConfig() throws {
        let scratch = try Scratch()
        for (section, expected) in [("type = mqtt\nbroker = mqtt://localhost\nqos = 5\n", ":11: qos: '5' is not 0, 1 or 2"),
                                    ("type = mqtt\nbroker = mqtt://localhost\ncolour = red\n", ":11: colour: unknown key"),
                                    ("type = mqtt\nbroker = mqtt://localhost\nusername = u\npassword-file = /nonexistent/pw\n",
                                     ":12: password-file: cannot read /nonexistent/pw")] {
            let config = scratch.write("locationd.conf", """
                [daemon]
                socket = \(scratch.path)/s.sock
                state-directory = \(scratch.path)/state

                [policy]
                access = deny

                [uplink fleet]
                \(section)
                """)
            let check = try Spawned([UplinkDaemon.binary("locationd"), "--config", config, "--check-config"], output: scratch.path + "/check.out")
            #expect(check.wait(seconds: 20))
            #expect(check.output.contains(config + expected), "\(check.output)")
            unlink(scratch.path + "/check.out")
        }
    }

    @Test("locationd --check-config prints each [uplink] section with its defaults, the topic expanded, and reads it back to the same text")
    func checkConfigPrintsUplinks() throws {
        let scratch = try Scratch()
        let password = scratch.write("pw", "secret\n", mode: 0o600)
        let config = scratch.write("in.conf", """
            [daemon]
            socket = \(scratch.path)/s.sock
            state-directory = \(scratch.path)/state
            share-group = root

            [uplink fleet]
            type = mqtt
            broker = mqtt://[::1]
            username = u
            password-file = \(password)
            topic = fleet/%n/pos
            min-interval = 1min 30s
            distance-filter = 12.5
            """)
        var buffer = [CChar](repeating: 0, count: 256)
        #expect(gethostname(&buffer, 255) == 0)
        let host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let first = try Spawned([UplinkDaemon.binary("locationd"), "--config", config, "--check-config"], output: scratch.path + "/first.out")
        #expect(first.wait(seconds: 20))
        // The defaults of locationd.conf(5): OwnTracks, reduced, QoS 1, not retained, a spool of 10000, the host's name.
        let expected = """
            [uplink fleet]
            type = mqtt
            broker = mqtt://[::1]:1883
            client-id = \(host)
            username = u
            password-file = \(password)
            topic = fleet/fleet/pos
            format = owntracks
            accuracy = reduced
            min-interval = 1min 30s
            distance-filter = 12.5
            qos = 1
            retain = no
            tracker-id = \(String(host.suffix(2)))
            spool-max = 10000

            """
        #expect(first.output.hasSuffix("\n" + expected), "\(first.output)")
        #expect(first.output.contains("share-group = root\n"))
        #expect(!first.output.contains("secret"))
        let again = scratch.write("again.conf", first.output)
        let second = try Spawned([UplinkDaemon.binary("locationd"), "--config", again, "--check-config"], output: scratch.path + "/second.out")
        #expect(second.wait(seconds: 20))
        #expect(second.output == first.output)
    }
}
