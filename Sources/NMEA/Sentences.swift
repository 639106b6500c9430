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
    public var satellitesUsed: [Int]
    public var pdop: Double?
    public var hdop: Double?
    public var vdop: Double?
    /// NMEA 4.10+ GNSS system id: 1 GPS, 2 GLONASS, 3 Galileo, 4 BeiDou, 5 QZSS, 6 NavIC.
    public var systemID: Int?
}

/// `$--GSV`: satellites in view, one page of up to four. Source: NMEA 0183 v4.11 §GSV.
public struct GSV: Hashable, Sendable {
    public var totalMessages: Int
    public var messageNumber: Int
    public var satellitesInView: Int?
    public var satellites: [Satellite]
    /// NMEA 4.10+ signal id.
    public var signalID: Int?
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
    public var modes: [ModeIndicator]
    public var satellitesUsed: Int?
    public var hdop: Double?
    public var altitudeMSL: Double?
    public var geoidSeparation: Double?
    public var differentialAge: Double?
    public var differentialStation: Int?

    /// The best mode among the constellations (the solution is valid when any is).
    public var mode: ModeIndicator? {
        modes.first(where: { $0 == .rtk }) ?? modes.first(where: { $0 == .floatRTK })
            ?? modes.first(where: { $0 == .differential }) ?? modes.first(where: { $0 == .precise })
            ?? modes.first(where: { $0 == .autonomous }) ?? modes.first(where: { $0.isValid }) ?? modes.first
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
    case zda(ZDA)
    case hdt(Heading)
    case ths(Heading)
    case garminErrorEstimate(GarminErrorEstimate)
    case garminAltitude(GarminAltitude)
    /// Recognised and deliberately not used: other standard sentences, other proprietary `$P…` sentences
    /// and AIS `!--VDM`/`VDO`.
    case ignored

    /// UTC time of day the sentence carries, ms since midnight.
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
