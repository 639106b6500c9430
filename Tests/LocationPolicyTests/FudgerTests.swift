import LocationCore
import LocationPolicy
import Testing

@Suite("Reduced accuracy (location fudger)")
struct FudgerTests {
    static let secret: [UInt8] = (0..<32).map { UInt8(($0 * 37 + 11) & 0xFF) }
    static let t0 = 1_800_000_000.0

    static func fix(_ lat: Double, _ lon: Double) -> Fix {
        Fix(time: UTCTime(date: CivilDate(year: 2027, month: 1, day: 15), millisecondsOfDay: 0), mode: .threeDimensional,
            latitude: lat, longitude: lon, altitudeMSL: 12, altitudeHAE: 50, speed: 3, track: 90, climb: 0.2, heading: 91,
            satellitesUsed: 9, dop: DilutionOfPrecision(horizontal: 0.9), eph: 4)
    }

    static func onGrid(_ v: Double, _ step: Double) -> Bool {
        let k = (v / step).rounded()
        return abs(v - k * step) < 1e-9
    }

    @Test("10 000 fixes: every position on the grid, no forbidden field, eph ≥ grid")
    func gridAndFields() {
        var fudger = LocationFudger(gridMeters: 2000, secret: Self.secret, originHour: Int(Self.t0 / 3600))
        var lat = -27.2108, lon = 153.0522
        for i in 0..<10_000 {
            lat += 0.00013 * Double((i % 7) - 3)
            lon += 0.00011 * Double((i % 5) - 2)
            let r = fudger.reduce(Self.fix(lat, lon), at: Self.t0 + Double(i))!
            #expect(Self.onGrid(r.latitude!, fudger.latitudeStep))
            #expect(Self.onGrid(r.longitude!, fudger.longitudeStep(atLatitude: r.latitude!)))
            #expect(r.altitudeMSL == nil && r.altitudeHAE == nil && r.speed == nil && r.track == nil && r.heading == nil)
            #expect(r.climb == nil && r.satellitesUsed == nil && r.satellites.isEmpty && r.dop.isEmpty && r.epv == nil)
            #expect(r.eph! >= 2000)
        }
    }

    @Test("two fudgers with the same secret (two clients, or a restart) give identical positions")
    func sameForEveryone() {
        var a = LocationFudger(gridMeters: 2000, secret: Self.secret, originHour: Int(Self.t0 / 3600))
        var b = LocationFudger(gridMeters: 2000, secret: Self.secret, originHour: Int(Self.t0 / 3600))
        for i in 0..<100 {
            let f = Self.fix(48.15 + Double(i) * 0.001, 11.58)
            #expect(a.reduce(f, at: Self.t0 + Double(i) * 60) == b.reduce(f, at: Self.t0 + Double(i) * 60))
        }
    }

    @Test("100 reconnects against a stationary receiver within one drift period all get the same position")
    func stationaryWithinHour() {
        let hourStart = (Self.t0 / 3600).rounded(.down) * 3600
        var positions = Set<String>()
        for i in 0..<100 {
            var f = LocationFudger(gridMeters: 2000, secret: Self.secret, originHour: Int(Self.t0 / 3600) - 100)
            let r = f.reduce(Self.fix(50.840203, 4.34711), at: hourStart + Double(i) * 30)!
            positions.insert("\(r.latitude!),\(r.longitude!)")
        }
        #expect(positions.count == 1)
    }

    @Test("over a simulated day the distinct positions stay within one grid step of each other")
    func driftOverADay() {
        var f = LocationFudger(gridMeters: 2000, secret: Self.secret, originHour: Int(Self.t0 / 3600))
        var points: [(Double, Double)] = []
        for minute in stride(from: 0, to: 24 * 60, by: 5) {
            let r = f.reduce(Self.fix(50.840203, 4.34711), at: Self.t0 + Double(minute) * 60)!
            if !points.contains(where: { $0.0 == r.latitude! && $0.1 == r.longitude! }) { points.append((r.latitude!, r.longitude!)) }
        }
        for a in points {
            for b in points {
                #expect(abs(a.0 - b.0) <= f.latitudeStep + 1e-9)
                #expect(abs(a.1 - b.1) <= f.longitudeStep(atLatitude: max(abs(a.0), abs(b.0))) + 1e-9)
            }
        }
    }

    @Test("the offset is not zero and is about grid/4 in size")
    func offsetSize() {
        var total = 0.0
        for s in 0..<200 {
            var f = LocationFudger(gridMeters: 2000, secret: (0..<32).map { UInt8((s * 13 + $0 * 7) & 0xFF) }, originHour: 0)
            let o = f.offset(latitude: 50.840203, longitude: 4.34711)
            total += o.north * o.north + o.east * o.east
        }
        let rms = (total / 400).squareRoot()
        #expect(rms > 300 && rms < 700, "rms offset per axis \(rms) m")
    }

    @Test("a stationary receiver gets the same report a year later, after a restart: nothing to average")
    func samePlaceSameReport() {
        for i in 0..<50 {
            let f = Self.fix(-60 + Double(i) * 2.4, -170 + Double(i) * 6.9)
            var before = LocationFudger(gridMeters: 2000, secret: Self.secret, originHour: Int(Self.t0 / 3600))
            var after = LocationFudger(gridMeters: 2000, secret: Self.secret, originHour: Int(Self.t0 / 3600))
            let r1 = before.reduce(f, at: Self.t0)
            let r2 = after.reduce(f, at: Self.t0 + 365 * 86_400)
            #expect(r1?.latitude == r2?.latitude && r1?.longitude == r2?.longitude)
        }
    }

    @Test("receiver noise across a cell edge keeps one report; moving on past the hold distance makes a new one")
    func holdAtAnEdge() throws {
        // Find where the reported latitude changes along a meridian, probing with fresh fudgers (no hold).
        let start = (latitude: 47.3, longitude: 8.5)
        var edge: Double?
        var previous: Double?
        for metre in 0..<2500 {
            var probe = LocationFudger(gridMeters: 2000, secret: Self.secret, originHour: 0)
            let lat = start.latitude + Double(metre) / LocationFudger.metersPerDegree
            let r = probe.reduce(Self.fix(lat, start.longitude), at: Self.t0)?.latitude
            if let p = previous, p != r {
                edge = lat
                break
            }
            previous = r
        }
        let edgeLatitude = try #require(edge)
        var f = LocationFudger(gridMeters: 2000, secret: Self.secret, originHour: 0)
        var positions = Set<String>()
        for i in 0..<200 {
            let noise = (i % 2 == 0 ? -3.0 : 3.0) / LocationFudger.metersPerDegree
            let r = f.reduce(Self.fix(edgeLatitude + noise, start.longitude), at: Self.t0 + Double(i))
            positions.insert("\(r?.latitude ?? 0),\(r?.longitude ?? 0)")
        }
        #expect(positions.count == 1)
        let away = edgeLatitude + (f.holdMeters + 200) / LocationFudger.metersPerDegree
        let moved = f.reduce(Self.fix(away, start.longitude), at: Self.t0 + 300)
        #expect(moved != nil)
        var fresh = LocationFudger(gridMeters: 2000, secret: Self.secret, originHour: 0)
        #expect(moved == fresh.reduce(Self.fix(away, start.longitude), at: Self.t0 + 300))
    }
}
