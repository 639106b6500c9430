import LocationCore
import NMEA
import Testing

/// Typed access to a parsed sentence, nil when it is of another type.
extension Sentence {
    var gga: GGA? { if case .gga(let s) = self { s } else { nil } }
    var rmc: RMC? { if case .rmc(let s) = self { s } else { nil } }
    var gll: GLL? { if case .gll(let s) = self { s } else { nil } }
    var gsa: GSA? { if case .gsa(let s) = self { s } else { nil } }
    var gsv: GSV? { if case .gsv(let s) = self { s } else { nil } }
    var vtg: VTG? { if case .vtg(let s) = self { s } else { nil } }
    var gns: GNS? { if case .gns(let s) = self { s } else { nil } }
    var gst: GST? { if case .gst(let s) = self { s } else { nil } }
    var zda: ZDA? { if case .zda(let s) = self { s } else { nil } }
    var hdt: Heading? { if case .hdt(let s) = self { s } else { nil } }
    var ths: Heading? { if case .ths(let s) = self { s } else { nil } }
    var pgrme: GarminErrorEstimate? { if case .garminErrorEstimate(let s) = self { s } else { nil } }
    var pgrmz: GarminAltitude? { if case .garminAltitude(let s) = self { s } else { nil } }

    /// The three-letter formatter of the case, for table-driven checks.
    var formatter: String {
        switch self {
        case .gga: "GGA"
        case .rmc: "RMC"
        case .gll: "GLL"
        case .gsa: "GSA"
        case .gsv: "GSV"
        case .vtg: "VTG"
        case .gns: "GNS"
        case .gst: "GST"
        case .gbs: "GBS"
        case .zda: "ZDA"
        case .hdt: "HDT"
        case .ths: "THS"
        case .garminErrorEstimate: "PGRME"
        case .garminAltitude: "PGRMZ"
        case .ignored: "ignored"
        }
    }
}

/// Parses one sentence given as text (checksum optional).
func parsed(_ text: String) throws -> Sentence {
    try SentenceParser.parse(text).sentence
}

/// The error parsing `text` throws, nil when it parses.
func parseError(_ text: String) -> SentenceError? {
    do throws(SentenceError) {
        _ = try SentenceParser.parse(text)
        return nil
    } catch {
        return error
    }
}

@Suite("SentenceParser: typed sentences")
struct SentenceParserTests {
    // MARK: GGA

    @Test("GGA: every field of a typical sentence")
    func ggaTypical() throws {
        // NMEA 0183 reference example.
        let s = try #require(try parsed("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47").gga)
        #expect(s.timeOfDay == TestNMEA.ms(12, 35, 19))
        #expect(isClose(s.latitude, 48 + 7.038 / 60))
        #expect(isClose(s.longitude, 11 + 31.000 / 60))
        #expect(s.qualityIndicator == 1)
        #expect(s.satellitesUsed == 8)
        #expect(isClose(s.hdop, 0.9))
        #expect(isClose(s.altitudeMSL, 545.4))
        #expect(isClose(s.geoidSeparation, 46.9))
        #expect(s.differentialAge == nil)
        #expect(s.differentialStation == nil)
    }

    @Test("GGA: differential age and station, fractional seconds")
    func ggaDifferential() throws {
        let s = try #require(try parsed("$GPGGA,092750.000,5321.6802,N,00630.3372,W,2,8,1.03,61.7,M,55.2,M,3.4,0120").gga)
        #expect(s.timeOfDay == TestNMEA.ms(9, 27, 50, 0))
        #expect(isClose(s.latitude, 53 + 21.6802 / 60))
        #expect(isClose(s.longitude, -(6 + 30.3372 / 60)))
        #expect(s.qualityIndicator == 2)
        #expect(s.satellitesUsed == 8)
        #expect(isClose(s.hdop, 1.03))
        #expect(isClose(s.altitudeMSL, 61.7))
        #expect(isClose(s.geoidSeparation, 55.2))
        #expect(isClose(s.differentialAge, 3.4))
        #expect(s.differentialStation == 120)
    }

    @Test("GGA from a real receiver (Telit HE910): empty geoid separation is nil, station 0000 is 0")
    func ggaTelit() throws {
        let s = try #require(try parsed("$GPGGA,105153.408,5050.4122,N,00420.8265,E,1,04,2.25,109.0,M,,M,,0000*7E").gga)
        #expect(s.timeOfDay == TestNMEA.ms(10, 51, 53, 408))
        #expect(isClose(s.latitude, 50 + 50.4122 / 60))
        #expect(isClose(s.longitude, 4 + 20.8265 / 60))
        #expect(s.satellitesUsed == 4)
        #expect(isClose(s.hdop, 2.25))
        #expect(isClose(s.altitudeMSL, 109.0))
        #expect(s.geoidSeparation == nil)
        #expect(s.differentialAge == nil)
        #expect(s.differentialStation == 0)
    }

