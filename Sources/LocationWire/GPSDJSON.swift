import LocationCore

/// Encodes fixes as gpsd-style JSON objects (gpsd_json(5)), one per line.
///
/// `TPV` carries the fix with gpsd's field names and units — `time` ISO 8601 UTC, `lat`/`lon` degrees,
/// `altHAE`/`altMSL`/`geoidSep` metres, `speed`/`climb` m/s, `track`/`magvar` degrees, `eph`/`epx`/`epy`/`epv`
/// metres — plus `heading` (degrees true) when known. `SKY` carries DOPs and satellites. Absent values are
/// omitted, never written as 0. `locationctl decode` and the daemon use this same encoder.
public struct GPSDEncoder {
    private var writer = JSONObjectWriter(reservingCapacity: 1024)

    public init() {}

    /// Appends a `TPV` line for `fix` to `out`.
    /// - Parameters:
    ///   - fix: the fix.
    ///   - accuracy: `"full"` or `"reduced"` when the line goes to a client (the policy's decision); nil for
    ///     `locationctl decode`.
    public mutating func appendTPV(_ fix: Fix, accuracy: String? = nil, to out: inout [UInt8]) {
        writer.reset()
        writer.begin()
        writer.field("class", "TPV")
        writer.field("device", fix.device)
        writer.field("mode", fix.mode.rawValue)
        if fix.hasPosition, let q = fix.quality, q.gpsdStatus != 1 { writer.field("status", q.gpsdStatus) }
        if let time = fix.time, time.date != nil {
            writer.rawStringField("time") { time.appendISO8601(to: &$0) }
        }
        if fix.hasPosition {
            writer.field("lat", fix.latitude, decimals: 9)
            writer.field("lon", fix.longitude, decimals: 9)
            writer.field("altHAE", fix.altitudeHAE, decimals: 4)
            writer.field("altMSL", fix.altitudeMSL, decimals: 4)
            writer.field("geoidSep", fix.geoidSeparation, decimals: 3)
            writer.field("speed", fix.speed, decimals: 4)
            writer.field("track", fix.track, decimals: 4)
            writer.field("magvar", fix.magneticVariation, decimals: 2)
            writer.field("climb", fix.climb, decimals: 4)
            writer.field("eph", fix.eph, decimals: 3)
            writer.field("epx", fix.epx, decimals: 3)
            writer.field("epy", fix.epy, decimals: 3)
            writer.field("epv", fix.epv, decimals: 3)
        }
        writer.field("heading", fix.heading, decimals: 4)
        writer.field("accuracy", accuracy)
        writer.end()
        writer.append(to: &out)
    }

    /// Appends a `SKY` line (DOPs, satellites used/seen, satellites) for `fix` to `out`.
    public mutating func appendSKY(_ fix: Fix, to out: inout [UInt8]) {
        writer.reset()
        writer.begin()
        writer.field("class", "SKY")
        writer.field("device", fix.device)
        if let time = fix.time, time.date != nil {
            writer.rawStringField("time") { time.appendISO8601(to: &$0) }
        }
        writer.field("hdop", fix.dop.horizontal, decimals: 2)
        writer.field("vdop", fix.dop.vertical, decimals: 2)
        writer.field("pdop", fix.dop.position, decimals: 2)
        writer.field("tdop", fix.dop.time, decimals: 2)
        writer.field("gdop", fix.dop.geometric, decimals: 2)
        writer.field("nSat", fix.satellitesVisible)
        writer.field("uSat", fix.satellitesUsed)
        if !fix.satellites.isEmpty {
            writer.beginArray("satellites")
            for sat in fix.satellites {
                writer.beginElement()
                writer.field("PRN", sat.prn)
                writer.field("gnssid", sat.constellation?.rawValue)
                writer.field("el", sat.elevation, decimals: 1)
                writer.field("az", sat.azimuth, decimals: 1)
                writer.field("ss", sat.signalToNoise, decimals: 1)
                writer.field("used", sat.used)
                writer.field("sigid", sat.signalID)
                writer.endElement()
            }
            writer.endArray()
        }
        writer.end()
        writer.append(to: &out)
    }
}
