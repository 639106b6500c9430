import LocationCore

/// Merges the sentences of one reporting cycle (epoch) into one `Fix`.
///
/// Sentences that carry a UTC time (GGA, RMC, GLL, GNS, GST, ZDA) mark which epoch they belong to; the
/// others (GSA, GSV, VTG, HDT, THS, Garmin PGRME/PGRMZ) join the epoch being assembled. An epoch ends
/// when a sentence with a different time arrives, or — once the receiver's sentence order is known — right
/// after the sentence that ended the previous cycles, so a fix is delivered without waiting for the next
/// cycle. (The learned end-of-cycle sentence is dropped again if a later sentence of the same epoch shows
/// it was wrong; that epoch is then delivered again, complete.) `finish()` delivers the last epoch.
///
/// A date learned from RMC or ZDA carries over to epochs that have none (e.g. GGA-only), rolling over at
/// midnight. Invalid fixes (RMC/GLL status `V`, GGA quality 0, mode indicator `N`) are delivered as
/// `FixMode.noFix` without position.
public struct FixAssembler: Sendable {
    /// Epochs with no timed sentence are delivered after this many sentences, so memory stays bounded.
    public static let maximumSentencesPerEpoch = 64

    private struct Kind: Hashable, Sendable {
        var talker: UInt16
        var type: UInt32
    }

    private var pending: [DecodedSentence] = []
    private var pendingTime: Int?
    /// The epoch last delivered by the end-of-cycle rule, kept until the next timed sentence shows it
    /// was really over.
    private var closed: [DecodedSentence] = []
    private var closedTime: Int?

    private var lastKind: Kind?
    private var lastCycleEnd: Kind?
    private var cycleEnd: Kind?

    /// The latest date seen and the time of day it was seen with.
    private var knownDate: (date: CivilDate, timeOfDay: Int)?
    private var previous: Fix?
    private var previousBeforeClosed: Fix?
    private var lastFixType: Int?
    private var lastDOP = DilutionOfPrecision()
    private var sky = SkyView()

    public init() {
        pending.reserveCapacity(32)
        closed.reserveCapacity(32)
    }

    /// Adds one sentence; calls `emit` for each epoch this sentence completes (zero, one or, after a
    /// corrected end-of-cycle guess, two).
    public mutating func add(_ sentence: DecodedSentence, emit: (Fix) throws -> Void) rethrows {
        guard let kind = Self.kind(of: sentence) else { return }
        if let time = sentence.sentence.timeOfDay {
            if let current = pendingTime {
                if current != time {
                    // A new epoch began: whatever came last ended the previous one.
                    learnCycleEnd(lastKind)
                    try deliver(emit)
                    pendingTime = time
                    closedTime = nil
                }
            } else if closedTime == time {
                // The end-of-cycle guess was wrong: the delivered epoch goes on. Reopen it.
                cycleEnd = nil
                lastCycleEnd = nil
                previous = previousBeforeClosed
                closed.append(contentsOf: pending)
                swap(&closed, &pending)
                closed.removeAll(keepingCapacity: true)
                closedTime = nil
                pendingTime = time
            } else {
                pendingTime = time
                closedTime = nil
            }
        }
        pending.append(sentence)
        lastKind = kind
        if kind == cycleEnd || pending.count >= Self.maximumSentencesPerEpoch {
            let time = pendingTime
            try deliver(emit)
            closedTime = time
        }
    }

    /// Delivers the epoch still being assembled, if any (end of input).
    public mutating func finish(emit: (Fix) throws -> Void) rethrows {
        if !pending.isEmpty { try deliver(emit) }
        closedTime = nil
    }

    private mutating func learnCycleEnd(_ kind: Kind?) {
        guard let kind else { return }
        if kind == lastCycleEnd { cycleEnd = kind }
        lastCycleEnd = kind
    }

    private static func kind(of s: DecodedSentence) -> Kind? {
        let talker = s.talker?.rawValue ?? 0
        switch s.sentence {
        case .gga: return Kind(talker: talker, type: 1)
        case .rmc: return Kind(talker: talker, type: 2)
        case .gll: return Kind(talker: talker, type: 3)
        case .gsa: return Kind(talker: talker, type: 4)
        case .gsv(let g):
            // Only the last page of a set can end a cycle; its signal id tells sets apart.
            let last = g.messageNumber == g.totalMessages
            return Kind(talker: talker, type: last ? 0x100 | UInt32(truncatingIfNeeded: (g.signalID ?? 0) & 0xFF) : 5)
        case .vtg: return Kind(talker: talker, type: 6)
        case .gns: return Kind(talker: talker, type: 7)
        case .gst: return Kind(talker: talker, type: 8)
        case .zda: return Kind(talker: talker, type: 9)
        case .hdt: return Kind(talker: talker, type: 10)
        case .ths: return Kind(talker: talker, type: 11)
        case .garminErrorEstimate: return Kind(talker: talker, type: 12)
        case .garminAltitude: return Kind(talker: talker, type: 13)
        case .ignored: return nil
        }
    }

