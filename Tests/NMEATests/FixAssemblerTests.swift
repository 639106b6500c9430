import LocationCore
import NMEA
import Testing

/// Feeds sentences to an `NMEADecoder` one line at a time and records which line completed each fix.
struct DecoderSession {
    var decoder = NMEADecoder()
    /// Every fix so far, in order.
    var fixes: [Fix] = []
    /// For each fix, the index of the line whose decoding emitted it; nil for fixes emitted by `finish()`.
    var emittedAt: [Int?] = []
    private var lines = 0

    /// Sends one sentence (a checksum is added when it has none); returns the fixes it completed.
    @discardableResult
    mutating func send(_ sentence: String) -> [Fix] {
        var out: [Fix] = []
        decoder.decode(Array(TestNMEA.line(sentence).utf8)) { out.append($0) }
        fixes += out
        emittedAt += out.map { _ in lines }
        lines += 1
        return out
    }

    mutating func send(_ sentences: [String]) {
        for s in sentences { send(s) }
    }

    @discardableResult
    mutating func finish() -> [Fix] {
        var out: [Fix] = []
        decoder.finish { out.append($0) }
        fixes += out
        emittedAt += out.map { _ in nil }
        return out
    }

    /// All fixes of `sentences`, end of input included.
    static func fixes(_ sentences: [String]) -> [Fix] {
        var session = DecoderSession()
        session.send(sentences)
        session.finish()
        return session.fixes
    }
}

func day(_ year: Int, _ month: Int, _ day: Int) -> CivilDate {
    CivilDate(year: year, month: month, day: day)!
}

/// Metres per second in `knots` (1 knot = 1852 m/h).
func metresPerSecond(knots: Double) -> Double { knots * 1852 / 3600 }

@Suite("FixAssembler and NMEADecoder: one Fix per epoch")
struct FixAssemblerTests {
    // MARK: A whole cycle

    /// NMEA 0183 reference position (48°07.038' N, 11°31.000' E), one cycle GGA, GSA, GSV ×2, RMC.
    static func cycle(time: String = "123519", date: String = "230394") -> [String] {
        [
            "$GPGGA,\(time),4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,",
            "$GPGSA,A,3,04,05,,09,12,,,24,,,,,2.5,1.3,2.1",
            "$GPGSV,2,1,08,04,40,083,46,05,17,308,41,09,07,344,39,12,22,228,45",
            "$GPGSV,2,2,08,24,30,120,44,25,10,200,30,29,55,050,48,31,05,330,",
            "$GPRMC,\(time),A,4807.038,N,01131.000,E,022.4,084.4,\(date),003.1,W",
        ]
    }

    @Test("GGA + GSA + GSV + RMC make one Fix with every field")
    func fullCycle() throws {
        var session = DecoderSession()
        session.send(Self.cycle())
        #expect(session.fixes.isEmpty, "the first cycle's end is not known before the input ends")
        session.finish()
        try #require(session.fixes.count == 1)
        let fix = session.fixes[0]

        #expect(fix.time == UTCTime(date: day(1994, 3, 23), millisecondsOfDay: TestNMEA.ms(12, 35, 19)))
        #expect(fix.time?.iso8601 == "1994-03-23T12:35:19.000Z")
        #expect(fix.mode == .threeDimensional)
        #expect(fix.quality == .gps)
        #expect(fix.hasPosition)
        #expect(isClose(fix.latitude, 48 + 7.038 / 60))
        #expect(isClose(fix.longitude, 11 + 31.000 / 60))
        #expect(isClose(fix.altitudeMSL, 545.4))
        #expect(isClose(fix.geoidSeparation, 46.9))
        #expect(isClose(fix.altitudeHAE, 545.4 + 46.9))  // altHAE = altMSL + N
        #expect(isClose(fix.speed, 22.4 * 1852 / 3600))  // 11.5235… m/s
        #expect(isClose(fix.track, 84.4))
        #expect(isClose(fix.magneticVariation, -3.1))
        #expect(fix.climb == nil)
        #expect(fix.heading == nil)
        #expect(fix.satellitesUsed == 5)
        #expect(fix.satellitesVisible == 8)
        #expect(isClose(fix.dop.position, 2.5))
        #expect(isClose(fix.dop.horizontal, 1.3))
        #expect(isClose(fix.dop.vertical, 2.1))
        #expect(isClose(fix.eph, 1.3 * 19))  // HDOP × P_UERE (no DGPS)
        #expect(isClose(fix.epv, 2.1 * 23))  // VDOP × V_UERE (no DGPS)

        #expect(fix.satellites.count == 8)
        let byPRN = Dictionary(uniqueKeysWithValues: fix.satellites.map { ($0.prn, $0) })
        #expect(Set(byPRN.keys) == [4, 5, 9, 12, 24, 25, 29, 31])
        #expect(Set(fix.satellites.filter(\.used).map(\.prn)) == [4, 5, 9, 12, 24])
        #expect(byPRN[4] == Satellite(prn: 4, constellation: .gps, elevation: 40, azimuth: 83, signalToNoise: 46, used: true))
        #expect(byPRN[31] == Satellite(prn: 31, constellation: .gps, elevation: 5, azimuth: 330, signalToNoise: nil, used: false))
    }

