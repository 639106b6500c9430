import LocationSources
import Testing

@Suite("[receiver NAME] sections")
struct ReceiverConfigurationTests {
    static func make(_ pairs: [String: String]) throws(ConfigurationError) -> ReceiverConfiguration {
        var line = 0
        let numbered = pairs.mapValues { v -> (String, Int) in line += 1; return (v, line) }
        return try ReceiverConfiguration(name: "gnss0") { numbered[$0].map { (value: $0.0, line: $0.1) } }
    }

    @Test("serial with a fixed speed and with auto")
    func serial() throws {
        let fixed = try Self.make(["type": "serial", "path": "/dev/ttyACM0", "speed": "38400", "priority": "5"])
        #expect(fixed.source == .serial(path: "/dev/ttyACM0", speed: 38400))
        #expect(fixed.priority == 5)
        #expect(fixed.staleAfter == nil)
        let auto = try Self.make(["type": "serial", "path": "/dev/serial/by-id/usb-u-blox-if00", "speed": "auto", "stale-after": "500ms"])
        #expect(auto.source == .serial(path: "/dev/serial/by-id/usb-u-blox-if00", speed: nil))
        #expect(auto.staleAfter == .milliseconds(500))
    }

    @Test("gpsd defaults to localhost:2947; host:port and a device filter")
    func gpsd() throws {
        #expect(try Self.make(["type": "gpsd"]).source == .gpsd(host: "localhost", port: 2947, device: nil))
        #expect(try Self.make(["type": "gpsd", "server": "10.0.0.2:3000", "device": "/dev/ttyUSB0"]).source
            == .gpsd(host: "10.0.0.2", port: 3000, device: "/dev/ttyUSB0"))
        #expect(try Self.make(["type": "gpsd", "server": "[::1]:2947"]).source == .gpsd(host: "::1", port: 2947, device: nil))
    }

    @Test("check-date: on by default, off for a capture fed through a tty; a receiver's rules follow it")
    func checkDate() throws {
        let live = try Self.make(["type": "serial", "path": "/dev/ttyACM0"])
        #expect(live.checkDate)
        #expect(SerialReceiver(live).plausibility.checksDate)
        let capture = try Self.make(["type": "serial", "path": "/dev/pts/3", "check-date": "no"])
        #expect(!capture.checkDate)
        #expect(!SerialReceiver(capture).plausibility.checksDate)
        #expect(SerialReceiver(capture).plausibility.checksTime, "time going backwards is still judged")
        #expect(throws: ConfigurationError.self) { _ = try Self.make(["type": "gpsd", "check-date": "maybe"]) }
    }

    @Test("replay rate and loop")
    func replay() throws {
        #expect(try Self.make(["type": "replay", "file": "/tmp/x.nmea"]).source == .replay(file: "/tmp/x.nmea", rate: 1, loop: false))
        #expect(try Self.make(["type": "replay", "file": "/tmp/x.nmea", "rate": "max", "loop": "yes"]).source
            == .replay(file: "/tmp/x.nmea", rate: nil, loop: true))
        #expect(try Self.make(["type": "replay", "file": "x", "rate": "10"]).source == .replay(file: "x", rate: 10, loop: false))
    }

    @Test("errors name the key", arguments: [
        (["path": "/dev/ttyS0"], "type"),
        (["type": "usb"], "type"),
        (["type": "serial"], "path"),
        (["type": "serial", "path": "/dev/ttyS0", "speed": "4801"], "speed"),
        (["type": "gpsd", "server": "host:notaport"], "server"),
        (["type": "replay"], "file"),
        (["type": "replay", "file": "f", "rate": "-2"], "rate"),
        (["type": "replay", "file": "f", "loop": "maybe"], "loop"),
        (["type": "serial", "path": "p", "priority": "high"], "priority"),
        (["type": "serial", "path": "p", "stale-after": "soon"], "stale-after"),
    ])
    func errors(pairs: [String: String], key: String) {
        #expect(throws: ConfigurationError.self) { try Self.make(pairs) }
        do {
            _ = try Self.make(pairs)
        } catch {
            #expect(error.key == key)
        }
    }

    @Test("backoff: first retry within 0.5 s, capped at 5 s, reset after success")
    func backoff() {
        var b = Backoff()
        let delays = (0..<8).map { _ in b.nextDelay() }
        #expect(delays.first! <= .milliseconds(500))
        #expect(delays.max()! <= .seconds(5))
        #expect(delays == delays.sorted())
        b.reset()
        #expect(b.nextDelay() == delays.first!)
    }
}
