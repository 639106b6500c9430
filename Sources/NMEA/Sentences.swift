import LocationCore

/// Mode indicator of RMC, GLL, VTG, GNS (NMEA 2.3+): how the data was obtained.
/// Source: NMEA 0183 v4.11 §6.3 "Mode indicator".
public enum ModeIndicator: UInt8, Sendable, Hashable {
    case autonomous = 0x41      // A
    case differential = 0x44    // D
    case estimated = 0x45       // E (dead reckoning)
    case floatRTK = 0x46        // F
    case manual = 0x4D          // M
    case notValid = 0x4E        // N
    case precise = 0x50         // P
    case rtk = 0x52             // R
    case simulator = 0x53       // S

    /// False for `N`: the receiver says the data are not valid.
    public var isValid: Bool { self != .notValid }

    /// The fix quality this indicator stands for; nil for `N`.
    public var quality: FixQuality? {
        switch self {
        case .autonomous: return .gps
        case .differential: return .dgps
        case .estimated: return .deadReckoning
        case .floatRTK: return .rtkFloat
        case .manual: return .manual
        case .notValid: return nil
        case .precise: return .pps
        case .rtk: return .rtkFixed
        case .simulator: return .simulated
        }
    }
}

/// `$--GGA`: time, position and fix data. Source: NMEA 0183 v4.11 §GGA.
public struct GGA: Hashable, Sendable {
    /// UTC time of position, ms since midnight.
    public var timeOfDay: Int?
    /// Degrees, north positive.
    public var latitude: Double?
    /// Degrees, east positive.
    public var longitude: Double?
    /// GPS quality indicator: 0 invalid, 1 GPS, 2 DGPS, 3 PPS, 4 RTK fixed, 5 RTK float, 6 estimated,
    /// 7 manual, 8 simulator.
    public var qualityIndicator: Int?
    /// Satellites in use (00–12 in v2.x, more in later versions).
    public var satellitesUsed: Int?
    /// Horizontal dilution of precision.
    public var hdop: Double?
    /// Antenna altitude above mean sea level (geoid), metres.
    public var altitudeMSL: Double?
    /// Geoidal separation (geoid above WGS84 ellipsoid), metres.
    public var geoidSeparation: Double?
    /// Age of differential data, seconds.
    public var differentialAge: Double?
    /// Differential reference station id.
    public var differentialStation: Int?
}

/// `$--RMC`: recommended minimum specific GNSS data. Source: NMEA 0183 v4.11 §RMC.
public struct RMC: Hashable, Sendable {
    public var timeOfDay: Int?
    /// Status: true for `A` (valid), false for `V` (navigation receiver warning).
    public var isValid: Bool
    public var latitude: Double?
    public var longitude: Double?
    /// Speed over ground, knots.
    public var speedKnots: Double?
    /// Course over ground, degrees true.
    public var track: Double?
    public var date: CivilDate?
    /// Magnetic variation, degrees, east positive.
    public var magneticVariation: Double?
    /// NMEA 2.3+ mode indicator.
    public var mode: ModeIndicator?
}

/// `$--GLL`: geographic position. Source: NMEA 0183 v4.11 §GLL.
public struct GLL: Hashable, Sendable {
    public var latitude: Double?
    public var longitude: Double?
    public var timeOfDay: Int?
    /// Status: `A` valid, `V` invalid.
    public var isValid: Bool
    public var mode: ModeIndicator?
}

/// `$--GSA`: DOP and active satellites. Source: NMEA 0183 v4.11 §GSA.
public struct GSA: Hashable, Sendable {
    /// 1 no fix, 2 2D, 3 3D.
    public var fixType: Int?
    /// Satellite ids used in the solution (up to 12 per sentence).
    public var satellitesUsed: [Int] {
        get { usedPRNs.array }
        set { usedPRNs = InlineList(filler: 0); for prn in newValue { usedPRNs.append(prn) } }
    }
    /// The same ids, stored in place (no allocation while decoding).
    var usedPRNs = InlineList<12, Int>(filler: 0)
    public var pdop: Double?
    public var hdop: Double?
    public var vdop: Double?
    /// NMEA 4.10+ GNSS system id: 1 GPS, 2 GLONASS, 3 Galileo, 4 BeiDou, 5 QZSS, 6 NavIC.
    public var systemID: Int?
}

