import CLibgps
import LocationCore
import LocationPosix

// MARK: - Mapping gps_data_t to Fix

extension GpsdReceiver {
    /// Maps a TPV report (libgps's `gps_fix_t` and the `set` bits of that report) to a `Fix`.
    ///
    /// Fields (gpsd_json(5) TPV; libgps fills absent ones with NaN, which become nil): `mode`; `time`
    /// (UTC, rounded to the millisecond); `lat`, `lon` (degrees); `altHAE`, `altMSL`, `geoidSep` (metres);
    /// `speed`, `climb` (m/s); `track`, `magtrack`, `magvar` (degrees); `eph`, `epx`, `epy`, `epv` (metres); all
    /// of gpsd's estimates (also `sep`, `ept`, `eps`, `epc`, `epd`) as `expectedErrors`; `status` as the quality
    /// (absent with a 2D/3D mode: a plain GPS fix).
    static func fix(from tpv: gps_fix_t, set: gps_mask_t) -> Fix {
        var fix = Fix()
        switch tpv.mode {
        case 2: fix.mode = .twoDimensional
        case 3: fix.mode = .threeDimensional
        default: fix.mode = .noFix
        }
        if set & TIME_SET != 0 {
            fix.time = utcTime(seconds: Int(tpv.time.tv_sec), nanoseconds: Int(tpv.time.tv_nsec))
        }
        // gpsd_json(5): TPV.status is "not present" for a plain GPS fix.
        fix.quality = quality(gpsdStatus: Int(tpv.status)) ?? (fix.mode.hasPosition ? .gps : nil)
        fix.latitude = finite(tpv.latitude)
        fix.longitude = finite(tpv.longitude)
        fix.altitudeHAE = finite(tpv.altHAE)
        fix.altitudeMSL = finite(tpv.altMSL)
        fix.geoidSeparation = finite(tpv.geoid_sep)
        fix.speed = finite(tpv.speed)
        fix.track = finite(tpv.track)
        fix.climb = finite(tpv.climb)
        fix.magneticVariation = finite(tpv.magnetic_var)
        fix.magneticTrack = finite(tpv.magnetic_track)
        fix.eph = finite(tpv.eph)
        fix.epx = finite(tpv.epx)
        fix.epy = finite(tpv.epy)
        fix.epv = finite(tpv.epv)
        // gpsd's own estimates, which the gpsd front passes on unchanged rather than computing its own.
        let given = ExpectedErrors(latitude: fix.epy, longitude: fix.epx, altitude: fix.epv, horizontal: fix.eph,
                                   spherical: finite(tpv.sep), time: finite(tpv.ept), speed: finite(tpv.eps),
                                   climb: finite(tpv.epc), track: finite(tpv.epd))
        if given != ExpectedErrors() { fix.expectedErrors = given }
        return fix
    }

    /// A POSIX time (libgps `timespec_t`: seconds and nanoseconds since 1970-01-01 UTC) as a dated
    /// `UTCTime`, rounded to the nearest millisecond.
    static func utcTime(seconds: Int, nanoseconds: Int) -> UTCTime {
        let milliseconds = seconds * 1000 + (nanoseconds + 500_000) / 1_000_000
        let perDay = UTCTime.millisecondsPerDay
        var days = milliseconds / perDay
        var ofDay = milliseconds % perDay
        if ofDay < 0 {
            days -= 1
            ofDay += perDay
        }
        return UTCTime(date: CivilDate(daysSinceUnixEpoch: days), millisecondsOfDay: ofDay)
    }

    /// gpsd_json(5) TPV.status: 1 GPS, 2 DGPS, 3 RTK fixed, 4 RTK float, 5 dead reckoning, 6 GNSS + dead
    /// reckoning, 7 time only (surveyed/manual), 8 simulated, 9 P(Y) code; 0 unknown → nil.
    static func quality(gpsdStatus: Int) -> FixQuality? {
        switch gpsdStatus {
        case 1, 6: return .gps  // 6: a GNSS fix that dead reckoning helps along
        case 2: return .dgps
        case 3: return .rtkFixed
        case 4: return .rtkFloat
        case 5: return .deadReckoning
        case 7: return .manual
        case 8: return .simulated
        case 9: return .pps
        default: return nil
        }
    }

    /// How long one connection attempt may take before gpsd counts as unreachable.
    static let connectTimeout = Duration.seconds(3)

    /// Why `gps_open` failed, from the negative netlib code it leaves in errno (gps_errstr(3) text).
    static func describeOpenFailure(_ code: Int32) -> String {
        if code < 0, let text = gps_errstr(code) { return String(cString: text) }
        if code > 0 { return lowercasedFirst(Errno(rawValue: code).description) }
        return "cannot connect"
    }

    static func finite(_ value: Double) -> Double? { value.isFinite ? value : nil }

    static func lowercasedFirst(_ text: String) -> String {
        guard let first = text.first else { return text }
        return first.lowercased() + text.dropFirst()
    }

    /// A NUL-terminated C character array (imported as a tuple) as a String.
    static func string<T>(fromCharacters tuple: T) -> String {
        withUnsafeBytes(of: tuple) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
