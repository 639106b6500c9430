#if canImport(Glibc)
import Glibc
#endif
import LocationCore

/// Reduced accuracy: the position is moved by a secret offset that depends on the place, then snapped to
/// a grid of `gridMeters`.
///
/// Android's LocationFudger moves every position by one offset that drifts with time (Gaussian,
/// σ = grid/4 per axis, 3 % new randomness an hour) and snaps to the grid; because the offset drifts, a
/// stationary receiver's reports average towards the truth over months (median distance of a year's
/// mean from the truth ~520 m against ~990 m after a day, grid 2000 m). Here the offset has the same
/// size (Gaussian, σ = grid/4 per axis, `OffsetField`) but is a fixed function of the place, keyed by the
/// secret: a receiver that does not move gets the same report for ever, so there is nothing to average;
/// the offset at places more than two lattice spacings (`fieldSpacingMeters`) apart is independent, so
/// the reports of a receiver whose true track an attacker knows reveal the offset only where it went,
/// never a grid alignment that holds elsewhere. Once a position is reported it is held while the receiver
/// stays within `holdMeters` of the fix that produced it, so receiver noise near a cell edge does not
/// flip between two cells (the share of each would tell where the edge is). Reasoning, threat model and
/// measured figures: docs/SECURITY.md. Sources: AOSP `services/core/java/com/android/server/location/
/// fudger/LocationFudger.java` (grid, σ); Apple WWDC 2020 "What's new in location" (approximate location
/// is a fixed region, not noise, because noise averages out).
public struct LocationFudger: Sendable {
    /// The grid step, metres (config `reduced-grid`).
    public let gridMeters: Double
    private var field: OffsetField
    /// The fix the held report was made from (degrees; metres per degree of longitude there) and that
    /// report's snapped position (degrees).
    private var held: (latitude: Double, longitude: Double, metersPerDegreeEast: Double,
                       reduced: (latitude: Double, longitude: Double))?

    /// Metres per degree of latitude (WGS84 mean, as Android's `APPROXIMATE_METERS_PER_DEGREE_AT_EQUATOR`).
    public static let metersPerDegree = 111_000.0
    /// The offset field's lattice spacing in grid steps: 4, so the offset changes by about σ·√2 ≈ 700 m
    /// over 8 km (grid 2000 m) and cells keep about the grid's size and shape (see the tests).
    public static let fieldSpacingInGrids = 4.0

    /// - Parameters:
    ///   - gridMeters: grid step, metres (default config 2000).
    ///   - secret: 32 random bytes from the state directory; with `originHour`, the key of the offset field.
    ///   - originHour: Unix hour (seconds / 3600) of the secret's creation.
    public init(gridMeters: Double, secret: [UInt8], originHour: Int) {
        self.gridMeters = gridMeters
        var words: [UInt64] = []
        for i in stride(from: 0, to: max(secret.count, 8), by: 8) {
            var w: UInt64 = 0
            for j in 0..<8 where i + j < secret.count { w |= UInt64(secret[i + j]) << (8 * UInt64(j)) }
            words.append(w)
        }
        while words.count < 2 { words.append(0) }
        words.append(UInt64(bitPattern: Int64(originHour)))
        field = OffsetField(spacingMeters: gridMeters * Self.fieldSpacingInGrids, sigmaMeters: gridMeters / 4, key: words)
    }

    /// The offset field's lattice spacing, metres: offsets at places more than twice this apart along any
    /// Earth-centred axis are independent.
    public var fieldSpacingMeters: Double { field.spacingMeters }

    /// How far the receiver may move from the fix a report was made from before the report is made anew,
    /// metres: a twentieth of the grid, at least 25 m — well above a receiver's noise (eph of a few metres),
    /// well below the grid.
    public var holdMeters: Double { max(gridMeters / 20, 25) }

    /// The secret offset at a place, metres north and metres east (each Gaussian, σ = grid/4). The same at
    /// a place whatever the time.
    /// - Parameters:
    ///   - latitude: degrees, WGS84.
    ///   - longitude: degrees, WGS84.
    public mutating func offset(latitude: Double, longitude: Double) -> (north: Double, east: Double) {
        field.value(latitude: latitude, longitude: longitude)
    }

    /// The grid's step in latitude, degrees.
    public var latitudeStep: Double { gridMeters / Self.metersPerDegree }

    /// The grid's step in longitude at a (snapped) latitude, degrees.
    public func longitudeStep(atLatitude latitude: Double) -> Double {
        let c = max(cos(latitude * .pi / 180), 0.01)
        return gridMeters / (Self.metersPerDegree * c)
    }

    /// The reduced form of a fix: offset position snapped to the grid, `eph` at least the grid step, no
    /// altitude, speed, track, heading, climb, satellites or DOPs. Nil when the fix has no position.
    /// - Parameters:
    ///   - fix: the receiver's fix.
    ///   - unixSeconds: the wall-clock time, seconds; unused since the offset stopped depending on time,
    ///     kept so callers need not change.
    public mutating func reduce(_ fix: Fix, at unixSeconds: Double) -> Fix? {
        guard fix.hasPosition, let latitude = fix.latitude, let longitude = fix.longitude else { return nil }
        let reduced: (latitude: Double, longitude: Double)
        if let h = held, Self.within(holdMeters, of: h, latitude, longitude) {
            reduced = h.reduced
        } else {
            reduced = snapped(latitude: latitude, longitude: longitude)
            held = (latitude, longitude, Self.metersPerDegree * cos(latitude * .pi / 180), reduced)
        }
        return Fix(device: fix.device, time: fix.time, mode: .twoDimensional, latitude: reduced.latitude,
                   longitude: reduced.longitude, eph: max(gridMeters, fix.eph ?? 0))
    }

    /// The grid node for a position: the position moved by the place's offset, then rounded to the grid.
    private mutating func snapped(latitude: Double, longitude: Double) -> (latitude: Double, longitude: Double) {
        let o = field.value(latitude: latitude, longitude: longitude)
        var lat = latitude + o.north / Self.metersPerDegree
        lat = min(max(lat, -89.9), 89.9)
        var lon = longitude + o.east / (Self.metersPerDegree * max(cos(lat * .pi / 180), 0.01))
        let latStep = latitudeStep
        lat = (lat / latStep).rounded() * latStep
        let lonStep = longitudeStep(atLatitude: lat)
        lon = (lon / lonStep).rounded() * lonStep
        if lon > 180 { lon -= 360 }
        if lon < -180 { lon += 360 }
        return (lat, lon)
    }

    /// Whether a position (degrees) is within `meters` of the held fix (equirectangular at the held fix:
    /// exact enough over a few hundred metres).
    private static func within(_ meters: Double, of h: (latitude: Double, longitude: Double, metersPerDegreeEast: Double,
                                                      reduced: (latitude: Double, longitude: Double)),
                               _ latitude: Double, _ longitude: Double) -> Bool {
        var dLon = abs(longitude - h.longitude)
        if dLon > 180 { dLon = 360 - dLon }
        let north = (latitude - h.latitude) * metersPerDegree
        let east = dLon * h.metersPerDegreeEast
        return north * north + east * east < meters * meters
    }
}
