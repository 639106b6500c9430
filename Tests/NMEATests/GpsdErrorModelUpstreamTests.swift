import LocationCore
import LocationWire
import Testing

/// Behind a gpsd receiver, each fix carries the upstream gpsd's SKY DOPs as they stand (`Fix.dopIsComplete`). The
/// values are those of a real gpsd 3.22 replaying haicom-305N under gpsfake, as a new user's gpspipe showed them
/// when the capture looped: `"hdop":1.10,…,"tdop":1.56,"gdop":3.06`, then, with 3 satellites used, `"vdop":0.00,
/// "hdop":17.00,"pdop":17.00` and no tdop or gdop. The front had kept 1.56 and 3.06 from the earlier SKY.
@Suite("gpsd error model behind a gpsd receiver")
struct GpsdErrorModelUpstreamTests {
    static func fix(_ dop: DilutionOfPrecision, complete: Bool, used: Int) -> Fix {
        var fix = Fix(mode: .threeDimensional, latitude: -27.21, longitude: 153.05, altitudeMSL: 3.0, altitudeHAE: 45.2,
                      dop: dop)
        fix.time = UTCTime(date: CivilDate(year: 2026, month: 11, day: 22), millisecondsOfDay: 35_585_802 + used * 1000)
        fix.satellites = (1...12).map { (prn: Int) -> Satellite in
            let elevation = Double(10 + prn * 5), azimuth = Double(prn * 30)
            return Satellite(prn: prn, elevation: elevation, azimuth: azimuth, used: prn <= used)
        }
        fix.dopIsComplete = complete
        return fix
    }

    @Test("a DOP the upstream gpsd's SKY leaves out is left out, not kept from its earlier SKY")
    func upstreamDOPsAsTheyStand() {
        let before = DilutionOfPrecision(horizontal: 1.1, vertical: 2.2, position: 2.5, time: 1.56, geometric: 3.06)
        let after = DilutionOfPrecision(horizontal: 17, vertical: 0, position: 17)
        var model = GpsdErrorModel()
        _ = model.estimates(for: Self.fix(before, complete: true, used: 6))
        let e = model.estimates(for: Self.fix(after, complete: true, used: 3))
        #expect(e.dop.hdop == 17 && e.dop.pdop == 17 && e.dop.vdop == 0)
        #expect(e.dop.tdop == nil && e.dop.gdop == nil, "tdop \(String(describing: e.dop.tdop)), gdop \(String(describing: e.dop.gdop))")
        // From NMEA sentences (GSA gives no tdop/gdop), gpsd keeps a reported DOP in its store: unchanged.
        var nmea = GpsdErrorModel()
        _ = nmea.estimates(for: Self.fix(before, complete: false, used: 6))
        #expect(nmea.estimates(for: Self.fix(after, complete: false, used: 3)).dop.tdop == 1.56)
    }
}
