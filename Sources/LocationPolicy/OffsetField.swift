#if canImport(Glibc)
import Glibc
#endif

/// A secret offset that depends on the place, not on the time: a smooth random field over the Earth's
/// surface, the same at a place forever, independent between places far apart.
///
/// The field is value noise on a cubic lattice laid over Earth-centred, Earth-fixed (ECEF) coordinates:
/// every lattice node carries two standard normal numbers (north, east) drawn from a keyed hash of the
/// secret and the node (SipHash-2-4, a pseudo-random function); a position takes the trilinear blend of its lattice cube's eight nodes, divided
/// by the root of the sum of the squared weights so that the blend is again exactly N(0, 1) at every
/// position (the node values are independent). Working in ECEF keeps the spacing the same in metres at
/// every latitude, with no seam at the antimeridian or the poles.
///
/// Two positions whose lattice cubes share no node (true whenever they are more than two spacings apart
/// along any ECEF axis) get independent values: what is learnt of the field at one place says nothing
/// of it there. Sources: value noise as in K. Perlin, "An image synthesizer", SIGGRAPH 1985 (lattice
/// noise); ECEF from the WGS84 sphere approximation (radius `earthRadiusMeters`).
struct OffsetField: Sendable {
    /// Lattice spacing, metres.
    let spacingMeters: Double
    /// Standard deviation of each component, metres.
    let sigmaMeters: Double
    /// SipHash-2-4 keyed by the first two key words, with the rest of the key already absorbed.
    private let keyed: SipHash24
    /// The last lattice cube's node values (north, east per node), so that a receiver moving inside one
    /// cube costs no hashing.
    private var cache: (cube: SIMD3<Int>, north: [Double], east: [Double])?

    /// Mean Earth radius, metres (IUGG R1). Only the shape of the lattice depends on it.
    static let earthRadiusMeters = 6_371_008.8

    init(spacingMeters: Double, sigmaMeters: Double, key: [UInt64]) {
        self.spacingMeters = spacingMeters
        self.sigmaMeters = sigmaMeters
        var h = SipHash24(key: (key.first ?? 0, key.dropFirst().first ?? 0))
        for w in key.dropFirst(2) { h.absorb(w) }
        keyed = h
    }

    /// The offset at a position, metres north and metres east.
    /// - Parameters:
    ///   - latitude: degrees, WGS84.
    ///   - longitude: degrees, WGS84.
    mutating func value(latitude: Double, longitude: Double) -> (north: Double, east: Double) {
        let phi = latitude * .pi / 180, lambda = longitude * .pi / 180
        let scale = Self.earthRadiusMeters / spacingMeters
        let p = SIMD3(cos(phi) * cos(lambda), cos(phi) * sin(lambda), sin(phi)) * scale
        let base = SIMD3(p.x.rounded(.down), p.y.rounded(.down), p.z.rounded(.down))
        let f = p - base
        let cube = SIMD3(Int(base.x), Int(base.y), Int(base.z))
        let nodes: (north: [Double], east: [Double])
        if let c = cache, c.cube == cube {
            nodes = (c.north, c.east)
        } else {
            var north: [Double] = [], east: [Double] = []
            north.reserveCapacity(8)
            east.reserveCapacity(8)
            for corner in 0..<8 {
                let node = cube &+ SIMD3(corner & 1, (corner >> 1) & 1, (corner >> 2) & 1)
                let z = normals(node)
                north.append(z.north)
                east.append(z.east)
            }
            cache = (cube, north, east)
            nodes = (north, east)
        }
        var north = 0.0, east = 0.0, squares = 0.0
        for corner in 0..<8 {
            let wx = corner & 1 == 1 ? f.x : 1 - f.x
            let wy = (corner >> 1) & 1 == 1 ? f.y : 1 - f.y
            let wz = (corner >> 2) & 1 == 1 ? f.z : 1 - f.z
            let w = wx * wy * wz
            north += w * nodes.north[corner]
            east += w * nodes.east[corner]
            squares += w * w
        }
        // Σw = 1 over the eight corners, so Σw² ≥ 1/8: the division is always defined.
        let norm = sigmaMeters / squares.squareRoot()
        return (north * norm, east * norm)
    }

    /// Two independent standard normal numbers (north, east) for a lattice node: Box–Muller over the two
    /// 32-bit halves of one SipHash-2-4 output (its cosine and sine branches), so that values learnt at
    /// some nodes say nothing about the key, hence nothing about other nodes.
    private func normals(_ node: SIMD3<Int>) -> (north: Double, east: Double) {
        var h = keyed
        h.absorb(UInt64(bitPattern: Int64(node.x)))
        h.absorb(UInt64(bitPattern: Int64(node.y)))
        h.absorb(UInt64(bitPattern: Int64(node.z)))
        let x = h.finish()
        let u1 = (Double(x >> 32) + 1) / 4_294_967_296  // (0, 1]: log(u1) is finite
        let u2 = Double(x & 0xFFFF_FFFF) / 4_294_967_296
        let r = (-2 * log(u1)).squareRoot()
        return (r * cos(2 * .pi * u2), r * sin(2 * .pi * u2))
    }
}

/// SipHash-2-4 over whole little-endian 64-bit words under a 128-bit key (J.-P. Aumasson,
/// D. J. Bernstein, "SipHash: a fast short-input PRF", INDOCRYPT 2012; the paper's reference vectors
/// are checked by the tests). A value type: absorb a common prefix once, copy, absorb the rest.
struct SipHash24: Sendable {
    private var v0, v1, v2, v3: UInt64
    private var words = 0

    init(key: (UInt64, UInt64)) {
        v0 = key.0 ^ 0x736F_6D65_7073_6575
        v1 = key.1 ^ 0x646F_7261_6E64_6F6D
        v2 = key.0 ^ 0x6C79_6765_6E65_7261
        v3 = key.1 ^ 0x7465_6462_7974_6573
    }

    mutating func absorb(_ m: UInt64) {
        v3 ^= m
        round()
        round()
        v0 ^= m
        words &+= 1
    }

    /// The hash of the words absorbed so far.
    func finish() -> UInt64 {
        var h = self
        let last = UInt64(truncatingIfNeeded: words &* 8) << 56
        h.v3 ^= last
        h.round()
        h.round()
        h.v0 ^= last
        h.v2 ^= 0xFF
        for _ in 0..<4 { h.round() }
        return h.v0 ^ h.v1 ^ h.v2 ^ h.v3
    }

    private mutating func round() {
        v0 &+= v1; v1 = Self.rotate(v1, 13); v1 ^= v0; v0 = Self.rotate(v0, 32)
        v2 &+= v3; v3 = Self.rotate(v3, 16); v3 ^= v2
        v0 &+= v3; v3 = Self.rotate(v3, 21); v3 ^= v0
        v2 &+= v1; v1 = Self.rotate(v1, 17); v1 ^= v2; v2 = Self.rotate(v2, 32)
    }

    private static func rotate(_ x: UInt64, _ bits: UInt64) -> UInt64 { (x << bits) | (x >> (64 - bits)) }
}
