import LocationCore

/// gpsd's report objects — `TPV` and `SKY` — byte for byte as gpsd 3.22 writes them for an NMEA receiver
/// (gpsd 3.22 `gpsd/gpsd_json.c`, `json_tpv_dump()` and `json_sky_dump()`, checked against the real daemon's
/// output in Tests/NMEATests/GpsdGoldens): members in gpsd's order, numbers in gpsd's `printf` formats, absent
/// values left out, each object ending in CR LF.
public enum GpsdReports {
    /// Appends a `TPV` object for `fix` (gpsd_json(5) TPV).
    ///
    /// A fix without a position is written as gpsd writes one: `class`, `device`, `mode` 1 and, when the fix has
    /// a dated time, `time` and `ept`. Pass a `Fix` without `time` to send a client nothing but `mode` 1.
    /// - Parameters:
    ///   - fix: the fix (positions in degrees WGS84, metres, m/s, degrees true).
    ///   - estimates: gpsd's error estimates for it (`GpsdErrorModel`); an empty value for none (reduced clients).
    ///   - device: the receiver's device path (TPV.device); nil leaves it out.
    ///   - out: the bytes to append to.
    public static func appendTPV(_ fix: Fix, estimates: GpsdEstimates, device: String?, to out: inout [UInt8]) {
        var w = GpsdObject(class: "TPV")
        w.string("device", device)
        let position = fix.hasPosition
        if position, let status = fix.quality?.gpsdStatus, status >= 2 { w.integer("status", status) }
        w.integer("mode", position ? fix.mode.rawValue : FixMode.noFix.rawValue)
        let dated = fix.time.flatMap { $0.date != nil ? $0 : nil }
        if let time = dated { w.time("time", time) }
        if dated != nil { w.number("ept", estimates.ept, 3) }
        if position {
            let threeD = fix.mode == .threeDimensional
            w.number("lat", fix.latitude, 9)
            w.number("lon", fix.longitude, 9)
            // gpsd keeps no altitude in a 2D fix (a receiver's altitude there is an assumed one).
            if threeD {
                w.number("altHAE", fix.altitudeHAE, 4)
                w.number("altMSL", fix.altitudeMSL, 4)
                w.number("alt", fix.altitudeMSL ?? fix.altitudeHAE, 4)
            }
            w.number("epx", estimates.epx, 3)
            w.number("epy", estimates.epy, 3)
            w.number("epv", estimates.epv, 3)
            w.number("track", fix.track, 4)
            w.number("magtrack", estimates.magneticTrack, 4)
            w.number("magvar", estimates.magneticVariation, 1)
            w.number("speed", fix.speed, 3)
            if threeD { w.number("climb", fix.climb.map { abs($0) < 0.0005 ? 0 : $0 }, 3) }
            w.number("epd", estimates.epd, 4)
            w.number("eps", estimates.eps, 2)
            if threeD {
                w.number("epc", estimates.epc, 2)
                w.number("geoidSep", fix.geoidSeparation, 3)
            }
            w.number("eph", estimates.eph, 3)
            w.number("sep", estimates.sep, 3)
            // GGA's DGPS age and station, last, as gpsd 3.22 prints them (`%.1f`, `%d`; its golden for cat-ms352).
            w.number("dgpsAge", fix.differentialAge, 1)
            w.integer("dgpsSta", fix.differentialStation)
        }
        w.end(to: &out)
    }

