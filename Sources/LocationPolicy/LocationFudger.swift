#if canImport(Glibc)
import Glibc
#endif
import LocationCore

/// Reduced accuracy, as Android's LocationFudger does it: the position is moved by an offset that is the
/// same for every client and drifts slowly, then snapped to a grid of `gridMeters`.
///
/// Not a fresh random jitter per fix — averaging would remove that. The offset is Gaussian (σ = grid/4 in
/// each axis) and takes 3 % new randomness each hour (offset ← √(1−0.03²)·offset + 0.03·new), so
/// reconnecting, or several programs pooling what they got, learn nothing more, and a stationary
/// receiver's reduced position changes rarely. The randomness comes from a secret kept in the state
/// directory, so a restart does not reveal a fresh sample. Source: AOSP
/// `services/core/java/com/android/server/location/fudger/LocationFudger.java` (constants).
public struct LocationFudger: Sendable {
    public let gridMeters: Double
    private let secret: [UInt64]
    /// Unix hour (seconds / 3600) when the secret was made: the drift starts there.
    private let originHour: Int
    private var cache: (hour: Int, north: Double, east: Double)?

    /// Android's constants: 3 % new randomness per hour.
    public static let changePerHour = 0.03
    /// Metres per degree of latitude (WGS84 mean, as Android's `APPROXIMATE_METERS_PER_DEGREE_AT_EQUATOR`).
    public static let metersPerDegree = 111_000.0

    /// - Parameters:
    ///   - gridMeters: grid step, metres (default config 2000).
    ///   - secret: 32 random bytes from the state directory.
    ///   - originHour: Unix hour of the secret's creation.
    public init(gridMeters: Double, secret: [UInt8], originHour: Int) {
        self.gridMeters = gridMeters
        var words: [UInt64] = []
        for i in stride(from: 0, to: max(secret.count, 8), by: 8) {
            var w: UInt64 = 0
            for j in 0..<8 where i + j < secret.count { w |= UInt64(secret[i + j]) << (8 * UInt64(j)) }
            words.append(w)
        }
        self.secret = words
        self.originHour = originHour
    }

    /// The offset (north, east) in metres at a Unix time.
    public mutating func offset(at unixSeconds: Double) -> (north: Double, east: Double) {
        let hour = max(Int((unixSeconds / 3600).rounded(.down)), originHour)
        if let c = cache, c.hour == hour { return (c.north, c.east) }
        var start = originHour
        var north = gaussian(0, 0) * gridMeters / 4
        var east = gaussian(0, 1) * gridMeters / 4
        if let c = cache, c.hour < hour {
            start = c.hour
            north = c.north
            east = c.east
        }
        let keep = (1 - Self.changePerHour * Self.changePerHour).squareRoot()
        var h = start
        while h < hour {
            h += 1
            let n = UInt64(h - originHour)
            north = keep * north + Self.changePerHour * gaussian(n, 0) * gridMeters / 4
            east = keep * east + Self.changePerHour * gaussian(n, 1) * gridMeters / 4
        }
        cache = (hour, north, east)
        return (north, east)
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
    public mutating func reduce(_ fix: Fix, at unixSeconds: Double) -> Fix? {
        guard fix.hasPosition, let latitude = fix.latitude, let longitude = fix.longitude else { return nil }
        let o = offset(at: unixSeconds)
        var lat = latitude + o.north / Self.metersPerDegree
        lat = min(max(lat, -89.9), 89.9)
        var lon = longitude + o.east / (Self.metersPerDegree * max(cos(lat * .pi / 180), 0.01))
        let latStep = latitudeStep
        lat = (lat / latStep).rounded() * latStep
        let lonStep = longitudeStep(atLatitude: lat)
        lon = (lon / lonStep).rounded() * lonStep
        if lon > 180 { lon -= 360 }
        if lon < -180 { lon += 360 }
        return Fix(device: fix.device, time: fix.time, mode: .twoDimensional, latitude: lat, longitude: lon,
                   eph: max(gridMeters, fix.eph ?? 0))
    }

    /// A standard normal number determined by the secret, the hour index and the axis (Box–Muller over a
    /// SplitMix64 stream keyed by the secret).
    func gaussian(_ hour: UInt64, _ axis: UInt64) -> Double {
        var state = hour &* 0x9E37_79B9_7F4A_7C15 ^ axis &* 0xC2B2_AE3D_27D4_EB4F
        for w in secret { state = mix(state ^ w) }
        let u1 = (Double(mix(state) >> 11) + 1) / 9_007_199_254_740_992  // (0, 1]: log(u1) is finite
        let u2 = Double(mix(state &+ 0x632B_E59B_D9B4_E019) >> 11) / 9_007_199_254_740_992
        return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
    }

    private func mix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