    @Test("n cycles make n fixes, each with its own time", arguments: [2, 3, 5])
    func severalCycles(count: Int) {
        var sentences: [String] = []
        for k in 0..<count { sentences += Self.cycle(time: "1235\(10 + k)") }
        let fixes = DecoderSession.fixes(sentences)
        #expect(fixes.count == count)
        #expect(fixes.map { $0.time?.millisecondsOfDay } == (0..<count).map { TestNMEA.ms(12, 35, 10 + $0) })
        #expect(fixes.allSatisfy { $0.mode == .threeDimensional && $0.satellitesVisible == 8 })
    }

    // MARK: Geoid separation

    @Test("GGA without geoid separation takes it from the geoid grid (Telit HE910 capture, gpsd: 45.790)")
    func geoidFromGrid() throws {
        let fixes = DecoderSession.fixes([
            "$GPGGA,105153.71,5050.4122,N,00420.8266,E,1,04,2.25,109.44,M,,M,,*77",
            "$GPGSA,A,3,15,17,24,28,,,,,,,,,4.00,2.25,3.25*09",
            "$GPRMC,105153.71,A,5050.4122,N,00420.8266,E,0.14,303.60,120319,,,A*59",
        ])
        try #require(fixes.count == 1)
        let fix = fixes[0]
        #expect(fix.time?.iso8601 == "2019-03-12T10:51:53.710Z")
        #expect(isClose(fix.latitude, 50 + 50.4122 / 60))  // 50.840203333
        #expect(isClose(fix.longitude, 4 + 20.8266 / 60))  // 4.347110000
        #expect(isClose(fix.altitudeMSL, 109.44))
        #expect(isClose(fix.geoidSeparation, 45.79, 0.005))
        #expect(isClose(fix.altitudeHAE, 109.44 + 45.79, 0.005))  // gpsd: 155.2300
        #expect(isClose(fix.speed, 0.14 * 1852 / 3600))  // gpsd: 0.072
        #expect(isClose(fix.track, 303.6))
        #expect(isClose(fix.eph, 2.25 * 19))  // gpsd: 42.750
        #expect(isClose(fix.epv, 3.25 * 23))  // gpsd: 74.750
        #expect(fix.mode == .threeDimensional)
    }

    @Test("the grid's value is gpsd's at the Telit position")
    func geoidModel() {
        #expect(isClose(GeoidModel.separation(latitude: 50.840203, longitude: 4.34711), 45.79, 0.005))
    }

    // MARK: Dates

