import LocationCore
import NMEA
import Testing

/// SentenceParserTests, continued: GNS, GST, ZDA, headings, Garmin, talkers and malformed input.
extension SentenceParserTests {
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
