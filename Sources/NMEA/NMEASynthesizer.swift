import LocationCore

/// NMEA 0183 sentences made from a `Fix`: for gpsd watchers in `nmea` mode and NMEA sockets (GeoClue), which
/// must get sentences made from the fix they may see (a reduced one, say), never the receiver's own.
///
/// Sentences follow NMEA 0183 v4.11 (§RMC, §GGA, §GSA, §GSV) with talker `GP` for RMC and GGA — what gpsd's own
/// synthesized NMEA (`pseudonmea.c`) and GeoClue's parser expect — and each system's talker for its satellites,
/// each with its `*hh` checksum and CR LF. Absent values are
/// empty fields. Positions are written to 1e-6 minute (about 2 mm), times to the millisecond.
public enum NMEASynthesizer {
    /// Appends `$GPRMC`: time, status (A valid / V no fix), position, speed (knots), track (degrees true), date,
    /// magnetic variation, mode indicator (A autonomous, D differential, E estimated, N no fix).
    public static func appendRMC(_ fix: Fix, to out: inout [UInt8]) {
        var f: [String] = ["GPRMC", time(fix), fix.hasPosition ? "A" : "V"]
        f += position(fix)
        f.append(fix.hasPosition ? fixed(fix.speed.map { $0 / Units.metersPerSecondPerKnot }, 3) : "")
        f.append(fix.hasPosition ? fixed(fix.track, 2) : "")
        if let d = fix.time?.date {
            f.append(two(d.day) + two(d.month) + two(d.year % 100))
        } else {
            f.append("")
        }
        if fix.hasPosition, let v = fix.magneticVariation {
            f += [fixed(abs(v), 1), v < 0 ? "W" : "E"]
        } else {
            f += ["", ""]
        }
        f.append(modeIndicator(fix))
        append(f, to: &out)
    }

    /// Appends `$GPGGA`: time, position, quality (0 no fix, 1 GPS, 2 DGPS, 4 RTK fixed, 5 RTK float, 6 estimated),
    /// satellites used, HDOP (`horizontalDOP`), altitude above mean sea level (m), geoid separation (m).
    public static func appendGGA(_ fix: Fix, to out: inout [UInt8]) {
        var f: [String] = ["GPGGA", time(fix)]
        f += position(fix)
        f.append(String(fix.hasPosition ? ggaQuality(fix.quality) : 0))
        f.append(fix.hasPosition ? (fix.satellitesUsed.map { two(min($0, 99)) } ?? "") : "")
        f.append(fix.hasPosition ? fixed(horizontalDOP(fix), 2) : "")
        let threeD = fix.hasPosition && fix.mode == .threeDimensional
        f += [threeD ? fixed(fix.altitudeMSL, 3) : "", threeD && fix.altitudeMSL != nil ? "M" : ""]
        f += [threeD ? fixed(fix.geoidSeparation, 3) : "", threeD && fix.geoidSeparation != nil ? "M" : ""]
        f += ["", ""]
        append(f, to: &out)
    }

    /// Appends the GSA sentences: automatic mode, fix type (1 none, 2 2D, 3 3D), up to 12 used satellites' NMEA ids,
    /// PDOP, HDOP, VDOP. Used satellites of one system: one `$GPGSA` (`$GLGSA`, ... for a receiver of another
    /// system alone), as before NMEA 4.10. Of several: one `$GNGSA` per system and 12 satellites, each with its
    /// system id (NMEA 0183 v4.11 §GSA field 18, Table 20: 1 GPS, with SBAS and QZSS in GPS's numbering; 2 GLONASS;
    /// 3 Galileo; 4 BeiDou; 5 QZSS; 6 NavIC) — a PRN names a satellite only within its system, and one GSA's 12
    /// fields would leave the rest out (a new-user helper saw 12 of a u-blox M9N's 25 used satellites, GLONASS
    /// numbers under `GP`).
    public static func appendGSA(_ fix: Fix, to out: inout [UInt8]) {
        let fixType = String(fix.hasPosition ? fix.mode.rawValue : 1)
        let dops = [fixed(fix.dop.position, 2), fixed(fix.dop.horizontal, 2), fixed(fix.dop.vertical, 2)]
        var systems: [(id: Int, talker: String, prns: [Int])] = []
        for sat in fix.satellites where sat.used {
            let (id, talker) = system(sat)
            if let i = systems.firstIndex(where: { $0.id == id }) { systems[i].prns.append(sat.prn) } else { systems.append((id, talker, [sat.prn])) }
        }
        guard systems.count > 1 else {
            let prns = systems.first?.prns.prefix(12).map(two) ?? []
            append([(systems.first?.talker ?? "GP") + "GSA", "A", fixType] + prns + Array(repeating: "", count: 12 - prns.count) + dops,
                   to: &out)
            return
        }
        for system in systems {
            var start = 0
            repeat {
                let prns = system.prns[start..<min(system.prns.count, start + 12)].map(two)
                append(["GNGSA", "A", fixType] + prns + Array(repeating: "", count: 12 - prns.count) + dops + [String(system.id)],
                       to: &out)
                start += 12
            } while start < system.prns.count
        }
    }

