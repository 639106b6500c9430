import LocationCore
import NMEA
import Testing

/// SentenceParserTests, continued: GSA, GSV and VTG.
extension SentenceParserTests {
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
}
