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
/// Each sentence is folded into the epoch as it arrives (`EpochFold`); GSV and GSA go to a small per-epoch
/// log replayed into the sky view at delivery, so nothing is walked twice. The last delivered epoch's fold
/// and log are kept for the reopen case.
///
/// A date learned from RMC or ZDA carries over to epochs that have none (e.g. GGA-only), rolling over at
/// midnight. Invalid fixes (RMC/GLL status `V`, GGA quality 0, mode indicator `N`) and positions of exactly
/// 0°, 0° are delivered as `FixMode.noFix` without position.
public struct FixAssembler: Sendable {
    /// Epochs with no timed sentence are delivered after this many sentences, so memory stays bounded.
    public static let maximumSentencesPerEpoch = 64

    /// A sentence's talker and type, as far as they tell cycle ends apart (`CycleOrder`).
    struct Kind: Hashable, Sendable {
        var talker: UInt16
        var type: UInt32
    }

    /// The epoch being assembled.
    private var open = Epoch()
    /// The epoch last delivered, kept (as it was before delivery) until the next timed sentence shows it
    /// was really over: the end-of-cycle rule may have closed it too early.
    private var closed = Epoch()
    /// Sentences (GSV aside) that arrived after an end-of-cycle delivery and before the next timed
    /// sentence: if that sentence reopens the closed epoch, they are folded into it again, in order.
    private var sinceClosed: [Sentence] = []

    /// Where the receiver's cycles end, as its sentence order shows.
    private var cycle = CycleOrder()

    // What earlier epochs leave to later ones: the date, the last fix with a position, the last GSA's
    // fix type and DOPs, the sky view.
    /// The latest date seen and the time of day it was seen with.
    private var knownDate: (date: CivilDate, timeOfDay: Int)?
    private var previous: PreviousFix?
    /// `previous` as it was before the closed epoch was delivered, restored if that epoch is reopened.
    private var previousBeforeClosed: PreviousFix?
    private var lastFixType: Int?
    private var lastDOP = DilutionOfPrecision()
    private var sky = SkyView()

    public init() {}

    /// Adds one sentence; calls `emit` for each epoch this sentence completes (zero, one or, after a
    /// corrected end-of-cycle guess, two).
    public mutating func add(_ sentence: DecodedSentence, emit: (Fix) throws -> Void) rethrows {
        guard let kind = Self.kind(of: sentence) else { return }
        if let time = sentence.sentence.timeOfDay {
            if let current = open.time {
                if current != time {
                    // A new epoch began: whatever came last ended the previous one.
                    cycle.cycleEnded()
                    try deliver(emit)
                    open.time = time
                    closed.time = nil
                }
            } else if closed.time == time {
                // The end-of-cycle guess was wrong: the delivered epoch goes on. Reopen it: its state as it
                // was, then what came since, sky-view changes included, in arrival order.
                cycle.forget()
                previous = previousBeforeClosed
                open.reopen(&closed, replaying: sinceClosed)
            } else {
                open.time = time
                closed.time = nil
            }
            if !sinceClosed.isEmpty { sinceClosed.removeAll(keepingCapacity: true) }
        }
        // Untimed sentences after an end-of-cycle delivery are kept in case the next timed one reopens it.
        if open.add(sentence), open.time == nil && closed.time != nil { sinceClosed.append(sentence.sentence) }
        cycle.noteArrival(of: kind)
        if cycle.endsCycle(kind) || open.count >= Self.maximumSentencesPerEpoch {
            let time = open.time
            try deliver(emit)
            closed.time = time
        }
    }

    /// Delivers the epoch still being assembled, if any (end of input).
    public mutating func finish(emit: (Fix) throws -> Void) rethrows {
        if open.count > 0 { try deliver(emit) }
        closed.time = nil
    }

