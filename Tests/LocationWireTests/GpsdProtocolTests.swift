import LocationCore
import LocationWire
import Testing

/// gpsd's requests and answers. Every expected byte string below is what the real gpsd 3.22 (Debian 12,
/// read-only under `gpsfake -1 -S`) answered to the same input, talked to with a Python socket (docs/GPSD.md).
@Suite("gpsd protocol: requests and answers")
struct GpsdProtocolTests {
    static let requestCases: [(String, [GpsdRequest])] = [
        ("?VERSION;", [.version]),
        ("?DEVICES;", [.devices]),
        ("?DEVICE;", [.device(nil)]),
        ("?WATCH;", [.watch(nil)]),
        ("?POLL;", [.poll]),
        ("?VERSION;?WATCH;\r\n", [.version, .watch(nil)]),
        ("?WATCH={\"enable\":true,\"json\":true}\n", [.watch(GpsdWatchChange(enable: true, json: true))]),
        ("?WATCH={\"enable\":true}?VERSION;", [.watch(GpsdWatchChange(enable: true)), .version]),
        ("?WATCH={\"enable\":true,\"nmea\":true,\"json\":false};", [.watch(GpsdWatchChange(enable: true, json: false, nmea: true))]),
        ("?WATCH={\"raw\":2};", [.watch(GpsdWatchChange(raw: 2))]),
        ("?WATCH={\"enable\":1};", [.watch(GpsdWatchChange(enable: false))]),
        ("?WATCH={\"raw\":true};", [.watch(GpsdWatchChange(raw: 0))]),
        ("?WATCH={\"device\":\"/dev/pts/4\",\"scaled\":true,\"split24\":true,\"pps\":true,\"timing\":true,\"remote\":\"x\"};",
         [.watch(GpsdWatchChange(scaled: true, split24: true, pps: true, timing: true, device: "/dev/pts/4", remote: "x"))]),
        ("?WATCH=;", [.invalid(command: "WATCH", reason: "non-whitespace when expecting object start")]),
        ("?DEVICE={\"bps\":9600};", [.device(GpsdDeviceSettings(members: ["bps": .number("9600")]))]),
        ("?DEVICE={\"path\":\"/dev/nope\",\"bps\":9600};",
         [.device(GpsdDeviceSettings(path: "/dev/nope", members: ["bps": .number("9600")]))]),
        ("?DEVICE={bad};", [.invalid(command: "DEVICE", reason: "non-whitespace when expecting attribute start"),
                            .unrecognized(text: "bad};")]),
        ("?FOO;", [.unrecognized(text: "?FOO;")]),
        ("?FOO;\n", [.unrecognized(text: "?FOO;")]),
        ("?FOO", [.unrecognized(text: "?FOO")]),
        ("?VERSION;?FOO;?VERSION;", [.version, .unrecognized(text: "?FOO;?VERSION;")]),
        ("?VERSION", [.unrecognized(text: "?VERSION")]),
        ("?version;", [.unrecognized(text: "?version;")]),
        ("?DEVICES", [.unrecognized(text: "?DEVICES")]),
        ("  ?VERSION;", []),
        ("junk\n", []),
    ]

    @Test("requests parse as gpsd reads them", arguments: requestCases)
    func requests(input: String, expected: [GpsdRequest]) {
        #expect(GpsdRequestParser.parse(Array(input.utf8)) == expected)
    }

    static func text(_ write: (inout [UInt8]) -> Void) -> String {
        var out: [UInt8] = []
        write(&out)
        return String(decoding: out, as: UTF8.self)
    }

    @Test("an unrecognized request quotes at most 200 bytes, so its ERROR fits gpsd's 4096-byte reply (an attacker's 57 KB tail was 1 MB out)")
    func unrecognizedQuoteBounded() {
        let input = Array("?POLL;?X".utf8) + [UInt8](repeating: 0xFF, count: 60_000)
        let requests = GpsdRequestParser.parse(input)
        #expect(requests.first == .poll)
        guard case .unrecognized(let text)? = requests.last else {
            Issue.record("no unrecognized request: \(requests.count)")
            return
        }
        #expect(text.hasPrefix("?X"))
        #expect(text.utf8.count <= 3 * GpsdRequestParser.unrecognizedQuoteLimit)
        let error = Self.text { GpsdResponses.appendUnrecognized(text, to: &$0) }
        #expect(error.utf8.count < 4096, "\(error.utf8.count) bytes")
    }

