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

    // MARK: GSA

    @Test("GSA: every field of a typical sentence; empty PRN slots are skipped")
    func gsaTypical() throws {
        let s = try #require(try parsed("$GPGSA,A,3,04,05,,09,12,,,24,,,,,2.5,1.3,2.1*39").gsa)
        #expect(s.fixType == 3)
        #expect(s.satellitesUsed == [4, 5, 9, 12, 24])
        #expect(isClose(s.pdop, 2.5))
        #expect(isClose(s.hdop, 1.3))
        #expect(isClose(s.vdop, 2.1))
        #expect(s.systemID == nil)
    }

    @Test("GSA NMEA 4.10 with system id (Furuno capture)", arguments: [
        ("$GNGSA,A,3,68,69,70,78,84,85,,,,,,,1.5,1.3,1.0,2*3D", [68, 69, 70, 78, 84, 85], 2, 1.3),
        ("$GNGSA,A,3,04,05,09,11,36,,,,,,,,1.5,1.3,1.0,3*39", [4, 5, 9, 11, 36], 3, 1.3),
        ("$GNGSA,A,3,01,02,03,04,05,06,07,08,09,10,11,12,0.9,0.5,0.7,1", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], 1, 0.5),
    ])
    func gsaSystemID(text: String, used: [Int], system: Int, hdop: Double) throws {
        let s = try #require(try parsed(text).gsa)
        #expect(s.fixType == 3)
        #expect(s.satellitesUsed == used)
        #expect(s.systemID == system)
        #expect(isClose(s.hdop, hdop))
    }

    @Test("GSA with no fix: no satellites, DOPs absent")
    func gsaEmpty() throws {
        let s = try #require(try parsed("$GPGSA,A,1,,,,,,,,,,,,,,,*1E").gsa)
        #expect(s.fixType == 1)
        #expect(s.satellitesUsed.isEmpty)
        #expect(s.pdop == nil)
        #expect(s.hdop == nil)
        #expect(s.vdop == nil)
        #expect(s.systemID == nil)
    }

    // MARK: GSV

    @Test("GSV: a full page of four satellites")
    func gsvTypical() throws {
        let decoded = try SentenceParser.parse("$GPGSV,2,1,08,01,40,083,46,02,17,308,41,12,07,344,39,14,22,228,45*75")
        #expect(decoded.talker == .gps)
        let s = try #require(decoded.sentence.gsv)
        #expect(s.totalMessages == 2)
        #expect(s.messageNumber == 1)
        #expect(s.satellitesInView == 8)
        #expect(s.signalID == nil)
        #expect(s.satellites == [
            Satellite(prn: 1, constellation: .gps, elevation: 40, azimuth: 83, signalToNoise: 46),
            Satellite(prn: 2, constellation: .gps, elevation: 17, azimuth: 308, signalToNoise: 41),
            Satellite(prn: 12, constellation: .gps, elevation: 7, azimuth: 344, signalToNoise: 39),
            Satellite(prn: 14, constellation: .gps, elevation: 22, azimuth: 228, signalToNoise: 45),
        ])
    }

    @Test("GSV last page with fewer than four satellites, padded or not (Telit capture)", arguments: [
        "$GPGSV,2,2,06,24,43,270,36,28,42,055,48,,,,,,,,*7E",
        "$GPGSV,2,2,06,24,43,270,36,28,42,055,48*71",
    ])
    func gsvShortPage(text: String) throws {
        let s = try #require(try parsed(text).gsv)
        #expect(s.totalMessages == 2)
        #expect(s.messageNumber == 2)
        #expect(s.satellitesInView == 6)
        #expect(s.signalID == nil)
        #expect(s.satellites == [
            Satellite(prn: 24, constellation: .gps, elevation: 43, azimuth: 270, signalToNoise: 36),
            Satellite(prn: 28, constellation: .gps, elevation: 42, azimuth: 55, signalToNoise: 48),
        ])
    }

    @Test("GSV: empty elevation, azimuth and SNR are absent; zero stays zero (Telit capture)")
    func gsvEmptyFields() throws {
        let a = try #require(try parsed("$GPGSV,2,1,06,13,,,39,15,74,248,44,17,24,106,35,19,,,33*74").gsv)
        #expect(a.satellites.map(\.prn) == [13, 15, 17, 19])
        #expect(a.satellites[0].elevation == nil)
        #expect(a.satellites[0].azimuth == nil)
        #expect(a.satellites[0].signalToNoise == 39)
        let b = try #require(try parsed("$GPGSV,1,1,02,15,00,000,,17,00,000,,,,,,,,,*79").gsv)
        #expect(b.satellites.map(\.prn) == [15, 17])
        #expect(b.satellites[0].elevation == 0)
        #expect(b.satellites[0].azimuth == 0)
        #expect(b.satellites[0].signalToNoise == nil)
        let none = try #require(try parsed("$GPGSV,1,1,00,,,,,,,,,,,,,,,,*79").gsv)
        #expect(none.satellitesInView == 0)
        #expect(none.satellites.isEmpty)
    }

    @Test("GSV NMEA 4.10 with signal id (Furuno, u-blox F9P captures)", arguments: [
        ("$GAGSV,2,1,07,36,76,149,45,09,47,142,50,04,40,062,35,11,26,120,44,7*73", [36, 9, 4, 11], 7),
        ("$GBGSV,2,2,07,30,37,312,36,32,45,196,44,33,20,043,27,1*4D", [30, 32, 33], 1),
        ("$GPGSV,1,1,01,36,19,156,51,,,,,,,,,,,,,1*5E", [36], 1),
        ("$GLGSV,3,1,10,85,85,247,32,69,53,053,37,70,52,187,27,86,36,310,,1*72", [85, 69, 70, 86], 1),
        ("$GQGSV,1,1,00,8", [], 8),
    ])
    func gsvSignalID(text: String, prns: [Int], signal: Int) throws {
        let s = try #require(try parsed(text).gsv)
        #expect(s.satellites.map(\.prn) == prns)
        #expect(s.signalID == signal)
    }

    @Test("GSV signal-id page values (Galileo E1, u-blox)")
    func gsvSignalIDValues() throws {
        let s = try #require(try parsed("$GAGSV,2,1,07,36,76,149,45,09,47,142,50,04,40,062,35,11,26,120,44,7*73").gsv)
        #expect(s.satellitesInView == 7)
        #expect(s.satellites[0] == Satellite(prn: 36, constellation: .galileo, elevation: 76, azimuth: 149, signalToNoise: 45))
        let glonass = try #require(try parsed("$GLGSV,3,1,10,85,85,247,32,69,53,053,37,70,52,187,27,86,36,310,,1*72").gsv)
        #expect(glonass.satellites[3] == Satellite(prn: 86, constellation: .glonass, elevation: 36, azimuth: 310, signalToNoise: nil))
    }

    @Test("GSV without its page number is a missing field; an empty page count or count in view is accepted (NMEA 4.11)")
    func gsvMissingCounters() throws {
        #expect(parseError("$GPGSV,2,,08,01,40,083,46") == .missingField(sentence: "GSV", field: 2))
        // NMEA 0183 v4.11 §GSV: later pages may leave fields that repeat the first page's empty.
        let page = try #require(try parsed("$GPGSV,,2,,05,01,047,,1").gsv)
        #expect(page.totalMessages == 0)
        #expect(page.messageNumber == 2)
        #expect(page.satellitesInView == nil)
        #expect(page.satellites == [Satellite(prn: 5, constellation: .gps, elevation: 1, azimuth: 47, signalToNoise: nil)])
    }

    // MARK: VTG

    @Test("VTG: every field, NMEA 2.3 with and without mode")
    func vtgTypical() throws {
        let s = try #require(try parsed("$GPVTG,054.7,T,034.4,M,005.5,N,010.2,K*48").vtg)
        #expect(isClose(s.trackTrue, 54.7))
        #expect(isClose(s.trackMagnetic, 34.4))
        #expect(isClose(s.speedKnots, 5.5))
        #expect(isClose(s.speedKilometersPerHour, 10.2))
        #expect(s.mode == nil)
        let withMode = try #require(try parsed("$GPVTG,303.60,T,,M,0.14,N,0.26,K,A*3A").vtg)
        #expect(isClose(withMode.trackTrue, 303.6))
        #expect(withMode.trackMagnetic == nil)
        #expect(isClose(withMode.speedKnots, 0.14))
        #expect(isClose(withMode.speedKilometersPerHour, 0.26))
        #expect(withMode.mode == .autonomous)
    }

    @Test("VTG with km/h only (knots field empty)")
    func vtgKilometersOnly() throws {
        let s = try #require(try parsed("$GPVTG,054.7,T,,M,,N,010.2,K,D").vtg)
        #expect(isClose(s.trackTrue, 54.7))
        #expect(s.trackMagnetic == nil)
        #expect(s.speedKnots == nil)
        #expect(isClose(s.speedKilometersPerHour, 10.2))
        #expect(s.mode == .differential)
    }

    @Test("VTG NMEA 2.0 form without unit letters")
    func vtgOld() throws {
        let s = try #require(try parsed("$GPVTG,054.7,034.4,005.5,010.2").vtg)
        #expect(isClose(s.trackTrue, 54.7))
        #expect(isClose(s.trackMagnetic, 34.4))
        #expect(isClose(s.speedKnots, 5.5))
        #expect(isClose(s.speedKilometersPerHour, 10.2))
        #expect(s.mode == nil)
        let noMagnetic = try #require(try parsed("$GPVTG,054.7,,005.5,010.2").vtg)
        #expect(isClose(noMagnetic.trackTrue, 54.7))
        #expect(noMagnetic.trackMagnetic == nil)
        #expect(isClose(noMagnetic.speedKnots, 5.5))
        #expect(isClose(noMagnetic.speedKilometersPerHour, 10.2))
    }

    @Test("VTG with no data: everything absent", arguments: ["$GPVTG,,T,,M,,N,,K,N*2C", "$GPVTG,,,,,,,,,N*30"])
    func vtgEmpty(text: String) throws {
        let s = try #require(try parsed(text).vtg)
        #expect(s.trackTrue == nil)
        #expect(s.trackMagnetic == nil)
        #expect(s.speedKnots == nil)
        #expect(s.speedKilometersPerHour == nil)
        #expect(s.mode == .notValid)
    }

    // MARK: GNS

    @Test("GNS: every field of a typical sentence")
    func gnsTypical() throws {
        let s = try #require(try parsed("$GNGNS,014035.00,4332.69262,S,17235.48549,E,RR,13,0.9,25.63,11.24,,*70").gns)
        #expect(s.timeOfDay == TestNMEA.ms(1, 40, 35))
        #expect(isClose(s.latitude, -(43 + 32.69262 / 60)))
        #expect(isClose(s.longitude, 172 + 35.48549 / 60))
        #expect(s.modes == [.rtk, .rtk])
        #expect(s.mode == .rtk)
        #expect(s.satellitesUsed == 13)
        #expect(isClose(s.hdop, 0.9))
        #expect(isClose(s.altitudeMSL, 25.63))
        #expect(isClose(s.geoidSeparation, 11.24))
        #expect(s.differentialAge == nil)
        #expect(s.differentialStation == nil)
    }

    @Test("GNS from a real receiver (SiRF/BeiDou capture): mode per constellation")
    func gnsReal() throws {
        let s = try #require(try parsed("$GNGNS,074155.799,3114.8770,N,12135.2463,E,ANNA,05,1.3,156.9,8.3,,0000*52").gns)
        #expect(s.timeOfDay == TestNMEA.ms(7, 41, 55, 799))
        #expect(isClose(s.latitude, 31 + 14.8770 / 60))
        #expect(isClose(s.longitude, 121 + 35.2463 / 60))
        #expect(s.modes == [.autonomous, .notValid, .notValid, .autonomous])
        #expect(s.mode == .autonomous)
        #expect(s.satellitesUsed == 5)
        #expect(isClose(s.hdop, 1.3))
        #expect(isClose(s.altitudeMSL, 156.9))
        #expect(isClose(s.geoidSeparation, 8.3))
        #expect(s.differentialStation == 0)
    }

    @Test("GNS without fix, and NMEA 4.10 navigational status field")
    func gnsNoFix() throws {
        let s = try #require(try parsed("$GNGNS,074150.799,,,,,NNNN,00,,,0.0,,0000*63").gns)
        #expect(s.latitude == nil)
        #expect(s.longitude == nil)
        #expect(s.mode == .notValid)
        #expect(s.satellitesUsed == 0)
        #expect(s.hdop == nil)
        #expect(s.altitudeMSL == nil)
        let v410 = try #require(try parsed("$GNGNS,014035.00,4332.69262,S,17235.48549,E,RRNN,13,0.9,25.63,11.24,,,V").gns)
        #expect(v410.modes == [.rtk, .rtk, .notValid, .notValid])
        #expect(isClose(v410.geoidSeparation, 11.24))
    }

    // MARK: GST

    @Test("GST: every field of a typical sentence")
    func gstTypical() throws {
        let s = try #require(try parsed("$GPGST,172814.0,0.006,0.023,0.020,273.6,0.023,0.020,0.031*6A").gst)
        #expect(s.timeOfDay == TestNMEA.ms(17, 28, 14))
        #expect(isClose(s.rangeRMS, 0.006))
        #expect(isClose(s.semiMajor, 0.023))
        #expect(isClose(s.semiMinor, 0.020))
        #expect(isClose(s.orientation, 273.6))
        #expect(isClose(s.latitudeError, 0.023))
        #expect(isClose(s.longitudeError, 0.020))
        #expect(isClose(s.altitudeError, 0.031))
    }

    @Test("GST with empty ellipse fields (u-blox capture)")
    func gstPartial() throws {
        let s = try #require(try parsed("$GNGST,181141.00,46,,,,4.7,1.9,5.3*4A").gst)
        #expect(s.timeOfDay == TestNMEA.ms(18, 11, 41))
        #expect(s.rangeRMS == 46)
        #expect(s.semiMajor == nil)
        #expect(s.semiMinor == nil)
        #expect(s.orientation == nil)
        #expect(isClose(s.latitudeError, 4.7))
        #expect(isClose(s.longitudeError, 1.9))
        #expect(isClose(s.altitudeError, 5.3))
        let empty = try #require(try parsed("$GPGST,,,,,,,,").gst)
        #expect(empty.timeOfDay == nil)
        #expect(empty.rangeRMS == nil)
        #expect(empty.semiMajor == nil)
        #expect(empty.semiMinor == nil)
        #expect(empty.orientation == nil)
        #expect(empty.latitudeError == nil)
        #expect(empty.longitudeError == nil)
        #expect(empty.altitudeError == nil)
    }

    // MARK: ZDA

    @Test("ZDA: time and date", arguments: [
        ("$GPZDA,201530.00,04,07,2002,00,00*60", TestNMEA.ms(20, 15, 30), 2002, 7, 4),
        ("$GPZDA,193223.00,23,12,2007,00,00*69", TestNMEA.ms(19, 32, 23), 2007, 12, 23),
        ("$GPZDA,235960,31,12,2016,,", TestNMEA.ms(23, 59, 60), 2016, 12, 31),
        ("$GPZDA,000000,29,02,2000,00,00", 0, 2000, 2, 29),
    ])
    func zda(text: String, time: Int, year: Int, month: Int, day: Int) throws {
        let s = try #require(try parsed(text).zda)
        #expect(s.timeOfDay == time)
        #expect(s.date == CivilDate(year: year, month: month, day: day))
    }

    @Test("ZDA: partial or empty date is absent; impossible date is malformed")
    func zdaEdge() throws {
        let empty = try #require(try parsed("$GPZDA,,,,,,").zda)
        #expect(empty.timeOfDay == nil)
        #expect(empty.date == nil)
        let noYear = try #require(try parsed("$GPZDA,201530.00,04,07,,00,00").zda)
        #expect(noYear.timeOfDay == TestNMEA.ms(20, 15, 30))
        #expect(noYear.date == nil)
        #expect(parseError("$GPZDA,201530.00,30,02,2002,00,00") == .malformedField(sentence: "ZDA", field: 2))
        #expect(parseError("$GPZDA,201530.00,29,02,2100,00,00") == .malformedField(sentence: "ZDA", field: 2))
        #expect(parseError("$GPZDA,201530.00,04,13,2002,00,00") == .malformedField(sentence: "ZDA", field: 2))
    }

    // MARK: HDT, THS

    @Test("HDT: heading true (Hemisphere capture); empty is absent")
    func hdt() throws {
        let decoded = try SentenceParser.parse("$GPHDT,274.07,T*03")
        let s = try #require(decoded.sentence.hdt)
        #expect(isClose(s.degrees, 274.07))
        #expect(s.mode == nil)
        let gyro = try SentenceParser.parse("$HEHDT,123.456,T")
        #expect(gyro.talker == Talker("HE"))
        #expect(isClose(gyro.sentence.hdt?.degrees, 123.456))
        let empty = try #require(try parsed("$GPHDT,,T*1B").hdt)
        #expect(empty.degrees == nil)
    }

    @Test("THS: heading and mode indicator", arguments: [
        ("$GPTHS,338.01,A", 338.01 as Double?, "A"),
        ("$INTHS,77.52,E", 77.52, "E"),
        ("$GNTHS,0.00,V", 0, "V"),
        ("$GNTHS,,V", nil, "V"),
    ])
    func ths(text: String, degrees: Double?, mode: String) throws {
        let s = try #require(try parsed(text).ths)
        if let degrees { #expect(isClose(s.degrees, degrees)) } else { #expect(s.degrees == nil) }
        #expect(s.mode == mode.utf8.first)
    }

    // MARK: Garmin PGRME, PGRMZ

    @Test("PGRME: estimated errors in metres (Garmin capture)")
    func pgrme() throws {
        let decoded = try SentenceParser.parse("$PGRME,15.0,M,22.5,M,27.0,M*1A")
        #expect(decoded.talker == nil)
        let s = try #require(decoded.sentence.pgrme)
        #expect(isClose(s.horizontal, 15.0))
        #expect(isClose(s.vertical, 22.5))
        #expect(isClose(s.spherical, 27.0))
        let empty = try #require(try parsed("$PGRME,,M,,M,,M").pgrme)
        #expect(empty.horizontal == nil)
        #expect(empty.vertical == nil)
        #expect(empty.spherical == nil)
    }

    @Test("PGRMZ: altitude in feet converted to metres (1 ft = 0.3048 m)", arguments: [
        ("$PGRMZ,2282,f,3*21", 2282 * 0.3048, 3 as Int?),
        ("$PGRMZ,246,f,2", 246 * 0.3048, 2),
        ("$PGRMZ,-12,f,", -12 * 0.3048, nil),
        ("$PGRMZ,93,F,3", 93 * 0.3048, 3),
    ])
    func pgrmz(text: String, metres: Double, dimension: Int?) throws {
        let decoded = try SentenceParser.parse(text)
        #expect(decoded.talker == nil)
        let s = try #require(decoded.sentence.pgrmz)
        #expect(isClose(s.altitudeMSL, metres))
        #expect(s.fixDimension == dimension)
    }

    @Test("PGRMZ empty: altitude absent")
    func pgrmzEmpty() throws {
        let s = try #require(try parsed("$PGRMZ,,f,").pgrmz)
        #expect(s.altitudeMSL == nil)
        #expect(s.fixDimension == nil)
    }

    // MARK: Talkers

    static let talkers = ["GP", "GL", "GA", "GB", "BD", "GQ", "GI", "GN", "QZ"]

    /// One sentence of each standard type, after the talker id.
    static let bodies: [String] = [
        "GGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
        "RMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W,A",
        "GLL,4807.038,N,01131.000,E,123519,A,A",
        "GSA,A,3,04,05,,09,12,,,24,,,,,2.5,1.3,2.1",
        "GSV,2,1,08,01,40,083,46,02,17,308,41,12,07,344,39,14,22,228,45",
        "VTG,054.7,T,034.4,M,005.5,N,010.2,K,A",
        "GNS,123519,4807.038,N,01131.000,E,AA,08,0.9,545.4,46.9,,",
        "GST,123519,0.006,0.023,0.020,273.6,0.023,0.020,0.031",
        "ZDA,123519,23,03,1994,00,00",
        "HDT,274.07,T",
        "THS,274.07,A",
    ]

    @Test("every GNSS talker is accepted for every sentence type", arguments: talkers, bodies)
    func everyTalker(talker: String, body: String) throws {
        let text = TestNMEA.checksummed("$" + talker + body)
        let decoded = try SentenceParser.parse(text)
        #expect(decoded.talker?.description == talker)
        #expect(decoded.sentence.formatter == String(body.prefix(3)))
        // The same through the framer's byte path.
        var framer = SentenceFramer()
        var viaBytes: [DecodedSentence] = []
        framer.feed(Array((text + "\r\n").utf8)) { bytes in
            if let d = try? SentenceParser.parse(bytes) { viaBytes.append(d) }
        }
        #expect(viaBytes == [decoded])
    }

    @Test("talker ids name their constellation; GSV satellites take it", arguments: [
        ("GP", Constellation.gps as Constellation?),
        ("GL", .glonass),
        ("GA", .galileo),
        ("GB", .beidou),
        ("BD", .beidou),
        ("GQ", .qzss),
        ("QZ", .qzss),
        ("GI", .navic),
        ("GN", nil),
    ])
    func talkerConstellation(talker: String, constellation: Constellation?) throws {
        let decoded = try SentenceParser.parse("$" + talker + "GSV,1,1,01,05,40,083,46")
        #expect(decoded.talker?.constellation == constellation)
        #expect(decoded.sentence.gsv?.satellites.first?.constellation == constellation)
    }

    // MARK: Malformed fields, unknown and proprietary sentences

    @Test("a malformed numeric field throws, naming the sentence and the field (1 = first after the address)", arguments: [
        ("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,54X.4,M,46.9,M,,", SentenceError.malformedField(sentence: "GGA", field: 9)),
        ("$GPGGA,123519,48O7.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", .malformedField(sentence: "GGA", field: 2)),
        ("$GPGGA,123519,4860.000,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", .malformedField(sentence: "GGA", field: 2)),
        ("$GPGGA,123519,9100.000,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", .malformedField(sentence: "GGA", field: 2)),
        ("$GPGGA,123519,-4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", .malformedField(sentence: "GGA", field: 2)),
        ("$GPGGA,123519,4807.038,X,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", .malformedField(sentence: "GGA", field: 3)),
        ("$GPGGA,123519,4807.038,N,18100.000,E,1,08,0.9,545.4,M,46.9,M,,", .malformedField(sentence: "GGA", field: 4)),
        ("$GPGGA,123519,4807.038,N,01131.000,N,1,08,0.9,545.4,M,46.9,M,,", .malformedField(sentence: "GGA", field: 5)),
        ("$GPGGA,123519,4807.038,N,01131.000,E,1.5,08,0.9,545.4,M,46.9,M,,", .malformedField(sentence: "GGA", field: 6)),
        ("$GPGGA,123519,4807.038,N,01131.000,E,1,0x8,0.9,545.4,M,46.9,M,,", .malformedField(sentence: "GGA", field: 7)),
        ("$GPGGA,123519,4807.038,N,01131.000,E,1,08,.,545.4,M,46.9,M,,", .malformedField(sentence: "GGA", field: 8)),
        ("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,4 6.9,M,,", .malformedField(sentence: "GGA", field: 11)),
        ("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,1e3,", .malformedField(sentence: "GGA", field: 13)),
        ("$GPRMC,123519,A,4807.038,N,01131.000,E,0.1A,084.4,230394,003.1,W", .malformedField(sentence: "RMC", field: 7)),
        ("$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,-,230394,003.1,W", .malformedField(sentence: "RMC", field: 8)),
        ("$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,3..1,W", .malformedField(sentence: "RMC", field: 10)),
        ("$GPGLL,4807.038,N,01131.000,E,12351x,A,A", .malformedField(sentence: "GLL", field: 5)),
        ("$GPGSA,A,3,04,05,,09,12,,,24,,,,,x,1.3,2.1", .malformedField(sentence: "GSA", field: 15)),
        ("$GPGSA,A,3,04,A5,,09,12,,,24,,,,,2.5,1.3,2.1", .malformedField(sentence: "GSA", field: 4)),
        ("$GPGSA,A,Z,04,05,,09,12,,,24,,,,,2.5,1.3,2.1", .malformedField(sentence: "GSA", field: 2)),
        ("$GPGSV,2,1,08,01,4x,083,46,02,17,308,41,12,07,344,39,14,22,228,45", .malformedField(sentence: "GSV", field: 5)),
        ("$GPGSV,2,1,08,01,40,083,46,02,17,308,41,12,07,344,39,14,22,228,4.5.", .malformedField(sentence: "GSV", field: 19)),
        ("$GPGSV,x,1,08,01,40,083,46", .malformedField(sentence: "GSV", field: 1)),
        ("$GPVTG,054.7,T,034.4,M,5.5.5,N,010.2,K", .malformedField(sentence: "VTG", field: 5)),
        ("$GPVTG,054.7,T,034.4,M,005.5,N,1O.2,K", .malformedField(sentence: "VTG", field: 7)),
        ("$GPVTG,054.7,034.x,005.5,010.2", .malformedField(sentence: "VTG", field: 2)),
        ("$GPVTG,054.7,034.4,005.5,01o.2", .malformedField(sentence: "VTG", field: 4)),
        ("$GNGNS,014035.00,4332.69262,S,17235.48549,E,RR,13,O.9,25.63,11.24,,", .malformedField(sentence: "GNS", field: 8)),
        ("$GNGNS,014035.00,4332.69262,S,17235.48549,E,RR,13,0.9,25.63,1l.24,,", .malformedField(sentence: "GNS", field: 10)),
        ("$GPGST,172814.0,O.006,0.023,0.020,273.6,0.023,0.020,0.031", .malformedField(sentence: "GST", field: 2)),
        ("$GPGST,172814.0,0.006,0.023,0.020,273.6,0.023,0.020,0.03l", .malformedField(sentence: "GST", field: 8)),
        ("$GPZDA,201530.00,4x,07,2002,00,00", .malformedField(sentence: "ZDA", field: 2)),
        ("$GPZDA,201530.00,04,07,20O2,00,00", .malformedField(sentence: "ZDA", field: 4)),
        ("$GPHDT,12a.4,T", .malformedField(sentence: "HDT", field: 1)),
        ("$GPTHS,12a.4,A", .malformedField(sentence: "THS", field: 1)),
        ("$PGRME,15.0,M,2x.5,M,27.0,M", .malformedField(sentence: "PGRME", field: 3)),
        ("$PGRMZ,22B2,f,3", .malformedField(sentence: "PGRMZ", field: 1)),
    ])
    func malformed(text: String, error: SentenceError) {
        #expect(parseError(text) == error)
    }

    @Test("a malformed address throws", arguments: ["$GPGG,1,2", "$gpgga,123519", "$G,1", "$,1", "$", "$GP GGA,1", "$GP-GA,1"])
    func malformedAddress(text: String) {
        #expect(parseError(text) == .malformedAddress)
    }

    @Test("unknown standard sentences, other proprietary sentences and AIS are .ignored", arguments: [
        "$GPTXT,01,01,02,u-blox ag - www.u-blox.com*50",
        "$GPXTE,A,A,0.67,L,N",
        "$GPRMB,A,0.66,L,003,004,4917.24,N,12309.57,W,001.3,052.5,000.5,V",
        "$GNGRS,104148.00,1,2.6,2.2,-1.6,-1.1,-1.7,-1.5,5.8,1.7,,,,,1,1",
        "$HCHDG,101.1,,,7.1,W",
        "$GPGGAX,123519",
        "$PSRFEPE,074150.799,V,,,,,*23",
        "$PGRMM,WGS 84",
        "$PGRMT,GPS 18x-LVC,P,P,R,R,P,,25,R",
        "$PGRMV,0.0,0.0,0.0",
        "$PUBX,00,081350.00,4717.113210,N,00833.915187,E,546.589,G3,2.1,2.0,0.007,77.52,0.007,,0.92,1.19,0.77,9,0,0",
        "$PMTK001,314,3",
        "$PSTMVER,GNSSLIB_8.4.9.8_ARM",
        "!AIVDM,1,1,,A,B3KLehP0B@LTN6`Vl;rrBE063P06,0*5A",
        "!AIVDO,1,1,,,B3KLehP0B@LTN6`Vl;rrBE063P06,0",
    ])
    func ignored(text: String) throws {
        #expect(try parsed(text) == .ignored)
    }

    @Test("proprietary and AIS sentences have no talker")
    func proprietaryTalker() throws {
        #expect(try SentenceParser.parse("$PGRMM,WGS 84").talker == nil)
        #expect(try SentenceParser.parse("!AIVDM,1,1,,A,B3KLehP0B@LTN6`Vl;rrBE063P06,0*5A").talker == nil)
        #expect(try SentenceParser.parse("$PGRME,15.0,M,22.5,M,27.0,M").talker == nil)
    }
}
