#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import LocationCore

/// The error estimates and derived fields gpsd adds to every TPV, for one fix.
///
/// All are gpsd's figures (gpsd 3.22 `gpsd/libgpsd_core.c`, `gpsd_error_model()` and `fill_dop()`): DOP × UERE,
/// except that a source's own estimates (`Fix.expectedErrors`: a receiver's GBS as epx/epy/epv, as gpsd's NMEA
/// driver reports them; everything an upstream gpsd reported) are kept; GST and PGRME figures do not enter them,
/// as in gpsd 3.22. Metres unless stated; nil where gpsd prints nothing.
public struct GpsdEstimates: Hashable, Sendable {
    /// Estimated time error, seconds (gpsd_json(5) TPV.ept): gpsd's constant 0.005 whenever the fix has a time.
    public var ept: Double?
    /// Longitude error, metres, 95 % (TPV.epx): xdop × horizontal UERE.
    public var epx: Double?
    /// Latitude error, metres, 95 % (TPV.epy): ydop × horizontal UERE.
    public var epy: Double?
    /// Vertical error, metres, 95 % (TPV.epv): VDOP × vertical UERE; 3D fixes only.
    public var epv: Double?
    /// Horizontal error, metres, 95 % (TPV.eph): HDOP × position UERE.
    public var eph: Double?
    /// Spherical (3D) error, metres, 95 % (TPV.sep): PDOP × position UERE.
    public var sep: Double?
    /// Speed error, m/s (TPV.eps): the largest axis error of this fix and the previous one over the time between.
    public var eps: Double?
    /// Climb error, m/s (TPV.epc): the vertical errors of this fix and the previous one over the time between.
    public var epc: Double?
    /// Track error, degrees (TPV.epd): half the angle the position error subtends from the previous fix.
    public var epd: Double?
    /// Course over ground relative to magnetic north, degrees 0..<360 (TPV.magtrack): track + magnetic variation.
    public var magneticTrack: Double?
    /// Magnetic variation, degrees, east positive (TPV.magvar): the receiver's when it gives one larger than
    /// 0.09° (gpsd reads 0.0 as "not given"), else gpsd's world table (`GpsdMagneticVariation`).
    public var magneticVariation: Double?
    /// The dilutions of precision gpsd reports in SKY: the receiver's where it gives them, else computed from the
    /// used satellites' elevations and azimuths (`fill_dop()`); xdop and ydop always computed.
    public var dop: GpsdDOP

    public init(ept: Double? = nil, epx: Double? = nil, epy: Double? = nil, epv: Double? = nil, eph: Double? = nil,
                sep: Double? = nil, eps: Double? = nil, epc: Double? = nil, epd: Double? = nil,
                magneticTrack: Double? = nil, magneticVariation: Double? = nil, dop: GpsdDOP = GpsdDOP()) {
        self.ept = ept
        self.epx = epx
        self.epy = epy
        self.epv = epv
        self.eph = eph
        self.sep = sep
        self.eps = eps
        self.epc = epc
        self.epd = epd
        self.magneticTrack = magneticTrack
        self.magneticVariation = magneticVariation
        self.dop = dop
    }
}

/// gpsd's seven dilutions of precision (gpsd_json(5) SKY.xdop … SKY.gdop), unitless.
public struct GpsdDOP: Hashable, Sendable {
    public var xdop: Double?, ydop: Double?, hdop: Double?, vdop: Double?, pdop: Double?, tdop: Double?, gdop: Double?

    public init(xdop: Double? = nil, ydop: Double? = nil, hdop: Double? = nil, vdop: Double? = nil,
                pdop: Double? = nil, tdop: Double? = nil, gdop: Double? = nil) {
        self.xdop = xdop
        self.ydop = ydop
        self.hdop = hdop
        self.vdop = vdop
        self.pdop = pdop
        self.tdop = tdop
        self.gdop = gdop
    }

