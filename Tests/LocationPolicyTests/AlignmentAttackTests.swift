#if canImport(Glibc)
import Glibc
#endif
import LocationCore
@testable import LocationPolicy
import Testing

/// The alignment attack on a moving receiver (docs/SECURITY.md, "Alignment"). Each simulated user has
/// its own secret and home (|latitude| ≤ 60°) and spends four weeks driving (8–25 m/s) or walking
/// (1.4 m/s) between random places within 15 km of home, staying 0–4 h at each; the attacker gets one
/// reduced report every 15 min and knows the true position at each report.
///
/// The measurement. A report at true position p is the grid node of p moved by the secret offset w(p),
/// so each report confines each component of w(p) to an interval one grid step wide centred on
/// (report − p). The attacker's estimate of the offset at a place q is the centre of the intersection of
/// the intervals it holds for q — all of them if it assumes one offset everywhere (Android's design,
/// frozen), only those from reports within 1 km of q otherwise — or their mean if they do not
/// intersect. Its error is the distance in metres between that estimate and the true w(q). Chance is the
/// error of the blind guess (0, 0), the prior's mean: the design is public, the secret is not. "No better
/// than chance" is: at places 100–300 km from home, the median error ≥ 0.9 × chance's, and even scaled by
/// the best factor in hindsight (least squares over all users, per component) the estimate leaves
/// ≥ 0.9 of chance's root-mean-square error.
@Suite("Reduced accuracy: a moving receiver's reports do not reveal the grid's alignment elsewhere")
struct AlignmentAttackTests {
    static let users = 40
    static let grid = 2000.0
    static let days = 28

    /// One report as the attacker sees it: the true position in metres north/east of home, and the
    /// centre of the interval each offset component must lie in, metres.
    struct Observation {
        let north, east: Double
        let offsetNorth, offsetEast: Double
    }

    /// Four weeks of true positions at the report times, metres north/east of home.
    static func route(_ g: inout SeededGenerator) -> [(north: Double, east: Double)] {
        var north = 0.0, east = 0.0, target = (north: 0.0, east: 0.0), speed = 0.0, stay = 0
        var track: [(north: Double, east: Double)] = []
        for _ in 0..<(days * Simulation.reportsPerDay) {
            track.append((north, east))
            if stay > 0 {
                stay -= 1
                continue
            }
            let dn = target.north - north, de = target.east - east
            let left = (dn * dn + de * de).squareRoot(), step = speed * Simulation.reportInterval
            if left <= step {
                (north, east) = target
                stay = Int.random(in: 0...16, using: &g)
                let r = 15_000 * Double.random(in: 0...1, using: &g).squareRoot(), a = Double.random(in: 0..<(2 * .pi), using: &g)
                target = (r * cos(a), r * sin(a))
                speed = Double.random(in: 0...1, using: &g) < 0.7 ? Double.random(in: 8...25, using: &g) : 1.4
            } else {
                north += dn / left * step
                east += de / left * step
            }
        }
        return track
    }

    /// The attacker's estimate from intervals, metres north and east; nil without observations.
    static func estimate(_ observations: [Observation]) -> (north: Double, east: Double)? {
        guard !observations.isEmpty else { return nil }
        let half = grid / 2 + 5  // the east interval's width varies by metres with latitude
        func centre(_ values: [Double]) -> Double {
            let lo = values.map { $0 - half }.max() ?? 0, hi = values.map { $0 + half }.min() ?? 0
            return lo <= hi ? (lo + hi) / 2 : values.reduce(0, +) / Double(values.count)
        }
        return (centre(observations.map(\.offsetNorth)), centre(observations.map(\.offsetEast)))
    }

    static func observe<R: Reducer>(_ reducer: inout R, home: (latitude: Double, longitude: Double),
                                    track: [(north: Double, east: Double)]) -> [Observation] {
        var out: [Observation] = []
        for (k, p) in track.enumerated() {
            let at = Simulation.moved(home.latitude, home.longitude, north: p.north, east: p.east)
            let t = Simulation.t0 + Double(k) * Simulation.reportInterval
            guard let r = reducer.reduce(Simulation.fix(at.latitude, at.longitude), at: t) else { continue }
            let d = Simulation.residual(r, at.latitude, at.longitude)
            out.append(Observation(north: p.north, east: p.east, offsetNorth: d.north, offsetEast: d.east))
        }
        return out
    }

    /// Errors of the attacker and of chance, and (estimate, truth) pairs per component, metres.
    struct Tally {
        var attacker: [Double] = [], chance: [Double] = []
        var pairs: [(estimate: Double, truth: Double)] = []

        mutating func add(_ e: (north: Double, east: Double), truth w: (north: Double, east: Double)) {
            attacker.append(((e.north - w.north) * (e.north - w.north) + (e.east - w.east) * (e.east - w.east)).squareRoot())
            chance.append((w.north * w.north + w.east * w.east).squareRoot())
            pairs += [(e.north, w.north), (e.east, w.east)]
        }

        var medianRatio: Double { Simulation.percentile(attacker, 0.5) / Simulation.percentile(chance, 0.5) }

