/// Fix mode: what kind of position solution the receiver has (gpsd_json(5) TPV.mode).
public enum FixMode: Int, Sendable, Comparable {
    /// No valid position (gpsd mode 1).
    case noFix = 1
    /// Latitude and longitude only (gpsd mode 2).
    case twoDimensional = 2
    /// Latitude, longitude and altitude (gpsd mode 3).
    case threeDimensional = 3

    public static func < (a: FixMode, b: FixMode) -> Bool { a.rawValue < b.rawValue }

    /// True for 2D and 3D.
    public var hasPosition: Bool { self != .noFix }
}

/// How the position was obtained: NMEA 0183 `$--GGA` field 6 / the mode indicator of RMC, GNS, GLL, VTG.
public enum FixQuality: Sendable, Hashable {
    /// Autonomous GNSS (GGA quality 1, mode indicator A).
    case gps
    /// Differential GNSS: SBAS, DGPS (GGA 2, mode D).
    case dgps
    /// Precise positioning service / PPS (GGA 3, mode P).
    case pps
    /// Real-time kinematic, integer ambiguities fixed (GGA 4, mode R).
    case rtkFixed
    /// Real-time kinematic, float ambiguities (GGA 5, mode F).
    case rtkFloat
    /// Dead reckoning / estimated (GGA 6, mode E).
    case deadReckoning
    /// Position entered manually (GGA 7, mode M).
    case manual
    /// Simulator output (GGA 8, mode S).
    case simulated

    /// gpsd_json(5) TPV.status for this quality: 1 GPS, 2 DGPS, 3 RTK fixed, 4 RTK float, 5 DR, 7 time/manual,
    /// 8 simulated.
    public var gpsdStatus: Int {
        switch self {
        case .gps, .pps: return 1
        case .dgps: return 2
        case .rtkFixed: return 3
        case .rtkFloat: return 4
        case .deadReckoning: return 5
        case .manual: return 7
        case .simulated: return 8
        }
    }

    /// True for the differentially corrected qualities, for which gpsd uses its smaller UERE constants.
    public var isDifferential: Bool {
        switch self {
        case .dgps, .rtkFixed, .rtkFloat: return true
        default: return false
        }
    }
}

/// Dilutions of precision, unitless (NMEA 0183 `$--GSA` fields 15–17, `$--GGA` field 8).
public struct DilutionOfPrecision: Hashable, Sendable {
    /// Horizontal DOP.
    public var horizontal: Double?
    /// Vertical DOP.
    public var vertical: Double?
    /// Position (3D) DOP.
    public var position: Double?
    /// Time DOP.
    public var time: Double?
    /// Geometric DOP.
    public var geometric: Double?

    public init(horizontal: Double? = nil, vertical: Double? = nil, position: Double? = nil,
                time: Double? = nil, geometric: Double? = nil) {
        self.horizontal = horizontal
        self.vertical = vertical
        self.position = position
        self.time = time
        self.geometric = geometric
    }

    public var isEmpty: Bool {
        horizontal == nil && vertical == nil && position == nil && time == nil && geometric == nil
    }
}

/// GNSS constellation of a satellite (gpsd_json(5) SKY.satellites.gnssid numbering).
public enum Constellation: Int, Sendable, Hashable {
    case gps = 0
    case sbas = 1
    case galileo = 2
    case beidou = 3
    case imes = 4
    case qzss = 5
    case glonass = 6
    case navic = 7
}

/// One satellite in view (NMEA 0183 `$--GSV`), with whether the fix used it (`$--GSA`).
public struct Satellite: Hashable, Sendable {
    /// The PRN as the receiver numbers it in NMEA (gpsd's PRN is the same for GPS; other systems vary).
    public var prn: Int
    /// Constellation, when known from the talker or the GSV system id.
    public var constellation: Constellation?
    /// Elevation in degrees, −90...90.
    public var elevation: Double?
    /// Azimuth in degrees true, 0..<360.
    public var azimuth: Double?
    /// Signal-to-noise ratio, dB-Hz.
    public var signalToNoise: Double?
    /// True when the receiver reported using it in the fix.
    public var used: Bool
    /// NMEA 4.10+ signal id (GSV last field), when given.
    public var signalID: Int?