    @Test("a date from RMC carries over to later GGA-only epochs and rolls over at midnight", arguments: [
        ("311219", day(2019, 12, 31), day(2020, 1, 1)),
        ("280219", day(2019, 2, 28), day(2019, 3, 1)),
        ("280220", day(2020, 2, 28), day(2020, 2, 29)),
        ("290220", day(2020, 2, 29), day(2020, 3, 1)),
        ("300623", day(2023, 6, 30), day(2023, 7, 1)),
        ("311299", day(1999, 12, 31), day(2000, 1, 1)),
    ])
    func dateCarriesOver(field: String, date: CivilDate, next: CivilDate) {
        let fixes = DecoderSession.fixes([
            "$GPRMC,235958,A,4807.038,N,01131.000,E,000.0,000.0,\(field),,",
            "$GPGGA,235958,4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,",
            "$GPGGA,235959,4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,",
            "$GPGGA,000000,4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,",
            "$GPGGA,000001,4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,",
            "$GPGGA,120000,4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,",
        ])
        #expect(fixes.map(\.time) == [
            UTCTime(date: date, millisecondsOfDay: TestNMEA.ms(23, 59, 58)),
            UTCTime(date: date, millisecondsOfDay: TestNMEA.ms(23, 59, 59)),
            UTCTime(date: next, millisecondsOfDay: 0),
            UTCTime(date: next, millisecondsOfDay: TestNMEA.ms(0, 0, 1)),
            UTCTime(date: next, millisecondsOfDay: TestNMEA.ms(12, 0, 0)),
        ])
        #expect(fixes.allSatisfy { $0.hasPosition })
    }

    @Test("a ZDA date dates the epoch and carries over")
    func zdaDate() {
        let fixes = DecoderSession.fixes([
            "$GPGGA,201530.00,4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,",
            "$GPZDA,201530.00,04,07,2002,00,00",
            "$GPGGA,201531.00,4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,",
        ])
        #expect(fixes.map(\.time?.date) == [day(2002, 7, 4), day(2002, 7, 4)])
    }

    @Test("without any RMC or ZDA the time has no date")
    func noDate() throws {
        let fixes = DecoderSession.fixes(["$GPGGA,123519,4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,"])
        try #require(fixes.count == 1)
        #expect(fixes[0].time == UTCTime(date: nil, millisecondsOfDay: TestNMEA.ms(12, 35, 19)))
        #expect(fixes[0].time?.iso8601 == "12:35:19.000Z")
    }

    static let leapSecondInputs: [[String]] = [
        // Every epoch has RMC with its date (2016-12-31 ended with a leap second).
        [
            "$GPGGA,235959,4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,",
            "$GPRMC,235959,A,4807.038,N,01131.000,E,000.0,000.0,311216,,",
            "$GPGGA,235960,4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,",
            "$GPRMC,235960,A,4807.038,N,01131.000,E,000.0,000.0,311216,,",
            "$GPGGA,000000,4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,",
            "$GPRMC,000000,A,4807.038,N,01131.000,E,000.0,000.0,010117,,",
        ],
        // Only the first epoch is dated; the date carries over through the leap second.
        [
            "$GPGGA,235959,4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,",
            "$GPRMC,235959,A,4807.038,N,01131.000,E,000.0,000.0,311216,,",
            "$GPGGA,235960,4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,",
            "$GPGGA,000000,4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,",
        ],
    ]

    @Test("a 23:59:60 epoch is delivered with second 60, distinct from the next 00:00:00", arguments: leapSecondInputs)
    func leapSecond(sentences: [String]) throws {
        let fixes = DecoderSession.fixes(sentences)
        try #require(fixes.count == 3)
        let times = fixes.compactMap(\.time)
        try #require(times.count == 3)
        #expect(times[0] == UTCTime(date: day(2016, 12, 31), millisecondsOfDay: TestNMEA.ms(23, 59, 59)))
        #expect(times[1] == UTCTime(date: day(2016, 12, 31), millisecondsOfDay: TestNMEA.ms(23, 59, 60)))
        #expect(times[2] == UTCTime(date: day(2017, 1, 1), millisecondsOfDay: 0))
        #expect(times[1].hour == 23)
        #expect(times[1].minute == 59)
        #expect(times[1].second == 60)
        #expect(times[1].isLeapSecond)
        #expect(!times[2].isLeapSecond)
        #expect(times.map(\.iso8601) == ["2016-12-31T23:59:59.000Z", "2016-12-31T23:59:60.000Z", "2017-01-01T00:00:00.000Z"])
        #expect(times[0] < times[1] && times[1] < times[2])
        #expect(fixes.allSatisfy { $0.hasPosition })
    }

    // MARK: No fix

    @Test("RMC status V, GGA quality 0, GLL V, mode N: mode .noFix without position", arguments: [
        ["$GPRMC,123519,V,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W"],
        ["$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W,N"],
        ["$GPGGA,123519,4807.038,N,01131.000,E,0,00,,545.4,M,46.9,M,,"],
        ["$GPGGA,123519,,,,,0,00,99.99,,,,,,", "$GPRMC,123519,V,,,,,,,230394,,,N"],
        ["$GPGLL,4807.038,N,01131.000,E,123519,V,N"],
        ["$GNGNS,123519,4807.038,N,01131.000,E,NN,00,,545.4,46.9,,"],
        ["$GPGGA,123519,4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,",
         "$GPRMC,123519,V,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W"],
    ])
    func noFix(sentences: [String]) throws {
        let fixes = DecoderSession.fixes(sentences)
        try #require(fixes.count == 1)
        let fix = fixes[0]
        #expect(fix.mode == .noFix)
        #expect(!fix.hasPosition)
        #expect(fix.latitude == nil)
        #expect(fix.longitude == nil)
        #expect(fix.altitudeMSL == nil)
        #expect(fix.altitudeHAE == nil)
        #expect(fix.geoidSeparation == nil)
        #expect(fix.speed == nil)
        #expect(fix.track == nil)
        #expect(fix.quality == nil)
        #expect(fix.eph == nil)
        #expect(fix.epv == nil)
        #expect(fix.time?.millisecondsOfDay == TestNMEA.ms(12, 35, 19))
    }

    @Test("a cold receiver (Telit capture, no time at all): .noFix, no time")
    func coldReceiver() throws {
        let fixes = DecoderSession.fixes([
            "$GPGGA,,,,,,0,,,,M,,M,,*66",
            "$GPGLL,,,,,,V,N*64",
            "$GPGSA,A,1,,,,,,,,,,,,,,,*1E",
            "$GPGSV,1,1,04,15,00,000,44,17,00,000,37,24,00,000,40,28,00,000,46*71",
            "$GPRMC,,V,,,,,,,,,,N*53",
            "$GPVTG,,T,,M,,N,,K,N*2C",
        ])
        try #require(fixes.count == 1)
        #expect(fixes[0].mode == .noFix)
        #expect(fixes[0].latitude == nil)
        #expect(fixes[0].time == nil)
        #expect(fixes[0].satellitesVisible == 4)
    }
}