    @Test("GGA: negative altitude and separation, western hemisphere (u-blox LEA-5H capture)")
    func ggaNegativeAltitude() throws {
        let s = try #require(try parsed("$GPGGA,193221.00,2037.72792,N,08704.08478,W,1,04,1.7,-30.40,M,-13.9,M,,*7D").gga)
        #expect(s.timeOfDay == TestNMEA.ms(19, 32, 21))
        #expect(isClose(s.latitude, 20 + 37.72792 / 60))
        #expect(isClose(s.longitude, -(87 + 4.08478 / 60)))
        #expect(isClose(s.altitudeMSL, -30.40))
        #expect(isClose(s.geoidSeparation, -13.9))
    }

    @Test("GGA: empty fields are absent, never 0", arguments: [
        "$GPGGA,,,,,,0,,,,M,,M,,*66",
        "$GPGGA,,,,,,0,,,,,,,,",
        "$GPGGA,,,,,,0",
    ])
    func ggaEmpty(text: String) throws {
        let s = try #require(try parsed(text).gga)
        #expect(s.timeOfDay == nil)
        #expect(s.latitude == nil)
        #expect(s.longitude == nil)
        #expect(s.qualityIndicator == 0)
        #expect(s.satellitesUsed == nil)
        #expect(s.hdop == nil)
        #expect(s.altitudeMSL == nil)
        #expect(s.geoidSeparation == nil)
        #expect(s.differentialAge == nil)
        #expect(s.differentialStation == nil)
    }

    @Test("GGA: a position with one of its four fields empty is absent", arguments: [
        "$GPGGA,123519,,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
        "$GPGGA,123519,4807.038,,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
    ])
    func ggaPartialPosition(text: String) throws {
        let s = try #require(try parsed(text).gga)
        #expect(s.latitude == nil)
        #expect(isClose(s.longitude, 11 + 31.0 / 60))
    }

    struct Hemisphere: Sendable, CustomTestStringConvertible {
        var lat: String, ns: String, lon: String, ew: String
        var latitude: Double, longitude: Double
        var testDescription: String { "\(lat),\(ns),\(lon),\(ew)" }
    }

    @Test("south and west are negative, north and east positive", arguments: [
        Hemisphere(lat: "4807.038", ns: "N", lon: "01131.000", ew: "E", latitude: 48 + 7.038 / 60, longitude: 11 + 31.0 / 60),
        Hemisphere(lat: "4807.038", ns: "S", lon: "01131.000", ew: "E", latitude: -(48 + 7.038 / 60), longitude: 11 + 31.0 / 60),
        Hemisphere(lat: "4807.038", ns: "N", lon: "01131.000", ew: "W", latitude: 48 + 7.038 / 60, longitude: -(11 + 31.0 / 60)),
        Hemisphere(lat: "3351.5000", ns: "S", lon: "15112.2500", ew: "W", latitude: -(33 + 51.5 / 60), longitude: -(151 + 12.25 / 60)),
        // haicom / garmin48 capture (New Zealand).
        Hemisphere(lat: "4527.458", ns: "S", lon: "16709.165", ew: "E", latitude: -(45 + 27.458 / 60), longitude: 167 + 9.165 / 60),
        Hemisphere(lat: "0000.000", ns: "N", lon: "00000.000", ew: "E", latitude: 0, longitude: 0),
        Hemisphere(lat: "9000.000", ns: "S", lon: "18000.000", ew: "W", latitude: -90, longitude: -180),
        Hemisphere(lat: "0030.0", ns: "S", lon: "00030.0", ew: "W", latitude: -0.5, longitude: -0.5),
    ])
    func hemispheres(h: Hemisphere) throws {
        let gga = try #require(try parsed("$GPGGA,123519,\(h.lat),\(h.ns),\(h.lon),\(h.ew),1,08,0.9,545.4,M,46.9,M,,").gga)
        #expect(isClose(gga.latitude, h.latitude))
        #expect(isClose(gga.longitude, h.longitude))
        let rmc = try #require(try parsed("$GPRMC,123519,A,\(h.lat),\(h.ns),\(h.lon),\(h.ew),,,230394,,").rmc)
        #expect(isClose(rmc.latitude, h.latitude))
        #expect(isClose(rmc.longitude, h.longitude))
        let gll = try #require(try parsed("$GPGLL,\(h.lat),\(h.ns),\(h.lon),\(h.ew),123519,A,A").gll)
        #expect(isClose(gll.latitude, h.latitude))
        #expect(isClose(gll.longitude, h.longitude))
        let gns = try #require(try parsed("$GNGNS,123519,\(h.lat),\(h.ns),\(h.lon),\(h.ew),AA,08,0.9,545.4,46.9,,").gns)
        #expect(isClose(gns.latitude, h.latitude))
        #expect(isClose(gns.longitude, h.longitude))
    }

