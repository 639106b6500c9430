import LocationCore
import LocationWire

/// Turns a fix into the bytes an uplink publishes.
public enum UplinkReport {
    /// The OwnTracks location object for `fix` (owntracks.org/booklet/tech/json, `_type=location`), so
    /// that OwnTracks Recorder and Home Assistant's OwnTracks integration take it unchanged:
    /// `lat`, `lon` (degrees, WGS84), `tst` (Unix seconds of the fix, UTC), `acc` (horizontal accuracy,
    /// metres: gpsd's `eph`), `alt` (metres above mean sea level), `vac` (vertical accuracy, metres:
    /// `epv`), `vel` (km/h, from the fix's m/s), `cog` (course over ground, degrees true), `tid` (tracker
    /// id). OwnTracks takes integers for `tst`, `acc`, `alt`, `vac`, `vel` and `cog`; they are rounded.
    /// Fields the fix lacks (a reduced fix has no altitude, speed or course) are left out.
    /// - Returns: nil when the fix has no position or no full date and time.
    public static func owntracks(_ fix: Fix, trackerID: String) -> [UInt8]? {
        guard fix.hasPosition, let latitude = fix.latitude, let longitude = fix.longitude,
              let milliseconds = fix.time?.unixMilliseconds else { return nil }
        var writer = JSONObjectWriter()
        writer.begin()
        writer.field("_type", constant: "location")
        writer.field("lat", latitude, decimals: 7)
        writer.field("lon", longitude, decimals: 7)
        writer.field("tst", milliseconds / 1000)
        writer.field("acc", rounded(fix.eph))
        writer.field("alt", rounded(fix.altitudeMSL))
        writer.field("vac", rounded(fix.epv))
        writer.field("vel", rounded(fix.speed.map { $0 * 3.6 }))
        writer.field("cog", rounded(fix.track))
        writer.field("tid", trackerID)
        writer.end(newline: false)
        return writer.bytes
    }

    /// Our `TPV` object (docs/PROTOCOL.md "TPV"), without its line end, with `accuracy`.
    public static func tpv(_ fix: Fix, accuracy: AccuracyAuthorization) -> [UInt8]? {
        guard fix.hasPosition else { return nil }
        var encoder = GPSDEncoder()
        var out: [UInt8] = []
        encoder.appendTPV(fix, accuracy: accuracy.rawValue, to: &out)
        while out.last == 10 || out.last == 13 { out.removeLast() }
        return out
    }

    private static func rounded(_ value: Double?) -> Int? {
        guard let value, value.isFinite, abs(value) < 1e9 else { return nil }
        return Int(value.rounded())
    }
}
