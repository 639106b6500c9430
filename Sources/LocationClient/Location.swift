import LocationCore
import LocationWire

/// One location report: a `TPV` object with a position (docs/PROTOCOL.md "TPV"), under Core Location's
/// names (`CLLocation`).
///
/// Core Location marks an unknown value with a negative number (`horizontalAccuracy < 0`,
/// `speed < 0`, ...). Here an unknown value is `nil` instead: the member was absent from the TPV, which
/// the protocol defines as "not known", never zero.
public struct Location: Hashable, Sendable {
    /// Latitude, degrees WGS84, north positive (TPV `lat`).
    public var latitude: Double
    /// Longitude, degrees WGS84, east positive (TPV `lon`).
    public var longitude: Double
    /// Altitude above mean sea level (the geoid), metres (TPV `altMSL`; `CLLocation.altitude`).
    public var altitude: Double?
    /// Height above the WGS84 ellipsoid, metres (TPV `altHAE`; `CLLocation.ellipsoidalAltitude`).
    public var ellipsoidalAltitude: Double?
    /// Radius of 68 % confidence around the position, metres, as Core Location and Android state accuracy:
    /// TPV `eph` (gpsd's ~95 % figure) × 0.61673 (`ConfidenceLevel`, docs/PROTOCOL.md "Accuracy"); at reduced
    /// accuracy the TPV's `eph` as sent, the bound the reduction guarantees (at least its grid). Nil when unknown.
    public var horizontalAccuracy: Double?
    /// Vertical error of 68 % confidence, metres: TPV `epv` (~95 %) × 0.50739; nil when unknown.
    public var verticalAccuracy: Double?
    /// Course over ground, degrees true, 0..<360 (TPV `track`); nil when unknown (also when not moving
    /// fast enough for the receiver to tell, if it says so by omitting it).
    public var course: Double?
    /// Speed over ground, metres per second (TPV `speed`).
    public var speed: Double?
    /// Where the vehicle or antenna baseline points, degrees true (TPV `heading`, from HDT/THS
    /// receivers); not the direction of travel, which is `course`.
    public var heading: Double?
    /// Vertical speed, metres per second, up positive (TPV `climb`).
    public var climb: Double?
    /// The fix time, UTC, millisecond resolution (TPV `time`); nil when the receiver gave none.
    public var timestamp: UTCTime?
    /// Full or reduced accuracy, as the daemon's policy decided for this client (TPV `accuracy`); nil
    /// when the TPV did not say (e.g. output of `locationctl decode`).
    public var accuracyAuthorization: AccuracyAuthorization?
    /// Name of the receiver the fix came from (TPV `device`).
    public var device: String?
    /// 2D or 3D (TPV `mode`); a location always has a position, so never `.noFix` when received.
    public var mode: FixMode
    /// The TPV object as the server sent it: one line of JSON without the newline, for logging or
    /// passing on (`locationctl watch --json`); nil for values made in code.
    public var json: String?

    /// Makes a location; every value but the position is optional, as on the wire.
    /// - Parameters: as the properties of the same names (degrees, metres, metres per second).
    public init(latitude: Double, longitude: Double, altitude: Double? = nil, ellipsoidalAltitude: Double? = nil,
                horizontalAccuracy: Double? = nil, verticalAccuracy: Double? = nil, course: Double? = nil,
                speed: Double? = nil, heading: Double? = nil, climb: Double? = nil, timestamp: UTCTime? = nil,
                accuracyAuthorization: AccuracyAuthorization? = nil, device: String? = nil,
                mode: FixMode = .twoDimensional, json: String? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.ellipsoidalAltitude = ellipsoidalAltitude
        self.horizontalAccuracy = horizontalAccuracy
        self.verticalAccuracy = verticalAccuracy
        self.course = course
        self.speed = speed
        self.heading = heading
        self.climb = climb
        self.timestamp = timestamp
        self.accuracyAuthorization = accuracyAuthorization
        self.device = device
        self.mode = mode
        self.json = json
    }

    /// Distance to `other` along the WGS84 ellipsoid, metres (`CLLocation.distance(from:)`; Vincenty's
    /// inverse formula, `Geodesy.distance`). Altitudes are ignored.
    public func distance(from other: Location) -> Double {
        Geodesy.distance(latitude1: latitude, longitude1: longitude,
                         latitude2: other.latitude, longitude2: other.longitude)
    }
}

/// One event of a location subscription (`LocationClient.updates`).
public enum LocationUpdate: Hashable, Sendable {
    /// A new location (a `TPV` with a 2D or 3D position).
    case location(Location)
    /// The fix was lost (`fix == false`, with the daemon's reason when it gave one, e.g. "no receiver
    /// has a fix") or came back (`fix == true`): a `STATE` object, or a `TPV` with mode 1 (no fix).
    /// Only changes are reported: `fix: false` when there is no fix (also at the start of a
    /// subscription); `fix: true` only after a `fix: false` (from the daemon's `STATE`, or just before
    /// the next `.location`).
    case state(fix: Bool, reason: String?)
    /// The daemon changed this client's authorization: an `AUTHORIZATION` object that no request was
    /// waiting for (a grant revoked or expired, rules reloaded; Core Location's
    /// `locationManagerDidChangeAuthorization`). When the client is no longer authorized, the daemon
    /// also ends the subscription: the sequence then throws `LocationClientError.server(request:
    /// "WATCH", ...)` (`meansNotAuthorized` is true).
    case authorization(Authorization)
    /// The satellites and DOPs of the location just delivered (a `SKY` object), when the subscription asked for
    /// them (`updates(satellites: true)`) and the client sees full accuracy.
    case satellites(SatelliteView)
    /// Authorized, but no location for now, and why and until when: a `STATE` with `waiting` (protocol 1.6) —
    /// reduced accuracy between paced reports, or When In Use while the user has no active login session. Says
    /// nothing about the fix (Core Location's `CLLocationUpdate.accuracyLimited`, `insufficientlyInUse`).
    case waiting(Waiting)
}

/// Why a subscription gets no location for now (`LocationUpdate.waiting`; docs/PROTOCOL.md "STATE").
public struct Waiting: Hashable, Sendable {
    /// The cause, as the daemon named it in `STATE.waiting`.
    public enum Cause: Hashable, Sendable {
        /// Reduced accuracy: between two paced reports (`accuracyLimited`).
        case accuracyLimited
        /// When In Use while the user has no active login session: nothing until one is active (`insufficientlyInUse`).
        case insufficientlyInUse
        /// A cause a newer daemon added, as it spelled it.
        case other(String)
    }

    public var cause: Cause
    /// The daemon's words, e.g. `"reduced accuracy: the next report is due in 14 min 58 s"` (`STATE.reason`).
    public var reason: String?
    /// Seconds until the next report is due, counted from the message (`STATE.nextReportIn`); nil when not known
    /// (not in use: until the user's session is active).
    public var nextReportIn: Double?
    /// The `STATE` object as received.
    public var json: String?

    /// Makes the value; each parameter is the property of the same name.
    public init(cause: Cause, reason: String? = nil, nextReportIn: Double? = nil, json: String? = nil) {
        self.cause = cause
        self.reason = reason
        self.nextReportIn = nextReportIn
        self.json = json
    }

    init(_ state: ServerMessage.State, waiting: String, json: String?) {
        let cause: Cause = switch waiting {
        case ServerMessage.State.accuracyLimited: .accuracyLimited
        case ServerMessage.State.insufficientlyInUse: .insufficientlyInUse
        default: .other(waiting)
        }
        self.init(cause: cause, reason: state.reason, nextReportIn: state.nextReportIn, json: json)
    }
}