    // MARK: Time of day

    @Test("UTC time hhmmss[.sss]: valid times, the leap second 23:59:60 included", arguments: [
        ("000000", TestNMEA.ms(0, 0, 0)),
        ("123519", TestNMEA.ms(12, 35, 19)),
        ("123519.1", TestNMEA.ms(12, 35, 19, 100)),
        ("123519.25", TestNMEA.ms(12, 35, 19, 250)),
        ("123519.408", TestNMEA.ms(12, 35, 19, 408)),
        ("123519.4087", TestNMEA.ms(12, 35, 19, 408)),  // truncated to ms
        ("235959.999", TestNMEA.ms(23, 59, 59, 999)),
        ("235960", TestNMEA.ms(23, 59, 60)),  // = 86 400 000
        ("235960.500", TestNMEA.ms(23, 59, 60, 500)),
    ])
    func validTimes(field: String, expected: Int) throws {
        #expect(TestNMEA.ms(23, 59, 60) == 86_400_000)
        let gga = try #require(try parsed("$GPGGA,\(field),4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,").gga)
        #expect(gga.timeOfDay == expected)
        let rmc = try #require(try parsed("$GPRMC,\(field),A,4807.038,N,01131.000,E,,,311216,,").rmc)
        #expect(rmc.timeOfDay == expected)
        let zda = try #require(try parsed("$GPZDA,\(field),31,12,2016,00,00").zda)
        #expect(zda.timeOfDay == expected)
    }

