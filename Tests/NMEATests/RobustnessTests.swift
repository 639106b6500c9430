import LocationCore
import NMEA
import Testing

/// Inputs found by fuzzing that once broke the decoder; each stays a test.
@Suite("Robustness")
struct RobustnessTests {
    @Test("a ZDA with an absurd year is malformed, and the fix after it does not trap")
    func absurdZDAYear() throws {
        let input = """
            $GNRMC,213756.000,A,4111.59911,N,11156.54796,W,0.0,0.0,120226,,,A*68\r
            $GNZDA,213757.000,12,002,1234567890123026,,*79\r
            $GNGNS,213757.000,4111.59911,N,11156.54796,W,AANN,12,0.97,01482.8,-016.5,,*51\r
            $GNGNS,213758.000,4111.59911,N,11156.54796,W,AANN,12,0.97,01482.8,-016.5,,*5E\r

            """
        var decoder = NMEADecoder()
        var fixes: [Fix] = []
        decoder.decode(Array(input.utf8)) { fixes.append($0) }
        decoder.finish { fixes.append($0) }
        #expect(decoder.statistics.malformedSentences == 1)
        #expect(fixes.contains { $0.hasPosition })
        #expect(fixes.allSatisfy { ($0.time?.date?.year ?? 2026) == 2026 })
        #expect(throws: SentenceError.self) { _ = try SentenceParser.parse("$GNZDA,213757.000,12,02,1234567890123026,,") }
    }

    @Test("dates outside the years 1-9999 do not exist", arguments: [(0, 1, 1), (10_000, 1, 1), (-5, 6, 1), (2024, 13, 1), (2023, 2, 29)])
    func impossibleDates(year: Int, month: Int, day: Int) {
        #expect(CivilDate(year: year, month: month, day: day) == nil)
    }
}