/// `$--GSV`: satellites in view, one page of up to four. Source: NMEA 0183 v4.11 §GSV.
public struct GSV: Hashable, Sendable {
    /// Number of pages in the set; 0 when the field was empty (NMEA 0183 v4.11 §GSV allows that in the second
    /// and later pages, where it would repeat the first page's).
    public var totalMessages: Int
    public var messageNumber: Int
    public var satellitesInView: Int?
    /// The satellites of this page, in sentence order (four in a well-formed page), with the talker's
    /// constellation.
    public var satellites: [Satellite] {
        var result: [Satellite] = []
        for i in 0..<satelliteList.count { result.append(satelliteList[i].satellite(constellation: constellation)) }
        return result
    }
    /// The talker's constellation (nil for `GN` and unknown talkers).
    var constellation: Constellation?
    /// The same satellites, compact and stored in place (no allocation while decoding).
    var satelliteList = InlineList<4, GSVSatellite>(filler: GSVSatellite(prn: 0, elevation: nil, azimuth: nil,
                                                                           signalToNoise: nil))
    /// NMEA 4.10+ signal id.
    public var signalID: Int?
}

/// One satellite of a GSV page, in 32 bytes (a `Satellite` takes 80): absent values are stored as NaN,
/// which no field ever decodes to. Keeps `Sentence` small, since every sentence is copied a few times.
struct GSVSatellite: Hashable, Sendable {
    var prn: Int
    private var elevationOrNaN: Double
    private var azimuthOrNaN: Double
    private var signalToNoiseOrNaN: Double

    init(prn: Int, elevation: Double?, azimuth: Double?, signalToNoise: Double?) {
        self.prn = prn
        elevationOrNaN = elevation ?? .nan
        azimuthOrNaN = azimuth ?? .nan
        signalToNoiseOrNaN = signalToNoise ?? .nan
    }

    /// Degrees, dB-Hz; nil when the field was empty.
    var elevation: Double? { elevationOrNaN.isNaN ? nil : elevationOrNaN }
    var azimuth: Double? { azimuthOrNaN.isNaN ? nil : azimuthOrNaN }
    var signalToNoise: Double? { signalToNoiseOrNaN.isNaN ? nil : signalToNoiseOrNaN }

    static func == (a: Self, b: Self) -> Bool {
        a.prn == b.prn && a.elevation == b.elevation && a.azimuth == b.azimuth && a.signalToNoise == b.signalToNoise
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(prn)
        hasher.combine(elevation)
        hasher.combine(azimuth)
        hasher.combine(signalToNoise)
    }

    /// The full satellite record.
    func satellite(constellation: Constellation?, signalID: Int? = nil) -> Satellite {
        Satellite(prn: prn, constellation: constellation, elevation: elevation, azimuth: azimuth,
                  signalToNoise: signalToNoise, signalID: signalID)
    }
}

/// `$--VTG`: course over ground and ground speed. Source: NMEA 0183 v4.11 §VTG (and the v2.x form
/// without unit letters).
public struct VTG: Hashable, Sendable {
    public var trackTrue: Double?
    public var trackMagnetic: Double?
    public var speedKnots: Double?
    public var speedKilometersPerHour: Double?
    public var mode: ModeIndicator?
}

/// `$--GNS`: GNSS fix data. Source: NMEA 0183 v4.11 §GNS.
public struct GNS: Hashable, Sendable {
    public var timeOfDay: Int?
    public var latitude: Double?
    public var longitude: Double?
    /// One mode character per constellation (GPS, GLONASS, Galileo, BeiDou, QZSS, NavIC).
    public var modes: [ModeIndicator] { modeList.array }
    /// The same modes, stored in place (no allocation while decoding).
    var modeList = InlineList<8, ModeIndicator>(filler: .notValid)
    public var satellitesUsed: Int?
    public var hdop: Double?
    public var altitudeMSL: Double?
    public var geoidSeparation: Double?
    public var differentialAge: Double?
    public var differentialStation: Int?

    /// The best mode among the constellations (the solution is valid when any is).
    public var mode: ModeIndicator? {
        guard !modeList.isEmpty else { return nil }
        var best = modeList[0]
        var bestRank = Self.rank(best)
        for i in 1..<modeList.count {
            let m = modeList[i]
            let r = Self.rank(m)
            if r < bestRank { best = m; bestRank = r }
        }
        return best
    }

