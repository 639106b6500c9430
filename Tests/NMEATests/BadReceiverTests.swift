import LocationCore
import NMEA
import Testing

/// What the decoder does with a receiver that sends valid-looking nonsense (docs/RECEIVERS.md "Bad
/// receivers"; the daemon's further rules are in LocationSourcesTests' `FixPlausibilityTests`). Sentences
/// are built by the NMEA 0183 field layout of RMC and GGA, their checksums the XOR of the bytes between
/// `$` and `*` (NMEA 0183 §5.2.1), computed outside this code.
@Suite("Bad receivers: the decoder")
struct BadReceiverDecoderTests {
    static func decode(_ sentences: [String]) -> (fixes: [Fix], statistics: DecoderStatistics) {
        var decoder = NMEADecoder()
        var fixes: [Fix] = []
        decoder.decode(Array(sentences.map { $0 + "\r\n" }.joined().utf8)) { fixes.append($0) }
        decoder.finish { fixes.append($0) }
        return (fixes, decoder.statistics)
    }

    @Test("a fix flagged valid at exactly 0°, 0° is no fix, whichever sentence says it",
          arguments: [
            // GGA quality 1 (GPS fix), 8 satellites, HDOP 1.0, 12 m MSL.
            "$GPGGA,120000.00,0000.0000,N,00000.0000,E,1,08,1.0,12.0,M,39.2,M,,*5D",
            // RMC status A (valid), mode indicator A (autonomous), 2026-12-01.
            "$GPRMC,120000.00,A,0000.0000,N,00000.0000,E,0.0,0.0,011226,,,A*5B",
          ])
    func nullIsland(sentence: String) throws {
        let (fixes, statistics) = Self.decode([sentence])
        let fix = try #require(fixes.first)
        #expect(fixes.count == 1)
        #expect(fix.mode == .noFix)
        #expect(fix.latitude == nil && fix.longitude == nil && fix.altitudeMSL == nil && fix.speed == nil)
        #expect(fix.time?.millisecondsOfDay == 12 * 3_600_000, "the time is kept: the receiver said it")
        #expect(statistics.malformedSentences == 0 && statistics.framing.rejectedSentences == 0)
    }

    @Test("a position near 0°, 0° but not exactly there is a fix (the Gulf of Guinea is real)")
    func nearNullIsland() throws {
        // 0°00.0060' N, 0°00.0060' E: about 11 m from 0,0.
        let (fixes, _) = Self.decode(["$GPRMC,120000.00,A,0000.0060,N,00000.0060,E,0.0,0.0,011226,,,A*5B"])
        let fix = try #require(fixes.first)
        #expect(fix.mode != .noFix)
        #expect(abs((fix.latitude ?? 0) - 0.0001) < 1e-12)
        #expect(abs((fix.longitude ?? 0) - 0.0001) < 1e-12)
    }

    @Test("the leap second 2016-12-31T23:59:60 (IERS Bulletin C 52) is its own fix, between 23:59:59 and 00:00:00")
    func leapSecond() throws {
        let (fixes, _) = Self.decode([
            "$GPRMC,235959.00,A,2712.6546,S,15303.1350,E,0.5,54.7,311216,,,A*73",
            "$GPRMC,235960.00,A,2712.6546,S,15303.1350,E,0.5,54.7,311216,,,A*79",
            "$GPRMC,000000.00,A,2712.6546,S,15303.1350,E,0.5,54.7,010117,,,A*72",
        ])
        #expect(fixes.map { $0.time?.iso8601 } == [
            "2016-12-31T23:59:59.000Z", "2016-12-31T23:59:60.000Z", "2017-01-01T00:00:00.000Z",
        ])
        #expect(fixes.allSatisfy { $0.hasPosition })
        #expect(fixes[1].time?.isLeapSecond == true)
        let times = fixes.compactMap(\.time)
        #expect(times[0] < times[1] && times[1] < times[2], "the 60th second sorts in its place")
    }

    @Test("a GGA-only leap second after a dated epoch keeps the date; the next second rolls it over")
    func leapSecondWithoutDates() throws {
        let (fixes, _) = Self.decode([
            "$GPRMC,235959.00,A,2712.6546,S,15303.1350,E,0.5,54.7,311216,,,A*73",
            "$GPGGA,235960.00,2712.6546,S,15303.1350,E,1,08,1.0,12.0,M,39.2,M,,*4C",
            "$GPGGA,000000.00,2712.6546,S,15303.1350,E,1,08,1.0,12.0,M,39.2,M,,*47",
        ])
        #expect(fixes.map { $0.time?.iso8601 } == [
            "2016-12-31T23:59:59.000Z", "2016-12-31T23:59:60.000Z", "2017-01-01T00:00:00.000Z",
        ])
    }

    @Test("a week-rollover date is decoded as sent (gpsd's decoding of april6_2019.log says 1999-08-22 too); the daemon corrects it")
    func rolloverDecodedAsSent() throws {
        // A Telit HE910 just after the 2019-04-06 rollover (gpsd's capture and its .chk).
        let (fixes, _) = Self.decode(["$GPRMC,000231.42,A,4829.0005,N,00022.0016,E,0.16,212.28,220899,,,A*59"])
        #expect(fixes.first?.time?.iso8601 == "1999-08-22T00:02:31.420Z")
        #expect(abs((fixes.first?.latitude ?? 0) - 48.483341667) < 1e-9)
    }
}
