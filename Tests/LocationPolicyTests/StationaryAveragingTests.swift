#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationPolicy
import Testing

/// The averaging attack on a receiver that does not move (docs/SECURITY.md, "Averaging"). Each simulated
/// user sits at a random place (|latitude| ≤ 60°) with its own random secret; its receiver reports the
/// place plus Gaussian noise of 3 m per axis; the attacker gets one reduced report every 15 min (the
/// default `reduced-interval`, fixed cadence) for a year and averages them in local metres. The figure is
/// the distance between that mean and the truth after one day (96 reports) and after a year (35 040).
@Suite("Reduced accuracy: a stationary receiver's reports do not average towards the truth")
struct StationaryAveragingTests {
    static let users = 200
    static let grid = 2000.0

    /// Distances (metres) of each user's mean report from its true place, after a day and after a year.
    static func means<R: Reducer>(seed: UInt64, users: Int = users, make: (inout SeededGenerator) -> R) -> (day: [Double], year: [Double]) {
        var generator = SeededGenerator(seed: seed)
        // Receiver noise from a table of 4096 normal numbers walked at a pseudo-random stride: the same
        // statistics as drawing anew, a fraction of the cost in a debug build.
        let noise = (0..<4096).map { _ in 3 * generator.normal() }
        var day: [Double] = [], year: [Double] = []
        let reports = 365 * Simulation.reportsPerDay
        for _ in 0..<users {
            let place = generator.place()
            let metersPerDegreeEast = Simulation.m * cos(place.latitude * .pi / 180)
            var reducer = make(&generator)
            var input = Simulation.fix(place.latitude, place.longitude)
            var north = 0.0, east = 0.0
            var j = Int(generator.next() & 4095)
            for k in 0..<reports {
                j = (j &+ 2741) & 4095
                input.latitude = place.latitude + noise[j] / Simulation.m
                input.longitude = place.longitude + noise[(j &+ 1) & 4095] / metersPerDegreeEast
                let t = Simulation.t0 + Double(k) * Simulation.reportInterval
                guard let r = reducer.reduce(input, at: t) else { continue }
                north += ((r.latitude ?? place.latitude) - place.latitude) * Simulation.m
                var dLon = (r.longitude ?? place.longitude) - place.longitude
                if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
                east += dLon * metersPerDegreeEast
                if k + 1 == Simulation.reportsPerDay {
                    day.append((north * north + east * east).squareRoot() / Double(k + 1))
                }
            }
            year.append((north * north + east * east).squareRoot() / Double(reports))
        }
        return (day, year)
    }

    static func summary(_ name: String, _ m: (day: [Double], year: [Double])) -> String {
        "\(name): mean's distance from the truth, median over \(m.year.count) users: day \(Simulation.format(Simulation.percentile(m.day, 0.5))) m, "
            + "year \(Simulation.format(Simulation.percentile(m.year, 0.5))) m; 10th percentile: day "
            + "\(Simulation.format(Simulation.percentile(m.day, 0.1))) m, year \(Simulation.format(Simulation.percentile(m.year, 0.1))) m"
    }

    @Test("a year of reports, one per 15 min: the mean stays as far from the truth as a day's (median and 10th percentile)")
    func placeKeyedOffsetDoesNotAverage() {
        let m = Self.means(seed: 12) { g in
            LocationFudger(gridMeters: Self.grid, secret: g.secret(), originHour: Int(Simulation.t0 / 3600) - Int.random(in: 0..<20_000, using: &g))
        }
        print(Self.summary("LocationFudger (offset keyed by place)", m))
        let dayMedian = Simulation.percentile(m.day, 0.5), yearMedian = Simulation.percentile(m.year, 0.5)
        let dayP10 = Simulation.percentile(m.day, 0.1), yearP10 = Simulation.percentile(m.year, 0.1)
        #expect(yearMedian >= 0.9 * dayMedian, "median: year \(yearMedian) m, day \(dayMedian) m")
        #expect(yearP10 >= 0.9 * dayP10, "10th percentile: year \(yearP10) m, day \(dayP10) m")
        // A single report is a grid node offset by σ = grid/4 per axis: its distance from the truth has a
        // median near 0.45 grid and a 10th percentile near 0.17 grid; the year's must not fall below
        // that shape (it was 0.08 grid with Android's drift).
        #expect(yearMedian >= 0.4 * Self.grid, "median \(yearMedian) m")
        #expect(yearP10 >= 0.12 * Self.grid, "10th percentile \(yearP10) m")
    }

    @Test("the same measurement sees Android's drifting offset sharpen (the attack the fudger must resist)")
    func driftingOffsetAverages() {
        let m = Self.means(seed: 12, users: 100) { g in
            DriftingFudger(grid: Self.grid, generator: SeededGenerator(seed: g.next()), hour: Int(Simulation.t0 / 3600) - Int.random(in: 0..<20_000, using: &g))
        }
        print(Self.summary("Android's drifting offset (reference)", m))
        let dayMedian = Simulation.percentile(m.day, 0.5), yearMedian = Simulation.percentile(m.year, 0.5)
        #expect(yearMedian < 0.8 * dayMedian, "median: year \(yearMedian) m, day \(dayMedian) m")
    }
}