    /// Preference order of `mode`: RTK, float RTK, differential, precise, autonomous, any other valid
    /// mode, then not valid; the first of equal rank wins.
    private static func rank(_ m: ModeIndicator) -> Int {
        switch m {
        case .rtk: return 0
        case .floatRTK: return 1
        case .differential: return 2
        case .precise: return 3
        case .autonomous: return 4
        case .notValid: return 6
        default: return 5
        }
    }
}

/// `$--GST`: GNSS pseudorange error statistics, metres (1σ). Source: NMEA 0183 v4.11 §GST.
public struct GST: Hashable, Sendable {
    public var timeOfDay: Int?
    /// RMS of the standard deviation of the range inputs.
    public var rangeRMS: Double?
    public var semiMajor: Double?
    public var semiMinor: Double?
    /// Orientation of the semi-major axis, degrees true.
    public var orientation: Double?
    public var latitudeError: Double?
    public var longitudeError: Double?
    public var altitudeError: Double?
}

/// `$--GBS`: GNSS satellite fault detection (RAIM): expected errors of the position, metres. Source: NMEA 0183
/// v4.11 §GBS; gpsd 3.22 `driver_nmea0183.c` `processGBS()` reports them as TPV.epy/epx/epv.
public struct GBS: Hashable, Sendable {
    /// UTC time of day of the fix the figures are for, ms since midnight.
    public var timeOfDay: Int?
    /// Expected error in latitude, metres.
    public var latitudeError: Double?
    /// Expected error in longitude, metres.
    public var longitudeError: Double?
    /// Expected error in altitude, metres.
    public var altitudeError: Double?
}

/// `$--ZDA`: time and date. Source: NMEA 0183 v4.11 §ZDA.
public struct ZDA: Hashable, Sendable {
    public var timeOfDay: Int?
    public var date: CivilDate?
}

/// `$--HDT` (heading, true) or `$--THS` (true heading and status). Source: NMEA 0183 v4.11 §HDT, §THS.
public struct Heading: Hashable, Sendable {
    /// Degrees true.
    public var degrees: Double?
    /// THS status; nil for HDT. `V` (invalid) makes the heading unusable.
    public var mode: UInt8?
}

/// Garmin `$PGRME`: estimated position errors, metres. Source: Garmin GPS 18x Technical Specifications §PGRME
/// (gpsd driver_nmea0183.c uses it for eph/epv).
public struct GarminErrorEstimate: Hashable, Sendable {
    public var horizontal: Double?
    public var vertical: Double?
    public var spherical: Double?
}

/// Garmin `$PGRMZ`: altitude. Source: Garmin GPS 18x Technical Specifications §PGRMZ.
public struct GarminAltitude: Hashable, Sendable {
    /// Altitude above MSL, metres (converted from feet).
    public var altitudeMSL: Double?
    /// 2 = 2D, 3 = 3D, when given.
    public var fixDimension: Int?
}

/// One decoded sentence.
public enum Sentence: Hashable, Sendable {
    case gga(GGA)
    case rmc(RMC)
    case gll(GLL)
    case gsa(GSA)
    case gsv(GSV)
    case vtg(VTG)
    case gns(GNS)
    case gst(GST)
    /// Not a timed sentence for epoch purposes: the figures join the epoch they name, if it is the current one.
    case gbs(GBS)
    case zda(ZDA)
    case hdt(Heading)
    case ths(Heading)
    case garminErrorEstimate(GarminErrorEstimate)
    case garminAltitude(GarminAltitude)
    /// Recognised and deliberately not used: other standard sentences, other proprietary `$P…` sentences
    /// and AIS `!--VDM`/`VDO`.
    case ignored

    /// UTC time of day the sentence carries, ms since midnight.
    @inline(__always)
    public var timeOfDay: Int? {
        switch self {
        case .gga(let s): return s.timeOfDay
        case .rmc(let s): return s.timeOfDay
        case .gll(let s): return s.timeOfDay
        case .gns(let s): return s.timeOfDay
        case .gst(let s): return s.timeOfDay
        case .zda(let s): return s.timeOfDay
        default: return nil
        }
    }
}

/// A sentence and its address.
public struct DecodedSentence: Hashable, Sendable {
    /// The talker; nil for proprietary (`$P…`) sentences.
    public var talker: Talker?
    /// The sentence, typed.
    public var sentence: Sentence
}