    /// Appends a `SKY` object for `fix`'s satellites and gpsd's DOPs (gpsd_json(5) SKY): `xdop` … `pdop` as
    /// gpsd orders them (`%.2f`), `nSat` and `uSat`, then each satellite as `PRN`, `el`, `az`, `ss` (`%.1f`; an
    /// unreported signal strength as 0.0, as gpsd prints it), `used`, `gnssid`, `svid` in gpsd's numbering
    /// (`GpsdSatelliteID`).
    /// - Parameters:
    ///   - fix: the fix whose satellites to list.
    ///   - dop: gpsd's DOPs (`GpsdEstimates.dop`).
    ///   - device: the receiver's device path; nil leaves it out.
    ///   - out: the bytes to append to.
    public static func appendSKY(_ fix: Fix, dop: GpsdDOP, device: String?, to out: inout [UInt8]) {
        var w = GpsdObject(class: "SKY")
        w.string("device", device)
        w.number("xdop", dop.xdop, 2)
        w.number("ydop", dop.ydop, 2)
        w.number("vdop", dop.vdop, 2)
        w.number("tdop", dop.tdop, 2)
        w.number("hdop", dop.hdop, 2)
        w.number("gdop", dop.gdop, 2)
        w.number("pdop", dop.pdop, 2)
        w.integer("nSat", fix.satellites.count)
        w.integer("uSat", fix.satellites.reduce(0) { $0 + ($1.used ? 1 : 0) })
        w.key("satellites")
        w.out.append(UInt8(ascii: "["))
        for (i, sat) in fix.satellites.enumerated() {
            if i > 0 { w.out.append(UInt8(ascii: ",")) }
            let id = GpsdSatelliteID(sat)
            w.openNested()
            w.integer("PRN", id.prn)
            // gpsd 3.22 reads a GSV's empty elevation and azimuth as 0, and prints them so (as `ss`).
            w.number("el", sat.elevation ?? 0, 1)
            w.number("az", sat.azimuth ?? 0, 1)
            w.number("ss", sat.signalToNoise ?? 0, 1)
            w.bool("used", sat.used)
            w.integer("gnssid", id.gnssid)
            w.integer("svid", id.svid)
            w.closeNested()
        }
        w.out.append(UInt8(ascii: "]"))
        w.end(to: &out)
    }
}

/// A satellite's identity in gpsd's numbering (gpsd_json(5) SKY.satellites `PRN`, `gnssid`, `svid`).
///
/// gpsd's PRN: GPS 1–32, SBAS 33–64 (svid 120–151), GLONASS 65–96 (svid 1–32), QZSS 193–202 (svid 1–10),
/// Galileo 301–336 (svid 1–36; NMEA 1–36, Quectel's 101–136), BeiDou 401–463 (svid 1–63); gnssid as u-blox numbers systems (0 GPS, 1 SBAS,
/// 2 Galileo, 3 BeiDou, 5 QZSS, 6 GLONASS, 7 NavIC). Source: gpsd 3.22 `driver_nmea0183.c` `nmeaid_to_prn()`
/// and gpsd_json(5), checked against gpsd's SKY output.
public struct GpsdSatelliteID: Hashable, Sendable {
    public var prn: Int
    public var gnssid: Int
    public var svid: Int

    /// gpsd's identity for `satellite` (its NMEA id and constellation).
    public init(_ satellite: Satellite) {
        let n = satellite.prn
        switch satellite.constellation ?? Self.guess(n) {
        case .gps: (prn, gnssid, svid) = (n, 0, n)
        case .sbas: (prn, gnssid, svid) = n >= 120 ? (n - 87, 1, n) : (n, 1, n + 87)
        case .glonass: (prn, gnssid, svid) = n > 64 ? (n, 6, n - 64) : (n + 64, 6, n)
        case .galileo:
            // Quectel numbers Galileo 101–136 (gpsd reads its 102 as 302, svid 2).
            if n > 300 { (prn, gnssid, svid) = (n, 2, n - 300) }
            else if n > 100 { (prn, gnssid, svid) = (n + 200, 2, n - 100) }
            else { (prn, gnssid, svid) = (n + 300, 2, n) }
        case .beidou:
            if n > 400 { (prn, gnssid, svid) = (n, 3, n - 400) }
            else if n > 200 { (prn, gnssid, svid) = (n + 200, 3, n - 200) }
            else { (prn, gnssid, svid) = (n + 400, 3, n) }
        case .qzss: (prn, gnssid, svid) = n > 192 ? (n, 5, n - 192) : (n + 192, 5, n)
        case .imes: (prn, gnssid, svid) = (n, 4, n)
        case .navic: (prn, gnssid, svid) = (n, 7, n)
        }
    }

    /// The system an NMEA id without a talker falls in (NMEA 0183 v4.11 §GSV id ranges as gpsd reads them).
    static func guess(_ n: Int) -> Constellation {
        switch n {
        case 33...64, 120...158: return .sbas
        case 65...96: return .glonass
        case 193...202: return .qzss
        case 201...263, 401...463: return .beidou
        case 301...336: return .galileo
        default: return .gps
        }
    }
}
