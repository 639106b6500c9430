import LocationCore
import LocationWire
import NMEA
import Testing

/// FixAssemblerTests, continued: when a fix comes out, its error estimates, speed, and the decoder's counts.
extension FixAssemblerTests {
    // MARK: Delivery timing

    @Test("finish() delivers the last epoch, once")
    func finishDeliversLast() {
        var session = DecoderSession()
        #expect(session.finish().isEmpty)
        session.send("$GPGGA,123519,4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,")
        #expect(session.fixes.isEmpty)
        let last = session.finish()
        #expect(last.count == 1)
        #expect(last.first?.time?.millisecondsOfDay == TestNMEA.ms(12, 35, 19))
        #expect(session.finish().isEmpty)
        #expect(session.decoder.statistics.fixes == 1)
    }

    @Test("sentences without time are delivered in bounded epochs")
    func untimedFloodIsBounded() {
        var session = DecoderSession()
        for _ in 0..<200 { session.send("$GPGSA,A,3,04,05,,09,12,,,24,,,,,2.5,1.3,2.1") }
        let limit = FixAssembler.maximumSentencesPerEpoch
        #expect(session.emittedAt == [limit - 1, 2 * limit - 1, 3 * limit - 1])
        #expect(session.finish().count == 1)
        #expect(session.fixes.allSatisfy { $0.mode == .noFix && $0.time == nil })
    }

    /// Sentence templates by kind, for second `s` of 10:00.
    static func sentence(_ kind: String, second s: Int) -> String {
        let t = "1000" + (s < 10 ? "0\(s)" : "\(s)")
        switch kind {
        case "GGA": return "$GPGGA,\(t),4807.038,N,01131.000,E,1,05,1.3,545.4,M,46.9,M,,"
        case "RMC": return "$GPRMC,\(t),A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W,A"
        case "GLL": return "$GPGLL,4807.038,N,01131.000,E,\(t),A,A"
        case "GSA": return "$GPGSA,A,3,04,05,,09,12,,,24,,,,,2.5,1.3,2.1"
        case "GSV1": return "$GPGSV,2,1,08,04,40,083,46,05,17,308,41,09,07,344,39,12,22,228,45"
        case "GSV2": return "$GPGSV,2,2,08,24,30,120,44,25,10,200,30,29,55,050,48,31,05,330,"
        case "VTG": return "$GPVTG,084.4,T,,M,022.4,N,041.5,K,A"
        case "GST": return "$GPGST,\(t),0.006,0.023,0.020,273.6,0.023,0.020,0.031"
        default: fatalError("no template for \(kind)")
        }
    }

    @Test("after two identical cycles, each fix comes out on its cycle's last sentence", arguments: [
        ["GGA", "GSA", "RMC"],
        ["RMC", "GGA", "GSA", "GSV1", "GSV2"],
        ["GGA", "GLL", "GSA", "GSV1", "GSV2", "RMC", "VTG"],  // Telit HE910 order: untimed VTG ends the cycle
        ["GGA", "RMC"],
    ])
    func endOfCycleLearned(layout: [String]) throws {
        let n = layout.count
        var assembler = FixAssembler()
        var emitted: [(line: Int, fix: Fix)] = []
        var line = 0
        for second in 1...5 {
            for kind in layout {
                let decoded = try SentenceParser.parse(Self.sentence(kind, second: second))
                assembler.add(decoded) { emitted.append((line, $0)) }
                line += 1
            }
        }
        var atEnd: [Fix] = []
        assembler.finish { atEnd.append($0) }

        // Cycles 1 and 2: delivered when the next cycle's first sentence shows they are over.
        // From cycle 3 on the end-of-cycle sentence is known: delivered on it, before the next cycle begins.
        #expect(emitted.map(\.line) == [n, 2 * n, 3 * n - 1, 4 * n - 1, 5 * n - 1])
        #expect(emitted.map { $0.fix.time?.millisecondsOfDay } == (1...5).map { TestNMEA.ms(10, 0, $0) })
        #expect(atEnd.isEmpty)
        // Each early fix is complete.
        #expect(emitted.allSatisfy { $0.fix.mode == .threeDimensional && isClose($0.fix.latitude, 48 + 7.038 / 60) })
    }

