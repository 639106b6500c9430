import LocationCore

/// What the sentences of one epoch said so far, folded in as they arrive (later sentences override
/// earlier ones); `FixAssembler` turns it into a `Fix` when the epoch ends.
///
/// Satellites are not folded here: GSV pages and GSA used-lists change the shared `SkyView`, which
/// `FixAssembler` feeds from its own per-epoch log (`SkyLog`) so that a reopened epoch replays them in
/// the same order. The fields are the raw per-sentence values; the rules that combine them (validity, 2D/3D,
/// error estimates) live in `FixAssembler.assemble`. Sources: NMEA 0183 v4.11 §GGA, §RMC, §GLL, §GNS, §VTG,
/// §GSA, §GST, §ZDA, §HDT, §THS; Garmin GPS 18x Technical Specifications §PGRME, §PGRMZ.
struct EpochFold: Sendable {
    /// Values the fix takes as the sentences give them (the rest is derived by `FixAssembler`): altitude above
    /// mean sea level and geoid separation, metres (GGA, GNS); track and magnetic variation, degrees (RMC,
    /// VTG); magnetic track, degrees (VTG); heading, degrees true (HDT, THS). Plain fields rather than a `Fix`,
    /// so a fold is cheap to create and copy.
    var altitudeMSL: Double?, geoidSeparation: Double?
    var track: Double?, magneticVariation: Double?, magneticTrack: Double?
    var heading: Double?
    /// Status of the last GGA/GNS/RMC/GLL: nil when none came.
    var valid: Bool?
    /// Degrees, north / east positive, from the last valid position sentence.
    var latitude: Double?, longitude: Double?
    /// Quality from GGA's indicator, and from the mode indicator of RMC, GLL or GNS.
    var ggaQuality: FixQuality?, indicatorQuality: FixQuality?
    /// Date from RMC, else from the first ZDA before any RMC.
    var date: CivilDate?
    /// Speed over ground from RMC or VTG, knots; from VTG in km/h when it gives no knots.
    var knots: Double?, kilometersPerHour: Double?
    /// Highest GSA fix type (1 none, 2 2D, 3 3D).
    var fixType: Int?
    var dop = DilutionOfPrecision()
    var sawGSA = false
    var gst: GST?
    /// The last GBS (RAIM expected errors) seen in the epoch.
    var gbs: GBS?
    var garmin: GarminErrorEstimate?
    /// PGRMZ altitude, metres, and fix dimension.
    var garminAltitude: Double?
    var garminDimension: Int?
    /// Satellites used, from GGA/GNS.
    var usedCount: Int?
    /// GGA's age of differential data (seconds) and reference station id (only with an age), from a valid GGA.
    var differentialAge: Double?, differentialStation: Int?
    /// True once GGA, GNS or PGRMZ came (sentences that state altitude or its absence).
    var sawAltitudeSource = false

    /// Folds one sentence in (GSV pages and GSA used-lists go to the sky view separately).
    @inline(__always)
    mutating func add(_ sentence: Sentence) {
        switch sentence {
        case .gga(let s):
            let ok = (s.qualityIndicator ?? 0) != 0
            valid = ok
            if ok, let la = s.latitude, let lo = s.longitude { latitude = la; longitude = lo }
            if ok {
                ggaQuality = Self.quality(ggaIndicator: s.qualityIndicator)
                // The station only with an age, as gpsd 3.22 reads them (`…,M,,0000` is neither; `…,M,18.8,0000` from a
                // plain GPS fix both: the captures ublox-neo-m9n and mr-350p under gpsfake).
                differentialAge = s.differentialAge
                differentialStation = s.differentialAge != nil ? s.differentialStation ?? 0 : nil
            }
            sawAltitudeSource = true
            if let a = s.altitudeMSL { altitudeMSL = a }
            if let g = s.geoidSeparation { geoidSeparation = g }
            if let n = s.satellitesUsed { usedCount = n }
            if let h = s.hdop, h > 0 { dop.horizontal = h }
        case .gns(let s):
            let mode = s.mode
            let ok = mode.map { $0.isValid } ?? (s.latitude != nil)
            valid = ok
            if ok, let la = s.latitude, let lo = s.longitude { latitude = la; longitude = lo }
            if ok, let q = mode?.quality { indicatorQuality = q }
            sawAltitudeSource = true
            if let a = s.altitudeMSL { altitudeMSL = a }
            if let g = s.geoidSeparation { geoidSeparation = g }
            if let n = s.satellitesUsed { usedCount = n }
            if let h = s.hdop, h > 0 { dop.horizontal = h }
        case .rmc(let s):
            valid = s.isValid
            if s.isValid, let la = s.latitude, let lo = s.longitude { latitude = la; longitude = lo }
            if s.isValid, let q = s.mode?.quality { indicatorQuality = q }
            if let d = s.date { date = d }
            if let v = s.speedKnots { knots = v }
            if let t = s.track { track = t }
            if let m = s.magneticVariation { magneticVariation = m }
        case .gll(let s):
            valid = s.isValid
            if s.isValid, let la = s.latitude, let lo = s.longitude { latitude = la; longitude = lo }
            if s.isValid, let q = s.mode?.quality { indicatorQuality = q }
        case .vtg(let s):
            if s.mode != .notValid {
                if let t = s.trackTrue { track = t }
                if let m = s.trackMagnetic { magneticTrack = m }
                if let v = s.speedKnots {
                    knots = v; kilometersPerHour = nil
                } else if let v = s.speedKilometersPerHour {
                    kilometersPerHour = v
                }
            }
        case .gsa(let s):
            sawGSA = true
            if let t = s.fixType { fixType = max(fixType ?? 0, t) }
            if let v = s.pdop, v > 0 { dop.position = v }
            if let v = s.hdop, v > 0 { dop.horizontal = v }
            if let v = s.vdop, v > 0 { dop.vertical = v }
        case .gsv:
            break
        case .gst(let s):
            gst = s
        case .gbs(let s):
            gbs = s
        case .zda(let s):
            if let d = s.date, date == nil { date = d }
        case .hdt(let h):
            if let d = h.degrees { heading = d }
        case .ths(let h):
            if let d = h.degrees, h.mode != UInt8(ascii: "V") { heading = d }
        case .garminErrorEstimate(let e):
            garmin = e
        case .garminAltitude(let a):
            garminAltitude = a.altitudeMSL
            sawAltitudeSource = true
            garminDimension = a.fixDimension
        case .ignored:
            break
        }
    }

    /// TPV quality for a GGA quality indicator (field 6); nil for 0 (invalid) and unknown values.
    static func quality(ggaIndicator q: Int?) -> FixQuality? {
        switch q {
        case 1?: return .gps
        case 2?: return .dgps
        case 3?: return .pps
        case 4?: return .rtkFixed
        case 5?: return .rtkFloat
        case 6?: return .deadReckoning
        case 7?: return .manual
        case 8?: return .simulated
        default: return nil
        }
    }
}
