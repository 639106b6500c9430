import LocationCore
@testable import LocationWire
import Testing

/// gpsd's error model keeps the last satellite geometry's solution (`GpsdDOP.Geometry`) and reuses it while
/// the used satellites keep their directions: the reuse must never change a figure.
@Suite("gpsd DOP geometry kept from fix to fix")
struct GpsdGeometryCacheTests {
    @Test("over every capture, the kept solution equals one worked out afresh at each fix, and is reused on most")
    func keptEqualsFresh() throws {
        var fixes = 0, reused = 0, solved = 0
        for name in Captures.names {
            var kept = GpsdDOP.Geometry()
            var previous: [GpsdDOP.LineOfSight]?
            for fix in Captures.decode(try Captures.bytes(name)) {
                var fresh = GpsdDOP.Geometry()
                let expected = fresh.losInverse(fix.satellites)
                let actual = kept.losInverse(fix.satellites)
                #expect(actual.map { [$0.0, $0.1, $0.2, $0.3] } == expected.map { [$0.0, $0.1, $0.2, $0.3] },
                        "\(name) \(fix.time.map(\.iso8601) ?? "-")")
                let directions = fix.satellites.compactMap(GpsdDOP.LineOfSight.init)
                if directions.count >= 4 {
                    solved += 1
                    if directions == previous { reused += 1 }
                }
                previous = directions
                fixes += 1
            }
        }
        // Receivers report elevation and azimuth in whole degrees: most consecutive fixes share a geometry.
        #expect(fixes > 1000 && solved > 500 && reused * 2 > solved, "\(fixes) fixes, \(solved) with a geometry, \(reused) as the one before")
        print("geometry: \(fixes) fixes, \(solved) with four or more qualifying satellites, \(reused) the same as the fix before")
    }
}