    /// The receiver's DOPs, with each one it did not give computed from the geometry of the used satellites
    /// (gpsd `fill_dop()`: unit line-of-sight vectors east, north, up and a clock column; the diagonal of the
    /// inverse of their normal matrix; needs four used satellites with a valid elevation and azimuth).
    /// - Parameters:
    ///   - reported: the DOPs the receiver sent (GSA, GGA).
    ///   - inverse: the used satellites' `Geometry.losInverse`, worked out once per fix.
    static func filled(reported: DilutionOfPrecision, inverse: (Double, Double, Double, Double)) -> GpsdDOP {
        var dop = GpsdDOP(hdop: reported.horizontal, vdop: reported.vertical, pdop: reported.position,
                          tdop: reported.time, gdop: reported.geometric)
        let xx = inverse.0, yy = inverse.1, zz = inverse.2, tt = inverse.3
        dop.xdop = xx.squareRoot()
        dop.ydop = yy.squareRoot()
        if dop.hdop == nil { dop.hdop = (xx + yy).squareRoot() }
        if dop.vdop == nil { dop.vdop = zz.squareRoot() }
        if dop.pdop == nil { dop.pdop = (xx + yy + zz).squareRoot() }
        if dop.tdop == nil { dop.tdop = tt.squareRoot() }
        if dop.gdop == nil { dop.gdop = (xx + yy + zz + tt).squareRoot() }
        return dop
    }

    /// One satellite's direction, degrees, when it enters the geometry by gpsd's rule: used, PRN ≥ 1, azimuth
    /// in 0...359, |elevation| ≤ 90.
    struct LineOfSight: Equatable, Sendable {
        var prn: Int
        var elevation: Double
        var azimuth: Double

        /// nil for a satellite gpsd leaves out of the geometry.
        init?(_ sat: Satellite) {
            // gpsd 3.22 reads a GSV's empty elevation and azimuth as 0 (its SKY then shows "el":0.0,"az":0.0), and
            // such a used satellite enters the geometry at the horizon, due north.
            let az = sat.azimuth ?? 0, el = sat.elevation ?? 0
            guard sat.used, sat.prn >= 1, az >= 0, az <= 359, abs(el) <= 90 else { return nil }
            (prn, elevation, azimuth) = (sat.prn, el, az)
        }
    }

    /// The used satellites' geometry, with its last solution kept. The solution depends only on the
    /// qualifying satellites' PRNs, elevations and azimuths, which receivers report in whole degrees, so from
    /// one fix to the next they are most often the same, and then the trigonometry and the inversion are not
    /// done again.
    struct Geometry: Sendable {
        /// The start state is that of no qualifying satellite: no solution.
        private var kept: [LineOfSight] = []
        private var inverse: (Double, Double, Double, Double)?

        /// The diagonal of (AᵀA)⁻¹ for the line-of-sight matrix A of the qualifying satellites (unit vectors
        /// east, north, up and a clock column), or nil when fewer than four qualify or the matrix is singular.
        mutating func losInverse(_ satellites: [Satellite]) -> (Double, Double, Double, Double)? {
            if same(satellites) { return inverse }
            kept.removeAll(keepingCapacity: true)
            for sat in satellites { if let los = LineOfSight(sat) { kept.append(los) } }
            inverse = GpsdDOP.solve(kept)
            return inverse
        }

        /// Whether `satellites` qualify as the kept ones, in the same order with the same directions.
        private func same(_ satellites: [Satellite]) -> Bool {
            var k = 0
            for sat in satellites {
                guard let los = LineOfSight(sat) else { continue }
                guard k < kept.count, kept[k] == los else { return false }
                k += 1
            }
            return k == kept.count
        }
    }

    private static func solve(_ satellites: [LineOfSight]) -> (Double, Double, Double, Double)? {
        // Fixed-size values, not arrays: each array costs an allocation and a run-time metadata look-up.
        guard satellites.count >= 4 else { return nil }
        var normal = SIMD16<Double>()
        let radians = Double.pi / 180
        for sat in satellites {
            let az = sat.azimuth * radians, el = sat.elevation * radians
            let row = SIMD4<Double>(sin(az) * cos(el), cos(az) * cos(el), sin(el), 1)
            for i in 0..<4 { for j in 0..<4 { normal[i * 4 + j] += row[i] * row[j] } }
        }
        guard let inverse = invert4x4(normal) else { return nil }
        return (inverse[0], inverse[5], inverse[10], inverse[15])
    }