    @Test("VERSION, ERROR and WATCH answers are gpsd's bytes")
    func answers() {
        #expect(Self.text { GpsdResponses.appendVersion(to: &$0) }
            == "{\"class\":\"VERSION\",\"release\":\"3.22\",\"rev\":\"3.22\",\"proto_major\":3,\"proto_minor\":14}\r\n")
        #expect(Self.text { GpsdResponses.appendUnrecognized("?FOO;", to: &$0) }
            == "{\"class\":\"ERROR\",\"message\":\"Unrecognized request '?FOO;\\n'\"}\r\n")
        #expect(Self.text { GpsdResponses.appendInvalid(command: "DEVICE", reason: "non-whitespace when expecting attribute start", to: &$0) }
            == "{\"class\":\"ERROR\",\"message\":\"Invalid DEVICE: \"non-whitespace when expecting attribute start\"}\r\n")
        #expect(Self.text { GpsdResponses.appendInvalid(command: "WATCH", reason: "non-whitespace when expecting object start", to: &$0) }
            == "{\"class\":\"ERROR\",\"message\":\"Invalid WATCH: non-whitespace when expecting object start\"}\r\n")
        #expect(Self.text { GpsdResponses.appendNoSuchDevice("/dev/pts/99", to: &$0) }
            == "{\"class\":\"ERROR\",\"message\":\"No such device as /dev/pts/99\"}\r\n")
        #expect(Self.text { GpsdResponses.appendCannotOpen("/dev/nope", to: &$0) }
            == "{\"class\":\"ERROR\",\"message\":\"Can't open /dev/nope.\"}\r\n")
        #expect(Self.text { GpsdResponses.appendWatch(GpsdWatchPolicy(), to: &$0) }
            == "{\"class\":\"WATCH\",\"enable\":false,\"json\":false,\"nmea\":false,\"raw\":0,\"scaled\":false,\"timing\":false,\"split24\":false,\"pps\":false}\r\n")
    }

    @Test("WATCH changes apply as gpsd applies them, echo in gpsd's order")
    func watchPolicy() {
        var p = GpsdWatchPolicy()
        p = p.applying(GpsdWatchChange(enable: true, json: false, nmea: true)).applying(GpsdWatchChange(raw: 2))
        p = p.applying(GpsdWatchChange(scaled: true, split24: true, pps: true, timing: true, device: "/dev/pts/4", remote: "x"))
        #expect(Self.text { GpsdResponses.appendWatch(p, to: &$0) }
            == "{\"class\":\"WATCH\",\"enable\":true,\"json\":false,\"nmea\":true,\"raw\":2,\"scaled\":true,\"timing\":true,\"split24\":true,\"pps\":true,\"device\":\"/dev/pts/4\"}\r\n")
        p = p.applying(GpsdWatchChange(enable: false))
        #expect(Self.text { GpsdResponses.appendWatch(p, to: &$0) }
            == "{\"class\":\"WATCH\",\"enable\":false,\"json\":false,\"nmea\":true,\"raw\":2,\"scaled\":false,\"timing\":false,\"split24\":false,\"pps\":false}\r\n")
    }

    @Test("DEVICES, DEVICE and POLL are gpsd's shapes")
    func devicesAndPoll() throws {
        let activated = UTCTime(date: CivilDate(year: 2026, month: 12, day: 1), millisecondsOfDay: (14 * 3600 + 17 * 60 + 9) * 1000 + 310)
        let device = GpsdDevice(path: "/dev/pts/4", activated: activated, bitsPerSecond: 4800)
        let expected = "{\"class\":\"DEVICE\",\"path\":\"/dev/pts/4\",\"driver\":\"NMEA0183\",\"activated\":\"2026-12-01T14:17:09.310Z\",\"flags\":1,\"native\":0,\"bps\":4800,\"parity\":\"N\",\"stopbits\":1,\"cycle\":1.00}"
        #expect(Self.text { GpsdResponses.appendDevice(device, to: &$0) } == expected + "\r\n")
        #expect(Self.text { GpsdResponses.appendDevices([device], to: &$0) }
            == "{\"class\":\"DEVICES\",\"devices\":[" + expected + "]}\r\n")
        #expect(Self.text { GpsdResponses.appendDevices([], to: &$0) } == "{\"class\":\"DEVICES\",\"devices\":[]}\r\n")
        let now = UTCTime(date: CivilDate(year: 2026, month: 12, day: 1), millisecondsOfDay: (14 * 3600 + 4 * 60 + 13) * 1000 + 373)
        #expect(Self.text { GpsdResponses.appendPoll(time: now, active: 0, tpv: [], sky: [], to: &$0) }
            == "{\"class\":\"POLL\",\"time\":\"2026-12-01T14:04:13.373Z\",\"active\":0,\"tpv\":[],\"gst\":[],\"sky\":[]}\r\n")
        var tpv: [UInt8] = []
        GpsdReports.appendTPV(Fix(mode: .noFix), estimates: GpsdEstimates(), device: "/dev/pts/4", to: &tpv)
        #expect(String(decoding: tpv, as: UTF8.self) == "{\"class\":\"TPV\",\"device\":\"/dev/pts/4\",\"mode\":1}\r\n")
        #expect(Self.text { GpsdResponses.appendPoll(time: now, active: 1, tpv: [tpv], sky: [], to: &$0) }
            == "{\"class\":\"POLL\",\"time\":\"2026-12-01T14:04:13.373Z\",\"active\":1,\"tpv\":[{\"class\":\"TPV\",\"device\":\"/dev/pts/4\",\"mode\":1}],\"gst\":[],\"sky\":[]}\r\n")
    }
}