    @Test("UTC time: impossible times are rejected", arguments: [
        "236000",      // minute 60
        "250000",      // hour 25
        "240000",      // hour 24
        "235961",      // second 61
        "123460",      // a leap second only ends a UTC day (23:59:60)
        "126000",
        "12351",       // five digits
        "1235",
        "12351.5",     // five integer digits
        "-12351",
        "+12351",
        "12a519",
    ])
    func invalidTimes(field: String) {
        #expect(parseError("$GPGGA,\(field),4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,")
            == .malformedField(sentence: "GGA", field: 1))
        #expect(parseError("$GPRMC,\(field),A,4807.038,N,01131.000,E,,,311216,,")
            == .malformedField(sentence: "RMC", field: 1))
    }

    // MARK: RMC

    @Test("RMC: every field of a typical sentence (NMEA 2.0, no mode indicator)")
    func rmcTypical() throws {
        let s = try #require(try parsed("$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*6A").rmc)
        #expect(s.timeOfDay == TestNMEA.ms(12, 35, 19))
        #expect(s.isValid)
        #expect(isClose(s.latitude, 48 + 7.038 / 60))
        #expect(isClose(s.longitude, 11 + 31.0 / 60))
        #expect(isClose(s.speedKnots, 22.4))
        #expect(isClose(s.track, 84.4))
        #expect(s.date == CivilDate(year: 1994, month: 3, day: 23))
        #expect(isClose(s.magneticVariation, -3.1))  // west is negative
        #expect(s.mode == nil)
    }

    @Test("RMC: magnetic variation east is positive; empty variation is absent")
    func rmcVariation() throws {
        let east = try #require(try parsed("$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,E").rmc)
        #expect(isClose(east.magneticVariation, 3.1))
        let none = try #require(try parsed("$GPRMC,105153.71,A,5050.4122,N,00420.8266,E,0.14,303.60,120319,,,A*59").rmc)
        #expect(none.magneticVariation == nil)
        #expect(none.mode == .autonomous)
    }

    @Test("RMC status V: isValid is false, the other fields still decode")
    func rmcStatusV() throws {
        let s = try #require(try parsed("$GPRMC,123519,V,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W").rmc)
        #expect(!s.isValid)
        #expect(isClose(s.latitude, 48 + 7.038 / 60))
        #expect(s.date == CivilDate(year: 1994, month: 3, day: 23))
        let empty = try #require(try parsed("$GPRMC,,V,,,,,,,,,,N*53").rmc)
        #expect(!empty.isValid)
        #expect(empty.timeOfDay == nil)
        #expect(empty.latitude == nil)
        #expect(empty.longitude == nil)
        #expect(empty.speedKnots == nil)
        #expect(empty.track == nil)
        #expect(empty.date == nil)
        #expect(empty.magneticVariation == nil)
        #expect(empty.mode == .notValid)
    }

    @Test("RMC NMEA 2.3 mode indicator", arguments: [
        ("A", ModeIndicator.autonomous, true),
        ("D", .differential, true),
        ("E", .estimated, true),
        ("F", .floatRTK, true),
        ("M", .manual, true),
        ("P", .precise, true),
        ("R", .rtk, true),
        ("S", .simulator, true),
        ("N", .notValid, false),  // status A but mode N: not valid
    ])
    func rmcMode(letter: String, mode: ModeIndicator, valid: Bool) throws {
        let s = try #require(try parsed("$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W,\(letter)").rmc)
        #expect(s.mode == mode)
        #expect(s.isValid == valid)
        #expect(isClose(s.magneticVariation, -3.1))
    }

    @Test("RMC NMEA 4.10 navigational status field (Furuno capture): decodes, status does not invalidate",
          arguments: ["S", "C", "U", "V"])
    func rmcNavigationalStatus(status: String) throws {
        let text = "$GNRMC,120213.000,A,5957.0062,N,01100.6429,E,0.00,0.00,310722,,,D,\(status)"
        let s = try #require(try parsed(text).rmc)
        #expect(s.timeOfDay == TestNMEA.ms(12, 2, 13))
        #expect(s.isValid)
        #expect(isClose(s.latitude, 59 + 57.0062 / 60))
        #expect(isClose(s.longitude, 11 + 0.6429 / 60))
        #expect(s.speedKnots == 0)
        #expect(s.track == 0)
        #expect(s.date == CivilDate(year: 2022, month: 7, day: 31))
        #expect(s.magneticVariation == nil)
        #expect(s.mode == .differential)
    }

    @Test("RMC date ddmmyy: years 80–99 are 19xx, 00–79 are 20xx", arguments: [
        ("230394", 1994, 3, 23),
        ("010180", 1980, 1, 1),
        ("311299", 1999, 12, 31),
        ("010100", 2000, 1, 1),
        ("290224", 2024, 2, 29),
        ("311279", 2079, 12, 31),
    ])
    func rmcDate(field: String, year: Int, month: Int, day: Int) throws {
        let s = try #require(try parsed("$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,\(field),003.1,W").rmc)
        #expect(s.date == CivilDate(year: year, month: month, day: day))
    }

    @Test("RMC: an impossible date is a malformed field 9", arguments: [
        "290223", "320394", "231394", "000394", "230094", "23039", "2303944", "23O394", "+10194", "-10194", "0101.9",
    ])
    func rmcBadDate(field: String) {
        #expect(parseError("$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,\(field),003.1,W")
            == .malformedField(sentence: "RMC", field: 9))
    }

    // MARK: GLL

    @Test("GLL: every field (Telit capture)")
    func gllTypical() throws {
        let s = try #require(try parsed("$GPGLL,5050.4122,N,00420.8266,E,105153.71,A,A*65").gll)
        #expect(isClose(s.latitude, 50 + 50.4122 / 60))
        #expect(isClose(s.longitude, 4 + 20.8266 / 60))
        #expect(s.timeOfDay == TestNMEA.ms(10, 51, 53, 710))
        #expect(s.isValid)
        #expect(s.mode == .autonomous)
    }

    @Test("GLL NMEA 2.0 without mode (SiRF capture) and without status")
    func gllOld() throws {
        let s = try #require(try parsed("$GPGLL,5313.2228,N,00634.4228,E,200619.295,A*35").gll)
        #expect(isClose(s.latitude, 53 + 13.2228 / 60))
        #expect(isClose(s.longitude, 6 + 34.4228 / 60))
        #expect(s.timeOfDay == TestNMEA.ms(20, 6, 19, 295))
        #expect(s.isValid)
        #expect(s.mode == nil)
        let noStatus = try #require(try parsed("$GPGLL,4916.45,N,12311.12,W,225444").gll)
        #expect(isClose(noStatus.latitude, 49 + 16.45 / 60))
        #expect(isClose(noStatus.longitude, -(123 + 11.12 / 60)))
        #expect(noStatus.timeOfDay == TestNMEA.ms(22, 54, 44))
        #expect(noStatus.isValid)
    }

    @Test("GLL status V or mode N is not valid; empty fields are absent")
    func gllInvalid() throws {
        let v = try #require(try parsed("$GPGLL,5050.4122,N,00420.8266,E,105153.71,V,A").gll)
        #expect(!v.isValid)
        let n = try #require(try parsed("$GPGLL,5050.4122,N,00420.8266,E,105153.71,A,N").gll)
        #expect(!n.isValid)
        let empty = try #require(try parsed("$GPGLL,,,,,,V,N*64").gll)
        #expect(!empty.isValid)
        #expect(empty.latitude == nil)
        #expect(empty.longitude == nil)
        #expect(empty.timeOfDay == nil)
        #expect(empty.mode == .notValid)
    }
}