        /// RMS error of the estimate scaled by the least-squares factor, over chance's RMS error.
        var bestScaledRatio: Double {
            let ee = pairs.reduce(0) { $0 + $1.estimate * $1.estimate }, ew = pairs.reduce(0) { $0 + $1.estimate * $1.truth }
            let lambda = ee > 0 ? ew / ee : 0
            let residual = pairs.reduce(0) { $0 + ($1.truth - lambda * $1.estimate) * ($1.truth - lambda * $1.estimate) }
            return (residual / pairs.reduce(0) { $0 + $1.truth * $1.truth }).squareRoot()
        }

        func summary(_ name: String) -> String {
            "\(name): attacker's median error \(Simulation.format(Simulation.percentile(attacker, 0.5))) m, chance's "
                + "\(Simulation.format(Simulation.percentile(chance, 0.5))) m (ratio \(Double(Int(medianRatio * 100)) / 100)); "
                + "best-scaled RMS ratio \(Double(Int(bestScaledRatio * 100)) / 100)"
        }
    }

    @Test("four weeks of a known track: the offset is learnt where the receiver went, and nowhere else")
    func placeKeyedOffset() {
        var g = SeededGenerator(seed: 1212)
        var far = Tally(), near = Tally(), frozen = Tally()
        for _ in 0..<Self.users {
            let home = g.place()
            var fudger = LocationFudger(gridMeters: Self.grid, secret: g.secret(), originHour: Int(Simulation.t0 / 3600) - 1000)
            let track = Self.route(&g)
            let observations = Self.observe(&fudger, home: home, track: track)
            guard let everywhere = Self.estimate(observations) else { continue }
            for _ in 0..<10 {
                // Far: 100–300 km from home, 85 km or more from the track: no lattice node in common (2 × 8 km).
                let r = Double.random(in: 100_000...300_000, using: &g), a = Double.random(in: 0..<(2 * .pi), using: &g)
                let q = Simulation.moved(home.latitude, home.longitude, north: r * cos(a), east: r * sin(a))
                far.add(everywhere, truth: fudger.offset(latitude: q.latitude, longitude: q.longitude))
                // Near: within 300 m of a place the receiver reported from.
                let o = observations[Int.random(in: 0..<observations.count, using: &g)]
                let n = o.north + Double.random(in: -300...300, using: &g), e = o.east + Double.random(in: -300...300, using: &g)
                let local = observations.filter { ($0.north - n) * ($0.north - n) + ($0.east - e) * ($0.east - e) < 1_000_000 }
                let p = Simulation.moved(home.latitude, home.longitude, north: n, east: e)
                if let estimate = Self.estimate(local) {
                    near.add(estimate, truth: fudger.offset(latitude: p.latitude, longitude: p.longitude))
                }
            }
            // The same attack on Android's offset frozen for ever (one offset for every place).
            var frozenFudger = FrozenFudger(grid: Self.grid, north: Self.grid / 4 * g.normal(), east: Self.grid / 4 * g.normal())
            let frozenObservations = Self.observe(&frozenFudger, home: home, track: track)
            if let estimate = Self.estimate(frozenObservations) {
                frozen.add(estimate, truth: (frozenFudger.north, frozenFudger.east))
            }
        }
        print(far.summary("LocationFudger, 100–300 km from the track"))
        print(near.summary("LocationFudger, within 300 m of the track (what any place-keyed design gives away)"))
        print(frozen.summary("Android's offset frozen (reference)"))
        #expect(far.attacker.count == Self.users * 10)
        #expect(far.medianRatio >= 0.9, "\(far.summary("far"))")
        #expect(far.bestScaledRatio >= 0.9, "\(far.summary("far"))")
        // The attacker is competent: it finds a frozen global offset, and the offset where it has been.
        #expect(frozen.medianRatio < 0.05, "\(frozen.summary("frozen"))")
        #expect(near.medianRatio < 0.7, "\(near.summary("near"))")
    }

    @Test("cells keep about the grid's size: the offset changes by less than half a metre per metre")
    func offsetIsSmooth() {
        var g = SeededGenerator(seed: 99)
        var gradients: [Double] = []
        for _ in 0..<2000 {
            var f = LocationFudger(gridMeters: Self.grid, secret: g.secret(), originHour: 0)
            let p = g.place()
            let o = f.offset(latitude: p.latitude, longitude: p.longitude)
            let n = Simulation.moved(p.latitude, p.longitude, north: 10, east: 0)
            let e = Simulation.moved(p.latitude, p.longitude, north: 0, east: 10)
            let on = f.offset(latitude: n.latitude, longitude: n.longitude)
            let oe = f.offset(latitude: e.latitude, longitude: e.longitude)
            for d in [on.north - o.north, on.east - o.east, oe.north - o.north, oe.east - o.east] {
                gradients.append(abs(d) / 10)
            }
        }
        let largest = gradients.max() ?? 0
        print("offset gradient over 2000 places, m/m: median \(Simulation.percentile(gradients, 0.5)), "
              + "95th percentile \(Simulation.percentile(gradients, 0.95)), largest \(largest)")
        #expect(largest < 0.5)
    }

    @Test("SipHash-2-4 matches the paper's reference vectors (key 00…0f; messages of 0 and 8 bytes)")
    func sipHashVectors() {
        let key: (UInt64, UInt64) = (0x0706_0504_0302_0100, 0x0F0E_0D0C_0B0A_0908)
        var h = SipHash24(key: key)
        #expect(h.finish() == 0x726F_DB47_DD0E_0E31)
        h.absorb(0x0706_0504_0302_0100)
        #expect(h.finish() == 0x93F5_F579_9A93_2462)
    }
}
