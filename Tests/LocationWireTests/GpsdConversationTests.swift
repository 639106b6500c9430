import LocationCore
import LocationWire
import Testing

/// A client's conversation, read by read, against what the real gpsd 3.22 answered to the same reads (a
/// read-only gpsd under gpsfake with one NMEA device on /dev/pts/4; docs/GPSD.md).
@Suite("gpsd conversation")
struct GpsdConversationTests {
    static let device = GpsdDevice(path: "/dev/pts/4",
                                   activated: UTCTime(date: CivilDate(year: 2026, month: 12, day: 1),
                                                      millisecondsOfDay: (14 * 3600 + 17 * 60 + 9) * 1000 + 310),
                                   bitsPerSecond: 4800)
    static let deviceText = "{\"class\":\"DEVICE\",\"path\":\"/dev/pts/4\",\"driver\":\"NMEA0183\",\"activated\":\"2026-12-01T14:17:09.310Z\",\"flags\":1,\"native\":0,\"bps\":4800,\"parity\":\"N\",\"stopbits\":1,\"cycle\":1.00}"
    static let devicesText = "{\"class\":\"DEVICES\",\"devices\":[" + deviceText + "]}\r\n"

    func say(_ c: inout GpsdConversation, _ input: String) -> (String, GpsdConversation.Reply) {
        let reply = c.receive(Array(input.utf8), devices: [Self.device])
        return (String(decoding: reply.bytes, as: UTF8.self), reply)
    }

    @Test("a session as gpsd answers it")
    func session() {
        var c = GpsdConversation()
        #expect(say(&c, "?WATCH;").0 == Self.devicesText
            + "{\"class\":\"WATCH\",\"enable\":false,\"json\":false,\"nmea\":false,\"raw\":0,\"scaled\":false,\"timing\":false,\"split24\":false,\"pps\":false}\r\n")
        #expect(!c.policy.enable)
        let (text, reply) = say(&c, "?WATCH={\"enable\":true,\"json\":true}\n")
        #expect(text == Self.devicesText
            + "{\"class\":\"WATCH\",\"enable\":true,\"json\":true,\"nmea\":false,\"raw\":0,\"scaled\":false,\"timing\":false,\"split24\":false,\"pps\":false}\r\n")
        #expect(reply.startedWatching)
        #expect(say(&c, "?WATCH={\"device\":\"/dev/pts/99\"};").0
            == "{\"class\":\"ERROR\",\"message\":\"No such device as /dev/pts/99\"}\r\n")
        #expect(say(&c, "?DEVICE={\"bps\":9600};").0 == Self.deviceText + "\r\n")
        #expect(say(&c, "?DEVICE={\"path\":\"/dev/nope\",\"bps\":9600};").0
            == "{\"class\":\"ERROR\",\"message\":\"Can't open /dev/nope.\"}\r\n")
        #expect(say(&c, "?DEVICE={bad};").0
            == "{\"class\":\"ERROR\",\"message\":\"Invalid DEVICE: \"non-whitespace when expecting attribute start\"}\r\n"
            + "{\"class\":\"ERROR\",\"message\":\"Unrecognized request 'bad};\\n'\"}\r\n")
        #expect(say(&c, "?VERSION;?FOO;?VERSION;").0
            == "{\"class\":\"VERSION\",\"release\":\"3.22\",\"rev\":\"3.22\",\"proto_major\":3,\"proto_minor\":14}\r\n"
            + "{\"class\":\"ERROR\",\"message\":\"Unrecognized request '?FOO;?VERSION;\\n'\"}\r\n")
        let poll = say(&c, "?VERSION;?POLL;")
        #expect(poll.1.pollOffsets == [poll.1.bytes.count])
        #expect(say(&c, "junk\n").0 == "")
        let stop = say(&c, "?WATCH={\"enable\":false};")
        #expect(stop.1.stoppedWatching)
        #expect(!c.policy.enable && c.policy.json)
    }

    /// gpsd keeps a device path in 128 bytes (`GPS_PATH_MAX`): 128 bytes are cut to 127, more are refused and the
    /// input from that member on is answered as unrecognized. The expected bytes are gpsd 3.22's answers to these
    /// inputs (gpsfake, Python socket); the Unrecognized quote is ours bounded as every one is.
    @Test("a device path over gpsd's 128 bytes: cut at 127, refused beyond, and never quoted whole")
    func longPaths() {
        var c = GpsdConversation()
        let x127 = String(repeating: "x", count: 127)
        #expect(say(&c, "?DEVICE={\"path\":\"/\(x127)\"};").0
            == "{\"class\":\"ERROR\",\"message\":\"Can't open /\(x127.dropLast()).\"}\r\n")
        let x129 = String(repeating: "x", count: 129)
        #expect(say(&c, "?WATCH={\"enable\":false,\"device\":\"/\(x129)\"};?VERSION;").0
            == "{\"class\":\"ERROR\",\"message\":\"Invalid WATCH: string value too long\"}\r\n" + Self.devicesText
            + "{\"class\":\"WATCH\",\"enable\":false,\"json\":false,\"nmea\":false,\"raw\":0,\"scaled\":false,\"timing\":false,\"split24\":false,\"pps\":false}\r\n"
            + "{\"class\":\"ERROR\",\"message\":\"Unrecognized request '\\\"device\\\":\\\"\\/\(x129)\\\"};?VERSION;\\n'\"}\r\n")
        // 50 KB of "é" in a path: before, "Can't open" quoted it all, each byte escaped (300 KB out).
        let huge = String(repeating: "é", count: 25_000)
        let (text, _) = say(&c, "?DEVICE={\"path\":\"\(huge)\"};")
        #expect(text.hasPrefix("{\"class\":\"ERROR\",\"message\":\"Invalid DEVICE: \"string value too long\"}\r\n"))
        #expect(text.utf8.count < 4096, "\(text.utf8.count) bytes")
    }
}