    public init(prn: Int, constellation: Constellation? = nil, elevation: Double? = nil, azimuth: Double? = nil,
                signalToNoise: Double? = nil, used: Bool = false, signalID: Int? = nil) {
        self.prn = prn
        self.constellation = constellation
        self.elevation = elevation
        self.azimuth = azimuth
        self.signalToNoise = signalToNoise
        self.used = used
        self.signalID = signalID
    }
}

/// A source's own error estimates for a fix: the receiver's RAIM expected errors (NMEA 0183 `$--GBS`), or
/// everything an upstream gpsd reported in its TPV (gpsd_json(5) TPV `epx` … `sep`). gpsd keeps any estimate a
/// driver set and computes only the missing ones (`GpsdErrorModel`), so these pass through to the gpsd front.
public struct ExpectedErrors: Hashable, Sendable {
    /// Expected error in latitude, metres (GBS; TPV.epy).
    public var latitude: Double?
    /// Expected error in longitude, metres (GBS; TPV.epx).
    public var longitude: Double?
    /// Expected error in altitude, metres (GBS; TPV.epv).
    public var altitude: Double?
    /// Horizontal position error, metres (TPV.eph).
    public var horizontal: Double?
    /// Spherical (3D) position error, metres (TPV.sep).
    public var spherical: Double?
    /// Time error, seconds (TPV.ept).
    public var time: Double?
    /// Speed error, m/s (TPV.eps).
    public var speed: Double?
    /// Climb error, m/s (TPV.epc).
    public var climb: Double?
    /// Track error, degrees (TPV.epd).
    public var track: Double?

    public init(latitude: Double? = nil, longitude: Double? = nil, altitude: Double? = nil,
                horizontal: Double? = nil, spherical: Double? = nil, time: Double? = nil, speed: Double? = nil,
                climb: Double? = nil, track: Double? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.horizontal = horizontal
        self.spherical = spherical
        self.time = time
        self.speed = speed
        self.climb = climb
        self.track = track
    }
}

/// One position fix: everything a receiver said about one epoch (reporting cycle).
///
/// Every measured value is optional: absent means the receiver did not say, never zero. Units follow
/// gpsd_json(5) TPV: degrees WGS84, metres, metres per second, degrees true, UTC.
public struct Fix: Hashable, Sendable {
    /// Name of the receiver that produced it (config section name or device path); nil when unknown.
    public var device: String?
    /// Fix time, UTC, millisecond resolution.
    public var time: UTCTime?
    /// No fix, 2D or 3D.
    public var mode: FixMode
    /// How the position was obtained, when reported.
    public var quality: FixQuality?
    /// Latitude, degrees WGS84, north positive.
    public var latitude: Double?
    /// Longitude, degrees WGS84, east positive.
    public var longitude: Double?
    /// Altitude above mean sea level (the geoid), metres.
    public var altitudeMSL: Double?
    /// Altitude above the WGS84 ellipsoid (height above ellipsoid), metres.
    public var altitudeHAE: Double?
    /// Geoid separation: height of the geoid above the WGS84 ellipsoid (altHAE − altMSL), metres.
    public var geoidSeparation: Double?
    /// Speed over ground, m/s.
    public var speed: Double?
    /// Course over ground (track), degrees true, 0..<360.
    public var track: Double?
    /// Magnetic variation, degrees, east positive.
    public var magneticVariation: Double?
    /// Course over ground relative to magnetic north, degrees 0..<360, when the source reported it (an upstream
    /// gpsd's TPV.magtrack); nil otherwise (the gpsd front then computes it from `track` and the variation).
    public var magneticTrack: Double?
    /// Vertical speed, m/s, up positive.
    public var climb: Double?
    /// Heading (where the vehicle or antenna baseline points), degrees true, from HDT/THS.
    public var heading: Double?
    /// Age of the differential corrections, seconds, and the reference station's id (0–1023), when the fix is
    /// differential and the receiver said (NMEA 0183 v4.11 §GGA fields 13–14; gpsd_json(5) TPV.dgpsAge, dgpsSta).
    public var differentialAge: Double?
    public var differentialStation: Int?
    /// Satellites used in the solution.
    public var satellitesUsed: Int?
    /// Satellites in view.
    public var satellitesVisible: Int?
    /// Dilutions of precision.
    public var dop: DilutionOfPrecision
    /// True when `dop` is the source's whole set as it stands (an upstream gpsd's SKY), so that a DOP absent from
    /// it is absent now; false when it holds only what this epoch's sentences gave (GSA, GGA), and a DOP they
    /// left out keeps its earlier value, as gpsd keeps it.
    public var dopIsComplete = false
    /// Estimated horizontal position error, metres (gpsd_json(5) TPV.eph).
    public var eph: Double?
    /// Estimated longitude error, metres (TPV.epx).
    public var epx: Double?
    /// Estimated latitude error, metres (TPV.epy).
    public var epy: Double?
    /// Estimated vertical error, metres (TPV.epv).
    public var epv: Double?
    /// Satellites in view with signal data (SKY.satellites); empty when the receiver sent no GSV.
    public var satellites: [Satellite]
    /// True when this epoch's input reported the satellites (a GSV set ended in it; an upstream gpsd's SKY came
    /// since its last TPV); false when `satellites` is an earlier epoch's view carried over. gpsd sends a SKY
    /// only then (gpsd_json(5) SKY), and never for a receiver that sends no GSV at all (`SkyView.reportedLastEpoch`).
    public var satellitesUpdated = true
    /// The source's own error estimates for this fix (GBS; an upstream gpsd's TPV), when it gave any; the gpsd
    /// front reports them unchanged (`GpsdErrorModel`).
    public var expectedErrors: ExpectedErrors?