    /// Appends the GSV pages for the fix's satellites, one set per system and signal (four satellites a page), each
    /// under its system's talker — `$GPGSV` (GPS, SBAS, QZSS numbered as GPS), `$GLGSV`, `$GAGSV`, `$GBGSV`,
    /// `$GQGSV`, `$GIGSV` — with the receiver's own numbering within it (NMEA 0183 v4.11 §GSV): total pages, page
    /// number, satellites in view in the set, then per satellite its id, elevation (degrees), azimuth (degrees true),
    /// SNR (dB-Hz), and the signal id (4.10+) when the receiver gave one. Nothing when the fix lists no satellites.
    public static func appendGSV(_ fix: Fix, to out: inout [UInt8]) {
        var sets: [(talker: String, signal: Int?, satellites: [Satellite])] = []
        for sat in fix.satellites {
            let talker = system(sat).talker
            if let i = sets.firstIndex(where: { $0.talker == talker && $0.signal == sat.signalID }) {
                sets[i].satellites.append(sat)
            } else {
                sets.append((talker, sat.signalID, [sat]))
            }
        }
        for set in sets {
            let sats = set.satellites, pages = (sats.count + 3) / 4
            for page in 0..<pages {
                var f: [String] = [set.talker + "GSV", String(pages), String(page + 1), two(sats.count)]
                for sat in sats[(page * 4)..<min(sats.count, page * 4 + 4)] {
                    f.append(two(sat.prn))
                    // What a receiver sent out of range is left empty, an azimuth brought to 000–359 (the fuzzer
                    // found -3 written as "0-3", which no reader takes).
                    f.append(whole(sat.elevation, in: -90...90).map(two) ?? "")
                    f.append(whole(sat.azimuth, in: -3600...3600).map { three(($0 % 360 + 360) % 360) } ?? "")
                    f.append(whole(sat.signalToNoise, in: 0...99).map(two) ?? "")
                }
                if let signal = set.signal { f.append(String(signal, radix: 16, uppercase: true)) }
                append(f, to: &out)
            }
        }
    }

    /// A satellite's NMEA system: its GSA system id and its talker (NMEA 0183 v4.11 Table 20 and §6.1.2 talkers). SBAS
    /// and unknown satellites are GPS's; QZSS numbered in GPS's range (193–202, NMEA 4.10) too.
    static func system(_ sat: Satellite) -> (id: Int, talker: String) {
        switch sat.constellation {
        case .glonass?: return (2, "GL")
        case .galileo?: return (3, "GA")
        case .beidou?: return (4, "GB")
        case .qzss? where sat.prn < 193: return (5, "GQ")
        case .navic?: return (6, "GI")
        default: return (1, "GP")
        }
    }

    /// Appends the sentences for one epoch: RMC, GGA, GSA and, with `satellites`, the GSV pages.
    public static func appendEpoch(_ fix: Fix, satellites: Bool, to out: inout [UInt8]) {
        appendRMC(fix, to: &out)
        appendGGA(fix, to: &out)
        appendGSA(fix, to: &out)
        if satellites { appendGSV(fix, to: &out) }
    }

    /// GGA's HDOP: the fix's, else — a fix with an error estimate but no DOPs, as a reduced fix is — `eph` / 19 m
    /// (gpsd's eph = HDOP × 19 m, inverted), so that readers that take the accuracy from HDOP (GeoClue) see a
    /// reduced fix as coarse (19 m × 99.99 at most, field width), never as exact as an empty HDOP reads.
    static func horizontalDOP(_ fix: Fix) -> Double? {
        if let hdop = fix.dop.horizontal { return hdop }
        return fix.eph.map { min($0 / 19, 99.99) }
    }