    @Test("the same timing through NMEADecoder: the third cycle's fix comes out before the fourth cycle starts")
    func endOfCycleThroughDecoder() {
        var session = DecoderSession()
        for second in 1...4 {
            session.send(["GGA", "GSA", "RMC"].map { Self.sentence($0, second: second) })
        }
        #expect(session.emittedAt == [3, 6, 8, 11])
        #expect(session.finish().isEmpty)
    }

    @Test("a wrong end-of-cycle guess: the epoch is delivered again, complete")
    func endOfCycleCorrected() {
        var session = DecoderSession()
        for second in 1...3 { session.send(["GGA", "RMC"].map { Self.sentence($0, second: second) }) }
        // Cycle 4 goes on after RMC with a GST of the same epoch.
        session.send(["GGA", "RMC", "GST"].map { Self.sentence($0, second: 4) })
        session.send(["GGA", "RMC", "GST"].map { Self.sentence($0, second: 5) })
        session.finish()
        let seconds = session.fixes.map { ($0.time?.millisecondsOfDay ?? 0) / 1000 - 36000 }
        #expect(seconds == [1, 2, 3, 4, 4, 5])
        // First delivery of epoch 4 without GST (HDOP-based), the second one with it.
        #expect(isClose(session.fixes[3].eph, 1.3 * 19))
        #expect(isClose(session.fixes[4].eph, 2 * (0.023 * 0.023 + 0.020 * 0.020).squareRoot()))
        #expect(isClose(session.fixes[5].eph, 2 * (0.023 * 0.023 + 0.020 * 0.020).squareRoot()))
    }

    // MARK: Error estimates

    @Test("without GST, eph = HDOP × 19 m and epv = VDOP × 23 m (gpsd UERE); DGPS: × 4.75 and × 5.75", arguments: [
        (1, 2.25, 3.25, 2.25 * 19, 3.25 * 23),
        (1, 0.9, 1.5, 0.9 * 19, 1.5 * 23),
        (2, 1.3, 1.0, 1.3 * 4.75, 1.0 * 5.75),  // Furuno capture, gpsd: eph 6.175, epv 5.750
        (4, 0.6, 0.9, 0.6 * 4.75, 0.9 * 5.75),
    ])
    func ephFromDOP(quality: Int, hdop: Double, vdop: Double, eph: Double, epv: Double) throws {
        let fixes = DecoderSession.fixes([
            "$GPGGA,123519,4807.038,N,01131.000,E,\(quality),08,\(hdop),545.4,M,46.9,M,,",
            "$GPGSA,A,3,04,05,09,12,24,25,29,31,,,,,2.0,\(hdop),\(vdop)",
        ])
        try #require(fixes.count == 1)
        #expect(isClose(fixes[0].eph, eph))
        #expect(isClose(fixes[0].epv, epv))
    }

    @Test("with GST, eph and epx/epy/epv come from its 1σ errors, doubled")
    func ephFromGST() throws {
        let fixes = DecoderSession.fixes([
            "$GPGGA,172814.0,4807.038,N,01131.000,E,1,08,1.3,545.4,M,46.9,M,,",
            "$GPGSA,A,3,04,05,09,12,24,25,29,31,,,,,2.5,1.3,2.1",
            "$GPGST,172814.0,0.006,0.023,0.020,273.6,0.023,0.020,0.031*6A",
        ])
        try #require(fixes.count == 1)
        let fix = fixes[0]
        // σlat = 0.023 m, σlon = 0.020 m, σalt = 0.031 m.
        #expect(isClose(fix.epy, 2 * 0.023))
        #expect(isClose(fix.epx, 2 * 0.020))
        #expect(isClose(fix.eph, 2 * (0.023 * 0.023 + 0.020 * 0.020).squareRoot()))  // 0.06096 m
        #expect(isClose(fix.epv, 2 * 0.031))
    }

    @Test("a GST without latitude/longitude errors leaves eph to HDOP")
    func gstWithoutErrors() throws {
        let fixes = DecoderSession.fixes([
            "$GPGGA,172814.0,4807.038,N,01131.000,E,1,08,1.3,545.4,M,46.9,M,,",
            "$GPGST,172814.0,0.006,,,,,,",
        ])
        try #require(fixes.count == 1)
        #expect(isClose(fixes[0].eph, 1.3 * 19))
    }

