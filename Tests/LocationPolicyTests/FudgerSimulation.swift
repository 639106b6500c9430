#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationPolicy
import TestSupport

/// What the simulations drive: the fudger under test, or a reference design.
protocol Reducer {
    mutating func reduce(_ fix: Fix, at unixSeconds: Double) -> Fix?
}

extension LocationFudger: Reducer {}

/// TestSupport's SplitMix64: seeded, so every simulated user and secret is the same on every run.
typealias SeededGenerator = SplitMix64

extension SplitMix64 {
    /// A standard normal number (Box–Muller).
    mutating func normal() -> Double {
        let u1 = (Double(next() >> 11) + 1) * 0x1p-53  // (0, 1]: log(u1) is finite
        let u2 = Double(next() >> 11) * 0x1p-53
        return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
    }

    /// 32 random bytes, as the daemon keeps in `fudger.secret`.
    mutating func secret() -> [UInt8] { (0..<32).map { _ in UInt8.random(in: 0...255, using: &self) } }

    /// A place with |latitude| ≤ 60°, degrees.
    mutating func place() -> (latitude: Double, longitude: Double) {
        (Double.random(in: -60...60, using: &self), Double.random(in: -180..<180, using: &self))
    }
}

/// Geometry and statistics the simulations share. Local metres are north/east of a reference place on the
/// fudger's own sphere (`LocationFudger.metersPerDegree`).
enum Simulation {
    static let m = LocationFudger.metersPerDegree
    /// 2027-01-15T08:00Z, seconds: after every secret's origin hour.
    static let t0 = 1_800_000_000.0
    /// The default `reduced-interval`, seconds.
    static let reportInterval = 900.0
    static let reportsPerDay = 96

    static func fix(_ lat: Double, _ lon: Double) -> Fix {
        Fix(time: UTCTime(date: CivilDate(year: 2027, month: 1, day: 15), millisecondsOfDay: 0), mode: .threeDimensional,
            latitude: lat, longitude: lon, altitudeMSL: 12, speed: 0, eph: 4)
    }

    /// A place moved by (north, east) metres.
    static func moved(_ lat: Double, _ lon: Double, north: Double, east: Double) -> (latitude: Double, longitude: Double) {
        (lat + north / m, lon + east / (m * cos(lat * .pi / 180)))
    }

    /// Where a report is, metres north and east of the truth.
    static func residual(_ r: Fix, _ lat: Double, _ lon: Double) -> (north: Double, east: Double) {
        var dLon = (r.longitude ?? lon) - lon
        if dLon > 180 { dLon -= 360 }
        if dLon < -180 { dLon += 360 }
        return (((r.latitude ?? lat) - lat) * m, dLon * m * cos(lat * .pi / 180))
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let s = values.sorted()
        guard !s.isEmpty else { return .nan }
        return s[min(s.count - 1, Int((Double(s.count - 1) * p).rounded()))]
    }

    static func format(_ x: Double) -> String { String(Int(x.rounded())) }

    /// The grid node of a position moved by (north, east) metres, as Android snaps (and as the fudger
    /// does): the reference designs below use it.
    static func snap(_ lat: Double, _ lon: Double, north: Double, east: Double, grid: Double) -> Fix {
        var la = min(max(lat + north / m, -89.9), 89.9)
        var lo = lon + east / (m * max(cos(la * .pi / 180), 0.01))
        let latStep = grid / m
        la = (la / latStep).rounded() * latStep
        let lonStep = grid / (m * max(cos(la * .pi / 180), 0.01))
        lo = (lo / lonStep).rounded() * lonStep
        return Fix(mode: .twoDimensional, latitude: la, longitude: lo, eph: grid)
    }
}

/// Android's design, for comparison: one offset for every place, Gaussian σ = grid/4 per axis, 3 % new
/// randomness an hour (AOSP LocationFudger constants). The randomness comes from a seeded generator.
struct DriftingFudger: Reducer {
    let grid: Double
    var generator: SeededGenerator
    var hour: Int
    var north: Double, east: Double

    init(grid: Double, generator: SeededGenerator, hour: Int) {
        self.grid = grid
        self.generator = generator
        self.hour = hour
        north = self.generator.normal() * grid / 4
        east = self.generator.normal() * grid / 4
    }

    mutating func reduce(_ fix: Fix, at unixSeconds: Double) -> Fix? {
        let now = Int((unixSeconds / 3600).rounded(.down))
        let keep = (1 - 0.03 * 0.03).squareRoot()
        while hour < now {
            hour += 1
            north = keep * north + 0.03 * generator.normal() * grid / 4
            east = keep * east + 0.03 * generator.normal() * grid / 4
        }
        guard let lat = fix.latitude, let lon = fix.longitude else { return nil }
        return Simulation.snap(lat, lon, north: north, east: east, grid: grid)
    }
}

/// The obvious fix of the averaging: Android's offset frozen for ever. Stationary reports no longer
/// average, but one offset serves every place, so learning it once reveals the grid everywhere.
struct FrozenFudger: Reducer {
    let grid: Double
    let north: Double, east: Double

    mutating func reduce(_ fix: Fix, at unixSeconds: Double) -> Fix? {
        guard let lat = fix.latitude, let lon = fix.longitude else { return nil }
        return Simulation.snap(lat, lon, north: north, east: east, grid: grid)
    }
}