    public init(device: String? = nil, time: UTCTime? = nil, mode: FixMode = .noFix, quality: FixQuality? = nil,
                latitude: Double? = nil, longitude: Double? = nil, altitudeMSL: Double? = nil,
                altitudeHAE: Double? = nil, geoidSeparation: Double? = nil, speed: Double? = nil,
                track: Double? = nil, magneticVariation: Double? = nil, climb: Double? = nil,
                heading: Double? = nil, satellitesUsed: Int? = nil, satellitesVisible: Int? = nil,
                dop: DilutionOfPrecision = DilutionOfPrecision(), eph: Double? = nil, epx: Double? = nil,
                epy: Double? = nil, epv: Double? = nil, satellites: [Satellite] = []) {
        self.device = device
        self.time = time
        self.mode = mode
        self.quality = quality
        self.latitude = latitude
        self.longitude = longitude
        self.altitudeMSL = altitudeMSL
        self.altitudeHAE = altitudeHAE
        self.geoidSeparation = geoidSeparation
        self.speed = speed
        self.track = track
        self.magneticVariation = magneticVariation
        self.climb = climb
        self.heading = heading
        self.satellitesUsed = satellitesUsed
        self.satellitesVisible = satellitesVisible
        self.dop = dop
        self.eph = eph
        self.epx = epx
        self.epy = epy
        self.epv = epv
        self.satellites = satellites
    }

    /// True when the fix carries a usable 2D or 3D position.
    public var hasPosition: Bool { mode.hasPosition && latitude != nil && longitude != nil }

    /// Satellites used, as gpsd's SKY/TPV `uSat` counts them: those of `satellites` marked used, or
    /// `satellitesUsed` (GGA's count, which stops at 12) when there is no satellite list.
    public var usedSatelliteCount: Int? {
        satellites.isEmpty ? satellitesUsed : satellites.reduce(0) { $0 + ($1.used ? 1 : 0) }
    }
}

/// Unit conversions used across the project.
public enum Units {
    /// Metres per second in one knot (1852 m / 3600 s).
    public static let metersPerSecondPerKnot = 1852.0 / 3600.0
    /// Metres per second in one km/h.
    public static let metersPerSecondPerKilometerPerHour = 1.0 / 3.6
    /// Metres in one foot (international foot).
    public static let metersPerFoot = 0.3048
}