    @Test("Garmin PGRME gives eph and epv directly")
    func ephFromPGRME() throws {
        let fixes = DecoderSession.fixes([
            "$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W",
            "$GPGGA,123519,4807.038,N,01131.000,E,1,08,1.3,545.4,M,46.9,M,,",
            "$GPGSA,A,3,04,05,09,12,24,25,29,31,,,,,2.5,1.3,2.1",
            "$PGRME,15.0,M,22.5,M,27.0,M*1A",
        ])
        try #require(fixes.count == 1)
        #expect(isClose(fixes[0].eph, 15.0))
        #expect(isClose(fixes[0].epv, 22.5))
    }

    // MARK: Speed

    @Test("speed in m/s from RMC or VTG knots, or VTG km/h when knots are empty", arguments: [
        ("$GPVTG,054.7,T,034.4,M,005.5,N,010.2,K", metresPerSecond(knots: 5.5)),
        ("$GPVTG,054.7,T,,M,,N,010.2,K,A", 10.2 / 3.6 as Double),
        ("$GPVTG,054.7,034.4,005.5,010.2", metresPerSecond(knots: 5.5)),
    ])
    func speedFromVTG(vtg: String, speed: Double) throws {
        let fixes = DecoderSession.fixes([
            "$GPGGA,123519,4807.038,N,01131.000,E,1,08,1.3,545.4,M,46.9,M,,",
            vtg,
        ])
        try #require(fixes.count == 1)
        #expect(isClose(fixes[0].speed, speed))
        #expect(isClose(fixes[0].track, 54.7))
        #expect(isClose(metresPerSecond(knots: 1), 0.514444, 1e-6))
    }

    /// NMEA 0183 v4.11 §VTG's example: true track 54.7°, magnetic track 34.4°. gpsd 3.22 keeps the magnetic track a
    /// VTG gives (`processVTG`) and prints it as TPV.magtrack rather than track + magvar; an empty field gives none.
    @Test("VTG's magnetic track is the fix's magnetic track, and gpsd's magtrack", arguments: [
        ("$GPVTG,054.7,T,034.4,M,005.5,N,010.2,K,A", 34.4 as Double?),
        ("$GPVTG,054.7,T,,M,005.5,N,010.2,K,A", nil),
    ])
    func magneticTrackFromVTG(vtg: String, magnetic: Double?) throws {
        let fixes = DecoderSession.fixes([
            "$GPGGA,123519,4807.038,N,01131.000,E,1,08,1.3,545.4,M,46.9,M,,",
            vtg,
        ])
        try #require(fixes.count == 1)
        #expect(fixes[0].magneticTrack == magnetic)
        var model = GpsdErrorModel()
        let magtrack = model.estimates(for: fixes[0]).magneticTrack
        if let magnetic {
            #expect(magtrack == magnetic)
        } else {
            // track + gpsd's table variation at 48.1° N 11.5° E (about 2-3° east there).
            #expect(magtrack.map { $0 > 54.7 && $0 < 59 } == true, "\(String(describing: magtrack))")
        }
    }

    // MARK: Statistics

    @Test("NMEADecoder counts ignored, malformed and rejected sentences and skips them")
    func decoderStatistics() throws {
        var session = DecoderSession()
        session.send("!AIVDM,1,1,,A,B3KLehP0B@LTN6`Vl;rrBE063P06,0*5A")
        session.send("$GPTXT,01,01,02,u-blox ag - www.u-blox.com*50")
        session.send("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,54X.4,M,46.9,M,,")  // malformed
        session.send("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*48")  // bad checksum
        session.send("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47")
        session.finish()
        let stats = session.decoder.statistics
        #expect(stats.ignoredSentences == 2)
        #expect(stats.malformedSentences == 1)
        #expect(stats.framing.checksumMismatches == 1)
        #expect(stats.framing.sentences == 4)
        #expect(stats.fixes == 1)
        try #require(session.fixes.count == 1)
        #expect(isClose(session.fixes[0].altitudeMSL, 545.4))
    }
}