    /// The checksum of a sentence body (between `$` and `*`): the XOR of its bytes (NMEA 0183 §5.2.1).
    public static func checksum<Bytes: Sequence>(_ body: Bytes) -> UInt8 where Bytes.Element == UInt8 {
        body.reduce(0, ^)
    }

    private static func append(_ fields: [String], to out: inout [UInt8]) {
        let body = Array(fields.joined(separator: ",").utf8)
        let sum = checksum(body)
        let hex = Array("0123456789ABCDEF".utf8)
        out.append(UInt8(ascii: "$"))
        out.append(contentsOf: body)
        out.append(contentsOf: [UInt8(ascii: "*"), hex[Int(sum >> 4)], hex[Int(sum & 15)], 13, 10])
    }

    private static func time(_ fix: Fix) -> String {
        guard let t = fix.time else { return "" }
        let ms = t.millisecond
        let fraction = ms % 10 == 0 ? two(ms / 10) : three(ms)
        return two(t.hour) + two(t.minute) + two(t.second) + "." + fraction
    }

    /// `ddmm.mmmmmm,N,dddmm.mmmmmm,E`, or four empty fields without a position.
    private static func position(_ fix: Fix) -> [String] {
        guard fix.hasPosition, let la = fix.latitude, let lo = fix.longitude else { return ["", "", "", ""] }
        return [angle(abs(la), degreeDigits: 2), la < 0 ? "S" : "N", angle(abs(lo), degreeDigits: 3), lo < 0 ? "W" : "E"]
    }

    /// Degrees and decimal minutes, minutes to 6 decimals (carrying a rounded 60 into the degrees).
    private static func angle(_ degrees: Double, degreeDigits: Int) -> String {
        var micro = Int((degrees * 60 * 1_000_000).rounded())  // millionths of a minute
        let perDegree = 60 * 1_000_000
        let whole = micro / perDegree
        micro %= perDegree
        let d = String(whole)
        return String(repeating: "0", count: max(0, degreeDigits - d.count)) + d
            + two(micro / 1_000_000) + "." + padded(micro % 1_000_000, 6)
    }

    /// `value` rounded to `decimals` places, or empty when absent.
    static func fixed(_ value: Double?, _ decimals: Int) -> String {
        guard let value, value.isFinite else { return "" }
        var scale = 1
        for _ in 0..<decimals { scale *= 10 }
        let units = Int((abs(value) * Double(scale)).rounded())
        let sign = value < 0 && units != 0 ? "-" : ""
        return sign + String(units / scale) + (decimals > 0 ? "." + padded(units % scale, decimals) : "")
    }

    /// `value` rounded to a whole number when it lies in `range` (finite), else nil.
    private static func whole(_ value: Double?, in range: ClosedRange<Double>) -> Int? {
        guard let value, range.contains(value) else { return nil }
        return Int(value.rounded())
    }

    /// `value` with leading zeros to `width` digits, its sign before them (`-03`, never `0-3`).
    private static func padded(_ value: Int, _ width: Int) -> String {
        let s = String(value.magnitude)
        return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - s.count)) + s
    }

    private static func two(_ v: Int) -> String { padded(v, 2) }
    private static func three(_ v: Int) -> String { padded(v, 3) }

    private static func ggaQuality(_ q: FixQuality?) -> Int {
        switch q {
        case .dgps?: return 2
        case .pps?: return 3
        case .rtkFixed?: return 4
        case .rtkFloat?: return 5
        case .deadReckoning?: return 6
        case .manual?: return 7
        case .simulated?: return 8
        case .gps?, nil: return 1
        }
    }

    private static func modeIndicator(_ fix: Fix) -> String {
        guard fix.hasPosition else { return "N" }
        switch fix.quality {
        case .dgps?: return "D"
        case .rtkFixed?: return "R"
        case .rtkFloat?: return "F"
        case .deadReckoning?: return "E"
        case .manual?: return "M"
        case .simulated?: return "S"
        case .pps?: return "P"
        case .gps?, nil: return "A"
        }
    }
}