    // MARK: - Folding one epoch into a Fix

    private mutating func deliver(_ emit: (Fix) throws -> Void) rethrows {
        previousBeforeClosed = previous
        let fix = assemble()
        swap(&pending, &closed)
        pending.removeAll(keepingCapacity: true)
        pendingTime = nil
        if let fix { try emit(fix) }
    }

    /// Folds `closed`-to-be (the pending sentences) into a fix. Later sentences override earlier ones.
    private mutating func assemble() -> Fix? {
        var fix = Fix()
        var valid: Bool? = nil
        var latitude: Double?, longitude: Double?
        var ggaQuality: FixQuality?, indicatorQuality: FixQuality?
        var epochDate: CivilDate?
        var knots: Double?, kmh: Double?
        var fixType: Int?
        var dop = DilutionOfPrecision()
        var sawGSA = false
        var gst: GST?
        var garmin: GarminErrorEstimate?
        var garminAltitude: Double?
        var garminDimension: Int?
        var usedCount: Int?
        var sawAltitudeSource = false

        for decoded in pending {
            switch decoded.sentence {
            case .gga(let s):
                let ok = (s.qualityIndicator ?? 0) != 0
                valid = ok
                if ok, let la = s.latitude, let lo = s.longitude { latitude = la; longitude = lo }
                if ok { ggaQuality = Self.quality(ggaIndicator: s.qualityIndicator) }
                sawAltitudeSource = true
                if let a = s.altitudeMSL { fix.altitudeMSL = a }
                if let g = s.geoidSeparation { fix.geoidSeparation = g }
                if let n = s.satellitesUsed { usedCount = n }
                if let h = s.hdop, h > 0 { dop.horizontal = h }
            case .gns(let s):
                let mode = s.mode
                let ok = mode.map { $0.isValid } ?? (s.latitude != nil)
                valid = ok
                if ok, let la = s.latitude, let lo = s.longitude { latitude = la; longitude = lo }
                if ok, let q = mode?.quality { indicatorQuality = q }
                sawAltitudeSource = true
                if let a = s.altitudeMSL { fix.altitudeMSL = a }
                if let g = s.geoidSeparation { fix.geoidSeparation = g }
                if let n = s.satellitesUsed { usedCount = n }
                if let h = s.hdop, h > 0 { dop.horizontal = h }
            case .rmc(let s):
                valid = s.isValid
                if s.isValid, let la = s.latitude, let lo = s.longitude { latitude = la; longitude = lo }
                if s.isValid, let q = s.mode?.quality { indicatorQuality = q }
                if let d = s.date { epochDate = d }
                if let v = s.speedKnots { knots = v }
                if let t = s.track { fix.track = t }
                if let m = s.magneticVariation { fix.magneticVariation = m }
            case .gll(let s):
                valid = s.isValid
                if s.isValid, let la = s.latitude, let lo = s.longitude { latitude = la; longitude = lo }
                if s.isValid, let q = s.mode?.quality { indicatorQuality = q }
            case .vtg(let s):
                if s.mode != .notValid {
                    if let t = s.trackTrue { fix.track = t }
                    if let v = s.speedKnots { knots = v; kmh = nil } else if let v = s.speedKilometersPerHour { kmh = v }
                }
            case .gsa(let s):
                sawGSA = true
                if let t = s.fixType { fixType = max(fixType ?? 0, t) }
                if let v = s.pdop, v > 0 { dop.position = v }
                if let v = s.hdop, v > 0 { dop.horizontal = v }
                if let v = s.vdop, v > 0 { dop.vertical = v }
                sky.noteUsed(s, talker: decoded.talker)
            case .gsv(let s):
                sky.add(s, talker: decoded.talker)
            case .gst(let s):
                gst = s
            case .zda(let s):
                if let d = s.date, epochDate == nil { epochDate = d }
            case .hdt(let h):
                if let d = h.degrees { fix.heading = d }
            case .ths(let h):
                if let d = h.degrees, h.mode != UInt8(ascii: "V") { fix.heading = d }
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
        sky.endEpoch()

        // Time and date.
        if let t = pendingTime {
            var date = epochDate
            if date == nil, let known = knownDate {
                // Carry the last date over, rolling it forward when the time of day wrapped past midnight.
                date = t + UTCTime.millisecondsPerDay / 2 < known.timeOfDay
                    ? CivilDate(daysSinceUnixEpoch: known.date.daysSinceUnixEpoch + 1) : known.date
            }
            if let date { knownDate = (date, t) }
            fix.time = UTCTime(date: date, millisecondsOfDay: t)
        }

        // Validity and mode.
        if sawGSA { lastFixType = fixType; lastDOP = dop } else if dop.isEmpty { dop = lastDOP }
        let hasPosition = valid == true && latitude != nil && longitude != nil
        if fix.altitudeMSL == nil, let a = garminAltitude { fix.altitudeMSL = a }
        if hasPosition {
            fix.latitude = latitude
            fix.longitude = longitude
            fix.quality = ggaQuality ?? indicatorQuality ?? .gps
            // 2D or 3D: GSA's fix type says it, but receivers are seen sending "2" while solving in 3D with
            // four or more satellites and giving altitude (Quectel, Telit); an epoch that only has RMC or GLL
            // says nothing about it, so the last dimension stands (as in gpsd).
            let type = sawGSA ? fixType : (garminDimension ?? lastFixType)
            let altitudeKnown = fix.altitudeMSL != nil
            switch type {
            case 2?: fix.mode = altitudeKnown && (usedCount ?? 0) >= 4 ? .threeDimensional : .twoDimensional
            default: fix.mode = altitudeKnown ? .threeDimensional : .twoDimensional
            }
            if !sawAltitudeSource, !sawGSA, let prev = previous, prev.mode == .threeDimensional {
                fix.mode = .threeDimensional
            }
        } else {
            fix.mode = .noFix
            fix.track = nil
            fix.magneticVariation = nil
        }

        if hasPosition {
            if let k = knots { fix.speed = k * Units.metersPerSecondPerKnot } else if let k = kmh {
                fix.speed = k * Units.metersPerSecondPerKilometerPerHour
            }
            // Altitude is reported whenever the receiver gives it, whatever the 2D/3D mode says (a 2D
            // receiver's altitude is its assumed one; gpsd reports it too).
            if let msl = fix.altitudeMSL {
                let separation = fix.geoidSeparation
                    ?? GeoidModel.separation(latitude: latitude!, longitude: longitude!)
                fix.geoidSeparation = separation
                fix.altitudeHAE = msl + separation
            } else {
                fix.geoidSeparation = nil
            }
            // Speed from the distance to the previous fix when the receiver gave none, as gpsd does
            // (gpsd_error_model()); the track is not derived, a noisy position would make it meaningless.
            if fix.speed == nil, let prev = previous, let la0 = prev.latitude, let lo0 = prev.longitude,
               let t0 = prev.time, let t1 = fix.time, let dt = t1.seconds(since: t0), dt > 0 {
                fix.speed = Geodesy.distance(latitude1: la0, longitude1: lo0, latitude2: latitude!, longitude2: longitude!) / dt
            }
            // Climb from successive 3D fixes, as gpsd derives it when the receiver gives none.
            if let prev = previous, prev.mode == .threeDimensional, let h0 = prev.altitudeHAE, let h1 = fix.altitudeHAE,
               let t0 = prev.time, let t1 = fix.time, let dt = t1.seconds(since: t0), dt > 0, dt <= 10 {
                fix.climb = (h1 - h0) / dt
            }
        } else {
            fix.altitudeMSL = nil
            fix.geoidSeparation = nil
        }

        // Satellites and DOPs.
        fix.dop = dop
        fix.satellitesUsed = usedCount ?? sky.usedCount
        fix.satellites = sky.satellites
        fix.satellitesVisible = sky.satellites.isEmpty ? nil : sky.satellites.count

        // Error estimates: the receiver's own (GST, PGRME) first, else DOP × UERE.
        if hasPosition {
            let differential = fix.quality?.isDifferential ?? false
            if let g = gst, let sLat = g.latitudeError, let sLon = g.longitudeError {
                // GST gives 1σ; doubled for the ~95 % confidence of gpsd's UERE-based figures.
                fix.epy = 2 * sLat
                fix.epx = 2 * sLon
                fix.eph = 2 * (sLat * sLat + sLon * sLon).squareRoot()
                if fix.mode == .threeDimensional, let sAlt = g.altitudeError { fix.epv = 2 * sAlt }
            } else if let e = garmin {
                fix.eph = e.horizontal
                if fix.mode == .threeDimensional { fix.epv = e.vertical }
            }
            if fix.eph == nil, let h = dop.horizontal { fix.eph = h * UERE.position(differential: differential) }
            if fix.epv == nil, fix.mode == .threeDimensional, let v = dop.vertical {
                fix.epv = v * UERE.vertical(differential: differential)
            }
            previous = fix
        }
        return fix
    }

    private static func quality(ggaIndicator q: Int?) -> FixQuality? {
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