    /// Inverse of a 4×4 matrix (row-major) by Gauss–Jordan elimination with partial pivoting; nil when singular.
    static func invert4x4(_ m: SIMD16<Double>) -> SIMD16<Double>? {
        var a = m
        var inv = SIMD16<Double>()
        for i in 0..<4 { inv[i * 4 + i] = 1 }
        for col in 0..<4 {
            var pivot = col
            for r in (col + 1)..<4 where abs(a[r * 4 + col]) > abs(a[pivot * 4 + col]) { pivot = r }
            let p = a[pivot * 4 + col]
            guard abs(p) > 1e-12 else { return nil }
            if pivot != col {
                for k in 0..<4 {
                    (a[pivot * 4 + k], a[col * 4 + k]) = (a[col * 4 + k], a[pivot * 4 + k])
                    (inv[pivot * 4 + k], inv[col * 4 + k]) = (inv[col * 4 + k], inv[pivot * 4 + k])
                }
            }
            for k in 0..<4 { a[col * 4 + k] /= p; inv[col * 4 + k] /= p }
            for r in 0..<4 where r != col {
                let factor = a[r * 4 + col]
                guard factor != 0 else { continue }
                for k in 0..<4 {
                    a[r * 4 + k] -= factor * a[col * 4 + k]
                    inv[r * 4 + k] -= factor * inv[col * 4 + k]
                }
            }
        }
        return inv
    }
}

/// gpsd's error model as a value: feed it each fix of one receiver in order; it returns gpsd's estimates.
///
/// Source: gpsd 3.22 `gpsd/libgpsd_core.c`, `gpsd_error_model()`. UERE constants (metres, 95 % confidence):
/// horizontal 15 (3.75 with DGPS), vertical 23 (5.75), position 19 (4.75); "with DGPS" means gpsd status 2
/// (DGPS) only, not RTK. `eps`, `epc` and `epd` need the previous fix with a different time (gpsd's `oldfix`).
public struct GpsdErrorModel: Sendable {
    /// gpsd's constant time error for a fix with a time, seconds (`gpsd_error_model()`).
    public static let timeError = 0.005

    /// UERE constants, metres, 95 % (`H_UERE_*`, `V_UERE_*`, `P_UERE_*` in `gpsd_error_model()`).
    public static func uere(differential: Bool) -> (horizontal: Double, vertical: Double, position: Double) {
        differential ? (3.75, 5.75, 4.75) : (15.0, 23.0, 19.0)
    }

    private struct Previous: Sendable {
        var milliseconds: Int
        var mode: FixMode
        var latitude: Double?, longitude: Double?
        var epx: Double?, epy: Double?, epv: Double?
    }

    private var previous: Previous?
    /// gpsd's DOP store, which lives as long as the device's session: a DOP the receiver reports replaces the
    /// stored one (GGA's HDOP, GSA's PDOP/HDOP/VDOP), and one it never reports is computed from the epoch's
    /// used satellites (`fill_dop()`; xdop and ydop always are).
    private var dop = GpsdDOP()
    /// The last fix's satellite geometry and its solution (`fill_dop()`'s input and output).
    private var geometry = GpsdDOP.Geometry()

    public init() {}

