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
        writer.field("class", constant: "TPV")
        writer.field("device", fix.device)
        writer.field("mode", fix.mode.rawValue)
        if fix.hasPosition, let q = fix.quality, q.gpsdStatus != 1 { writer.field("status", q.gpsdStatus) }
        if let time = fix.time, time.date != nil { writer.timeField(time) }
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
    ///
    /// `uSat` counts the listed satellites marked used, as gpsd's SKY does (gpsd_json(5) SKY.uSat), so the two
    /// always agree; without a list it is the receiver's own count (`Fix.satellitesUsed`).
    public mutating func appendSKY(_ fix: Fix, to out: inout [UInt8]) {
        writer.reset()
        writer.begin()
        writer.field("class", constant: "SKY")
        writer.field("device", fix.device)
        if let time = fix.time, time.date != nil { writer.timeField(time) }
        writer.field("hdop", fix.dop.horizontal, decimals: 2)
        writer.field("vdop", fix.dop.vertical, decimals: 2)
        writer.field("pdop", fix.dop.position, decimals: 2)
        writer.field("tdop", fix.dop.time, decimals: 2)
        writer.field("gdop", fix.dop.geometric, decimals: 2)
        writer.field("nSat", fix.satellitesVisible)
        writer.field("uSat", fix.usedSatelliteCount)
        if !fix.satellites.isEmpty {
            writer.beginArray("satellites")
            for sat in fix.satellites { writer.satelliteElement(sat) }
            writer.endArray()
        }
        writer.end()
        writer.append(to: &out)
    }
}

extension JSONObjectWriter {
    /// Writes `"time":"YYYY-MM-DDThh:mm:ss.sssZ"` (gpsd_json(5) TPV.time, SKY.time): the text of
    /// `UTCTime.appendISO8601`, written straight into the buffer when the year has four digits (always, in
    /// practice); other years go through `appendISO8601`.
    mutating func timeField(_ time: UTCTime) {
        guard let date = time.date, date.year >= 0 && date.year <= 9999 else {
            rawStringField("time") { time.appendISO8601(to: &$0) }
            return
        }
        key("time")
        buffer.ensure(26)
        var p = buffer.base + buffer.count
        put("\"", &p)
        putTwoDigits(date.year / 100, &p)
        putTwoDigits(date.year % 100, &p)
        put("-", &p)
        putTwoDigits(date.month, &p)
        put("-", &p)
        putTwoDigits(date.day, &p)
        put("T", &p)
        putTwoDigits(time.hour, &p)
        put(":", &p)
        putTwoDigits(time.minute, &p)
        put(":", &p)
        putTwoDigits(time.second, &p)
        put(".", &p)
        let ms = time.millisecond
        p[0] = UInt8(truncatingIfNeeded: 48 + ms / 100)
        p += 1
        putTwoDigits(ms % 100, &p)
        put("Z\"", &p)
        buffer.count = p - buffer.base
    }

    /// Writes the last two decimal digits of `value` (≥ 0) at `p` and moves `p` past them, as
    /// `UTCTime.appendISO8601` does for each date and time part.
    @inline(__always)
    private func putTwoDigits(_ value: Int, _ p: inout UnsafeMutablePointer<UInt8>) {
        p[0] = UInt8(truncatingIfNeeded: 48 + value / 10 % 10)
        p[1] = UInt8(truncatingIfNeeded: 48 + value % 10)
        p += 2
    }

