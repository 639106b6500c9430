import LocationCore
import Testing

/// The one duration grammar (config file and locationctl).
@Suite("Duration text")
struct DurationTextTests {
    @Test("durations people write", arguments: [
        ("30", 30.0), ("30s", 30), ("500ms", 0.5), ("15min", 900), ("15 min", 900), ("1h", 3600), ("7d", 604_800),
        ("2w", 1_209_600), ("1h 30min", 5400), ("1h30m", 5400), ("  45 seconds ", 45), ("0.25s", 0.25), ("1.5h", 5400),
    ])
    func parses(text: String, seconds: Double) throws {
        let d = try #require(DurationText.parse(text))
        #expect(abs(Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 - seconds) < 1e-9)
    }

    @Test("anything else is refused", arguments: ["", " ", "-5s", "5 parsecs", "1h 30", "h", "1e3s", "1..5s", "30 30", "999999999999999999d"])
    func refuses(text: String) {
        #expect(DurationText.parse(text) == nil)
    }

    @Test("messages write durations to the millisecond", arguments: [
        (Duration.seconds(10), "10 s"), (.milliseconds(500), "0.5 s"), (.milliseconds(250), "0.25 s"),
        (.nanoseconds(2_827_927_243), "2.828 s"), (.nanoseconds(2_999_999_999), "3 s"),
    ])
    func messageSeconds(duration: Duration, text: String) {
        // A reduced POLL's wait ends at a moment of the cadence: a helper saw "no fix within 2.827927243 s".
        #expect(DurationText.seconds(duration) == text)
    }

    @Test("--check-config prints a duration in the units people write it in, and reads it back (issue 33)", arguments: [
        (3600.0, "1h"), (900, "15min"), (5400, "1h 30min"), (30, "30s"), (90, "1min 30s"), (1.5, "1.5s"), (0.5, "500ms"),
        (604_800, "7d"), (90_061, "1d 1h 1min 1s"), (0, "0s"),
    ])
    func configText(seconds: Double, text: String) throws {
        #expect(DurationText.configText(seconds) == text)
        let back = try #require(DurationText.parse(text))
        #expect(Double(back.components.seconds) + Double(back.components.attoseconds) / 1e18 == seconds)
    }
}