    /// gpsd's estimates for `fix`, the next fix of this receiver; remembers it for the next call.
    public mutating func estimates(for fix: Fix) -> GpsdEstimates {
        var e = GpsdEstimates()
        if fix.dopIsComplete {
            // An upstream gpsd's SKY says what its store holds now: one it left out (its geometry had no solution)
            // is not to be kept from an earlier SKY.
            dop = GpsdDOP()
            reported = (false, false, false, false, false)
        }
        // gpsd computes the estimates when the epoch's first position sentence arrives and keeps them for the
        // epoch; most receivers send GSA after GGA/RMC, so the VDOP and PDOP then in gpsd's store are the
        // previous epoch's (GGA's HDOP is the current one). The estimates take the store as it was; the epoch's
        // own GSA DOPs enter it afterwards, for the next epoch.
        if let v = fix.dop.horizontal { dop.hdop = v; reported.hdop = true }
        // The satellites' geometry, once per fix (four solutions of the same system before).
        let computed = geometry.losInverse(fix.satellites).map { GpsdDOP.filled(reported: DilutionOfPrecision(), inverse: $0) }
        fillComputed(computed)
        let current = dop
        if let v = fix.dop.vertical { dop.vdop = v; reported.vdop = true }
        if let v = fix.dop.position { dop.pdop = v; reported.pdop = true }
        if let v = fix.dop.time { dop.tdop = v; reported.tdop = true }
        if let v = fix.dop.geometric { dop.gdop = v; reported.gdop = true }
        fillComputed(computed)
        e.dop = dop
        let dop = current
        let now = fix.time?.unixMilliseconds
        var deltaTime = -1.0
        if let now, let prev = previous { deltaTime = Double(now - prev.milliseconds) / 1000 }
        // A source's own estimates (an upstream gpsd's TPV, a receiver's GBS) are kept, as gpsd keeps what a
        // driver set; only the missing ones are computed.
        let given = fix.expectedErrors
        if now != nil { e.ept = given?.time ?? Self.timeError }
        if fix.hasPosition, let la = fix.latitude, let lo = fix.longitude {
            if let v = fix.magneticVariation, abs(v) > 0.09 {
                e.magneticVariation = v
            } else {
                e.magneticVariation = GpsdMagneticVariation.degrees(latitude: la, longitude: lo)
            }
        }
        if let given = fix.magneticTrack {
            e.magneticTrack = given
        } else if let track = fix.track, let variation = e.magneticVariation {
            // gpsd's DEG_NORM: one turn added or removed.
            var m = track + variation
            if m < 0 { m += 360 } else if m >= 360 { m -= 360 }
            e.magneticTrack = m
        }
        if fix.mode.hasPosition {
            let u = Self.uere(differential: fix.quality == .dgps)
            e.epx = given?.longitude
            e.epy = given?.latitude
            e.epv = given?.altitude
            if dop.hdop != nil {
                if e.epx == nil { e.epx = dop.xdop.map { $0 * u.horizontal } }
                if e.epy == nil { e.epy = dop.ydop.map { $0 * u.horizontal } }
            }
            if fix.mode == .threeDimensional, e.epv == nil { e.epv = dop.vdop.map { $0 * u.vertical } }
            e.eph = given?.horizontal ?? dop.hdop.map { $0 * u.position }
            e.sep = given?.spherical ?? dop.pdop.map { $0 * u.position }
            e.eps = given?.speed
            e.epc = given?.climb
            e.epd = given?.track
            if deltaTime > 0, let prev = previous, prev.mode.hasPosition {
                if e.eps == nil, let ox = prev.epx, let oy = prev.epy, let x = Self.emax(e.epx, e.epy) {
                    e.eps = (max(ox, oy) + x) / deltaTime
                }
                if e.epd == nil, let la0 = prev.latitude, let lo0 = prev.longitude, let la = fix.latitude, let lo = fix.longitude,
                   let opp = Self.emax(e.epx, e.epy) {
                    let adj = Geodesy.distance(latitude1: la0, longitude1: lo0, latitude2: la, longitude2: lo)
                    if adj > opp {
                        let hyp = (adj * adj + opp * opp).squareRoot()
                        e.epd = 180 / Double.pi * 2 * asin(opp / hyp)
                    }
                }
                if e.epc == nil, fix.mode == .threeDimensional, let v = e.epv, let ov = prev.epv {
                    e.epc = (ov + v) / deltaTime
                }
            }
        }
        if let now, abs(deltaTime) > 0.0099 || previous == nil {
            previous = Previous(milliseconds: now, mode: fix.mode, latitude: fix.latitude, longitude: fix.longitude,
                                epx: e.epx, epy: e.epy, epv: e.epv)
        }
        return e
    }

    /// Sets xdop and ydop, and each DOP the receiver never reported, from the geometry of the used satellites
    /// (gpsd `fill_dop()`); without a solution they are cleared, as gpsd 3.22 sends none of them then.
    /// - Parameter computed: the DOPs of the used satellites' geometry alone; nil without a solution.
    private mutating func fillComputed(_ computed: GpsdDOP?) {
        guard let computed else {
            // No solution (fewer than four satellites, or a singular geometry): gpsd 3.22 then sends none of
            // the DOPs only the geometry gives, rather than an older epoch's.
            dop.xdop = nil
            dop.ydop = nil
            if !reported.hdop { dop.hdop = nil }
            if !reported.vdop { dop.vdop = nil }
            if !reported.pdop { dop.pdop = nil }
            if !reported.tdop { dop.tdop = nil }
            if !reported.gdop { dop.gdop = nil }
            return
        }
        dop.xdop = computed.xdop
        dop.ydop = computed.ydop
        if !reported.hdop { dop.hdop = computed.hdop }
        if !reported.vdop { dop.vdop = computed.vdop }
        if !reported.pdop { dop.pdop = computed.pdop }
        if !reported.tdop { dop.tdop = computed.tdop }
        if !reported.gdop { dop.gdop = computed.gdop }
    }

    /// Which DOPs the receiver has reported at least once (those are never replaced by computed ones).
    private var reported = (hdop: false, vdop: false, pdop: false, tdop: false, gdop: false)

    /// gpsd's `EMAX(x, y)`, `x > y ? x : y`, with its NaN behaviour: an absent `x` gives `y`, an absent `y` nil.
    static func emax(_ x: Double?, _ y: Double?) -> Double? {
        guard let y else { return nil }
        guard let x else { return y }
        return x > y ? x : y
    }
}