    @inline(__always)
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
        case .gbs: return Kind(talker: talker, type: 14)
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
        open.sky.replay(into: &sky)
        sky.endEpoch()
        let fix = assemble(open.fold, time: open.time)
        open.close(into: &closed)
        if !sinceClosed.isEmpty { sinceClosed.removeAll(keepingCapacity: true) }
        try emit(fix)
    }

    /// Turns the folded epoch into a fix (the sky view has already taken the epoch's GSV and GSA).
    /// - Parameters:
    ///   - epoch: the open epoch's fold.
    ///   - pendingTime: the open epoch's UTC time of day, milliseconds since midnight; nil if it has none.
    private mutating func assemble(_ epoch: EpochFold, time pendingTime: Int?) -> Fix {
        var fix = Fix()
        fix.altitudeMSL = epoch.altitudeMSL
        fix.geoidSeparation = epoch.geoidSeparation
        fix.track = epoch.track
        fix.magneticVariation = epoch.magneticVariation
        fix.magneticTrack = epoch.magneticTrack
        fix.heading = epoch.heading
        let valid = epoch.valid
        let latitude = epoch.latitude, longitude = epoch.longitude
        let ggaQuality = epoch.ggaQuality, indicatorQuality = epoch.indicatorQuality
        let epochDate = epoch.date
        let knots = epoch.knots, kmh = epoch.kilometersPerHour
        let fixType = epoch.fixType
        var dop = epoch.dop
        let sawGSA = epoch.sawGSA
        let gst = epoch.gst
        let garmin = epoch.garmin
        let garminAltitude = epoch.garminAltitude
        let garminDimension = epoch.garminDimension
        let usedCount = epoch.usedCount
        let sawAltitudeSource = epoch.sawAltitudeSource

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
        // A position of exactly 0°, 0° is what some modules send, flagged valid, before their first fix
        // (docs/RECEIVERS.md "Bad receivers"): no position.
        let hasPosition = valid == true && latitude != nil && longitude != nil && !(latitude == 0 && longitude == 0)
        if fix.altitudeMSL == nil, let a = garminAltitude { fix.altitudeMSL = a }
        if hasPosition {
            fix.latitude = latitude
            fix.longitude = longitude
            fix.quality = ggaQuality ?? indicatorQuality ?? .gps
            fix.differentialAge = epoch.differentialAge
            fix.differentialStation = epoch.differentialStation
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
            fix.magneticTrack = nil
        }

        if hasPosition, let latitude, let longitude {
            if let k = knots { fix.speed = k * Units.metersPerSecondPerKnot } else if let k = kmh {
                fix.speed = k * Units.metersPerSecondPerKilometerPerHour
            }
            // Altitude is reported whenever the receiver gives it, whatever the 2D/3D mode says (a 2D
            // receiver's altitude is its assumed one; gpsd reports it too).
            if let msl = fix.altitudeMSL {
                let separation = fix.geoidSeparation
                    ?? GeoidModel.separation(latitude: latitude, longitude: longitude)
                fix.geoidSeparation = separation
                fix.altitudeHAE = msl + separation
            } else {
                fix.geoidSeparation = nil
            }
            // Speed from the distance to the previous fix when the receiver gave none, as gpsd does
            // (gpsd_error_model()); the track is not derived, a noisy position would make it meaningless.
            if fix.speed == nil, let prev = previous, let la0 = prev.latitude, let lo0 = prev.longitude,
               let t0 = prev.time, let t1 = fix.time, let dt = t1.seconds(since: t0), dt > 0 {
                fix.speed = Geodesy.distance(latitude1: la0, longitude1: lo0, latitude2: latitude, longitude2: longitude) / dt
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
        // The satellites the GSA sentences mark as used, each once, all systems together; GGA's count only
        // without GSA (its field stops at 12 on many receivers, and counts one system on some).
        fix.satellitesUsed = sky.usedCount ?? usedCount
        fix.satellites = sky.satellites
        fix.satellitesUpdated = sky.reportedLastEpoch
        fix.satellitesVisible = sky.satellites.isEmpty ? nil : sky.satellites.count

        // The receiver's RAIM expected errors (GBS) for this epoch's time, as gpsd reports them.
        if hasPosition, let g = epoch.gbs, g.timeOfDay == pendingTime,
           g.latitudeError != nil || g.longitudeError != nil || g.altitudeError != nil {
            fix.expectedErrors = ExpectedErrors(latitude: g.latitudeError, longitude: g.longitudeError,
                                                altitude: g.altitudeError)
        }

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
            previous = PreviousFix(fix)
        }
        return fix
    }
}

/// What the next epoch needs of the last fix with a position: its mode (an RMC-only epoch keeps 3D), and
/// its position, time and height for speed and climb. A few plain values instead of a whole `Fix`, whose
/// satellite list would be retained and released at every copy.
private struct PreviousFix: Sendable {
    var mode: FixMode
    var latitude: Double?, longitude: Double?
    var time: UTCTime?
    /// Metres above the WGS84 ellipsoid.
    var altitudeHAE: Double?

    init(_ fix: Fix) {
        mode = fix.mode
        latitude = fix.latitude
        longitude = fix.longitude
        time = fix.time
        altitudeHAE = fix.altitudeHAE
    }
}