    /// Writes one element of a SKY `satellites` array: `{"PRN":…,"gnssid":…,"el":…,"az":…,"ss":…,"used":…,
    /// "sigid":…}`, absent values omitted, el/az/ss rounded to 0.1.
    ///
    /// SKY lines are most of the output (17 satellites a line on average), so the common case has its own
    /// path: when every number is a whole number in 0...999 — always so in real captures, since receivers
    /// send integer PRNs, elevations, azimuths and SNRs — the element is written with one capacity check,
    /// its keys as constant text and its numbers as one to three digits. Any other satellite is written
    /// field by field. Both paths write the same bytes.
    mutating func satelliteElement(_ sat: Satellite) {
        guard let elevation = Self.smallWhole(sat.elevation), let azimuth = Self.smallWhole(sat.azimuth),
              let snr = Self.smallWhole(sat.signalToNoise), UInt(bitPattern: sat.prn) < 1000,
              UInt(bitPattern: sat.signalID ?? 0) < 1000
        else {
            beginElement()
            field("PRN", sat.prn)
            field("gnssid", sat.constellation?.rawValue)
            field("el", sat.elevation, decimals: 1)
            field("az", sat.azimuth, decimals: 1)
            field("ss", sat.signalToNoise, decimals: 1)
            field("used", sat.used)
            field("sigid", sat.signalID)
            endElement()
            return
        }
        // The longest element: `,{"PRN":999,"gnssid":9,"el":999,"az":999,"ss":999,"used":false,"sigid":999}`.
        buffer.ensure(80)
        var p = buffer.base + buffer.count
        if !first { put(",", &p) }
        put("{\"PRN\":", &p)
        putSmall(sat.prn, &p)
        if let gnssid = sat.constellation?.rawValue { put(",\"gnssid\":", &p); putSmall(gnssid, &p) }
        if elevation != Self.absent { put(",\"el\":", &p); putSmall(elevation, &p) }
        if azimuth != Self.absent { put(",\"az\":", &p); putSmall(azimuth, &p) }
        if snr != Self.absent { put(",\"ss\":", &p); putSmall(snr, &p) }
        put(sat.used ? ",\"used\":true" : ",\"used\":false", &p)
        if let signal = sat.signalID { put(",\"sigid\":", &p); putSmall(signal, &p) }
        put("}", &p)
        buffer.count = p - buffer.base
        first = false
    }

    /// `smallWhole`'s answer for an absent value.
    private static var absent: Int { -1 }

    /// A value the short path can print: `absent` for nil, the number for a whole number in 0...999 (which
    /// `field(_:_:decimals:)` prints as that integer); nil for any other value.
    @inline(__always)
    private static func smallWhole(_ value: Double?) -> Int? {
        guard let value else { return absent }
        guard value >= 0 && value < 1000 else { return nil }
        let whole = Int(value)
        return Double(whole) == value ? whole : nil
    }

    /// Writes `text` at `p` and moves `p` past it (capacity already ensured). Texts of 4 to 16 bytes are
    /// copied as two overlapping words (the small-`memcpy` trick), shorter ones byte by byte.
    @inline(__always)
    private func put(_ text: StaticString, _ p: inout UnsafeMutablePointer<UInt8>) {
        let n = text.utf8CodeUnitCount
        let source = UnsafeRawPointer(text.utf8Start)
        let target = UnsafeMutableRawPointer(p)
        if n >= 8 && n <= 16 {
            target.storeBytes(of: source.loadUnaligned(as: UInt64.self), as: UInt64.self)
            target.storeBytes(of: source.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self),
                              toByteOffset: n - 8, as: UInt64.self)
        } else if n >= 4 && n < 8 {
            target.storeBytes(of: source.loadUnaligned(as: UInt32.self), as: UInt32.self)
            target.storeBytes(of: source.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self),
                              toByteOffset: n - 4, as: UInt32.self)
        } else {
            for i in 0..<n { p[i] = text.utf8Start[i] }
        }
        p += n
    }

    /// Writes `value` (0...999) in decimal at `p` and moves `p` past it (capacity already ensured).
    @inline(__always)
    private func putSmall(_ value: Int, _ p: inout UnsafeMutablePointer<UInt8>) {
        let v = UInt8(truncatingIfNeeded: value % 10), tens = value / 10
        if tens == 0 {
            p[0] = 48 + v
            p += 1
        } else if tens < 10 {
            p[0] = 48 + UInt8(truncatingIfNeeded: tens)
            p[1] = 48 + v
            p += 2
        } else {
            p[0] = 48 + UInt8(truncatingIfNeeded: tens / 10)
            p[1] = 48 + UInt8(truncatingIfNeeded: tens % 10)
            p[2] = 48 + v
            p += 3
        }
    }
}
