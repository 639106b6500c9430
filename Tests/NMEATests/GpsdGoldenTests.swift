import FoundationEssentials
import LocationCore
import LocationWire
import NMEA
import Testing

/// Our TPV and SKY lines against the real gpsd 3.22's for the same epochs (GpsdGoldens/*.gpsd, made by
/// GpsdGoldens/regenerate.py under gpsfake): same members in the same order with the same printed values.
///
/// Compared per epoch: gpsd's last TPV (and last SKY) before the next fix time, against ours for that time.
/// Left out of the comparison, because they vary per run or are not ours to match: `device` (the pty gpsfake
/// opened), the date (gpsd guesses a year for captures without one), and `velN`/`velE`/`velD` (from SkyTraq's
/// proprietary `$PSTI,030`, not decoded).
@Suite("gpsd 3.22 goldens")
struct GpsdGoldenTests {
    static let goldens = ["skytraq-dgps.log", "haicom-305N.log", "ublox-neo-m9n-nmea.log", "telit-he910.log"]

    static var directory: String {
        var path = #filePath
        path = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
        return path + "/GpsdGoldens"
    }

    /// A flat JSON object's members as (name, printed value) pairs in order; a nested array stays one value.
    static func members(_ line: Substring) -> [(String, String)] {
        var result: [(String, String)] = []
        let body = Array(line.utf8.dropFirst().dropLast())
        var depth = 0, inString = false, start = 0
        func flush(_ end: Int) {
            let text = String(decoding: body[start..<end], as: UTF8.self)
            guard let colon = text.firstIndex(of: ":") else { return }
            result.append((String(text[..<colon].filter { $0 != "\"" }),
                           String(text[text.index(after: colon)...])))
        }
        for (i, b) in body.enumerated() {
            if inString { if b == UInt8(ascii: "\"") { inString = false }; continue }
            switch b {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            case UInt8(ascii: ",") where depth == 0: flush(i); start = i + 1
            default: break
            }
        }
        flush(body.count)
        return result
    }

    /// Drops what the comparison leaves out (see the suite's comment); the date part of `time`.
    static func normalized(_ m: [(String, String)]) -> [(String, String)] {
        m.compactMap { key, value in
            if key == "device" { return nil }
            // NED velocities gpsd reads from SkyTraq's proprietary $PSTI,030, which we do not decode.
            if key == "velN" || key == "velE" || key == "velD" { return nil }
            if key == "time" { return (key, String(value.split(separator: "T").last ?? "")) }
            return (key, value)
        }
    }

    struct Epoch { var tpv: [(String, String)]?; var sky: [(String, String)]? }

    /// gpsd's last TPV with a time and last SKY for each time of day.
    static func gpsdEpochs(_ name: String) throws -> [String: Epoch] {
        guard let data = FileManager.default.contents(atPath: directory + "/" + name + ".gpsd") else {
            throw CaptureError.unreadable(name + ".gpsd")
        }
        var result: [String: Epoch] = [:]
        var lastTime: String?
        for rawBytes in data.split(separator: 10) where rawBytes.first == UInt8(ascii: "{") {
            let line = Substring(String(decoding: rawBytes.last == 13 ? rawBytes.dropLast() : rawBytes, as: UTF8.self))
            let m = members(line)
            if line.hasPrefix("{\"class\":\"TPV\""), let t = m.first(where: { $0.0 == "time" })?.1 {
                let tod = String(t.split(separator: "T").last ?? "")
                lastTime = tod
                result[tod, default: Epoch()].tpv = m
            } else if line.hasPrefix("{\"class\":\"SKY\""), let t = lastTime {
                result[t, default: Epoch()].sky = m
            }
        }
        return result
    }

    /// Our TPV and SKY lines for each time of day.
    static func ourEpochs(_ name: String) throws -> [String: Epoch] {
        var model = GpsdErrorModel()
        var result: [String: Epoch] = [:]
        for fix in Captures.decode(try Captures.bytes(name)) {
            let e = model.estimates(for: fix)
            guard fix.time?.date != nil else { continue }
            var tpv: [UInt8] = [], sky: [UInt8] = []
            GpsdReports.appendTPV(fix, estimates: e, device: "/dev/gps0", to: &tpv)
            GpsdReports.appendSKY(fix, dop: e.dop, device: "/dev/gps0", to: &sky)
            #expect(tpv.suffix(2) == [13, 10])
            let tpvLine = String(decoding: tpv.dropLast(2), as: UTF8.self)
            let m = members(Substring(tpvLine))
            guard let t = m.first(where: { $0.0 == "time" })?.1 else { continue }
            let tod = String(t.split(separator: "T").last ?? "")
            result[tod] = Epoch(tpv: m, sky: members(Substring(String(decoding: sky.dropLast(2), as: UTF8.self))))
        }
        return result
    }

    static func describe(_ m: [(String, String)]) -> String { m.map { "\($0.0)=\($0.1)" }.joined(separator: " ") }

    @Test("our TPV lines equal gpsd's, member for member", arguments: goldens)
    func tpvLines(name: String) throws {
        let theirs = try Self.gpsdEpochs(name), ours = try Self.ourEpochs(name)
        var same = 0, total = 0
        var fieldSame: [String: Int] = [:], fieldTotal: [String: Int] = [:]
        var shown = 0
        for (time, epoch) in theirs.sorted(by: { $0.key < $1.key }) {
            guard let g = epoch.tpv else { continue }
            total += 1
            let expected = Self.normalized(g)
            let actual = ours[time]?.tpv.map { Self.normalized($0) } ?? []
            let a = Dictionary(actual, uniquingKeysWith: { x, _ in x })
            for (k, v) in expected {
                fieldTotal[k, default: 0] += 1
                if a[k] == v { fieldSame[k, default: 0] += 1 }
            }
            if expected.map({ $0.0 + "=" + $0.1 }) == actual.map({ $0.0 + "=" + $0.1 }) {
                same += 1
            } else if shown < 3 {
                shown += 1
                print("\(name) \(time)\n  gpsd: \(Self.describe(expected))\n  ours: \(Self.describe(actual))")
            }
        }
        print("gpsd golden \(name): \(same)/\(total) TPV lines identical")
        for (k, n) in fieldTotal.sorted(by: { $0.key < $1.key }) { print("  \(k): \(fieldSame[k, default: 0])/\(n)") }
        #expect(total > 20)
        #expect(Double(same) >= Double(total) * (Self.tpvFloor[name] ?? 1), "\(name): \(same)/\(total) identical")
    }

    @Test("our SKY lines equal gpsd's", arguments: goldens)
    func skyLines(name: String) throws {
        let theirs = try Self.gpsdEpochs(name), ours = try Self.ourEpochs(name)
        var same = 0, total = 0, sameSatellites = 0, sameShape = 0
        var shown = 0
        for (time, epoch) in theirs.sorted(by: { $0.key < $1.key }) {
            guard let g = epoch.sky, let o = ours[time]?.sky else { continue }
            total += 1
            let expected = Self.normalized(g)
            let actual = Self.normalized(o)
            func satellites(_ m: [(String, String)]) -> Set<Substring> {
                guard let list = m.first(where: { $0.0 == "satellites" })?.1 else { return [] }
                return Set(list.dropFirst().dropLast().split(separator: "}").map { $0.drop { $0 == "," || $0 == "{" } })
            }
            if satellites(expected) == satellites(actual) { sameSatellites += 1 } else if shown < 2 {
                shown += 1
                print("\(name) satellites \(time)\n  gpsd only: \(satellites(expected).subtracting(satellites(actual)).sorted())\n  ours only: \(satellites(actual).subtracting(satellites(expected)).sorted())")
            }
            let head = { (m: [(String, String)]) in m.filter { $0.0 != "satellites" }.map { $0.0 + "=" + $0.1 } }
            // The shape: member names in order, and the satellites (PRN, gnssid, svid, el, az) regardless of signal
            // strength and used flags, which gpsd samples at a different point of the cycle.
            let shape = { (m: [(String, String)]) -> [String] in
                m.map(\.0) + satellites(m).map { sat in
                    sat.split(separator: ",").filter { !$0.hasPrefix("\"ss\"") && !$0.hasPrefix("\"used\"") }.joined(separator: ",")
                }.sorted()
            }
            if shape(expected) == shape(actual) { sameShape += 1 }
            if head(expected) == head(actual) { same += 1 } else if shown < 3 {
                shown += 1
                print("\(name) SKY \(time)\n  gpsd: \(head(expected))\n  ours: \(head(actual))")
            }
        }
        print("gpsd golden \(name): \(same)/\(total) SKY heads identical, \(sameShape)/\(total) same members and satellites, \(sameSatellites)/\(total) satellite lists identical")
        #expect(total > 20)
        #expect(Double(sameShape) >= Double(total) * (Self.skyFloor[name] ?? 1))
    }

    /// The constellations (`gnssid`) of a SKY's satellites in the order they first appear (u-blox M9N, gpsd 3.22:
    /// 0 1 6 2 3 — GPS with SBAS from $GPGSV, GLONASS, Galileo, BeiDou).
    static func constellationRuns(_ m: [(String, String)]) -> [Substring] {
        guard let list = m.first(where: { $0.0 == "satellites" })?.1 else { return [] }
        var order: [Substring] = []
        for sat in list.split(separator: "}") {
            guard let id = sat.split(separator: ",").first(where: { $0.contains("\"gnssid\"") })?.split(separator: ":").last,
                  !order.contains(id) else { continue }
            order.append(id)
        }
        return order
    }

    /// gpsd lists a cycle's satellites in the order their GSV sets came (u-blox M9N: GPS, GLONASS, Galileo, BeiDou);
    /// we listed them by talker name (Galileo first), and cgps showed them so. Found by a helper comparing cgps
    /// against gpsd. (Within a set the receiver's own order; gpsd's SKY may be of another cycle than ours, so
    /// satellites are compared by constellation.)
    @Test("satellites come in gpsd's order of constellations", arguments: goldens)
    func satelliteOrder(name: String) throws {
        let theirs = try Self.gpsdEpochs(name), ours = try Self.ourEpochs(name)
        var compared = 0, same = 0
        for (time, epoch) in theirs.sorted(by: { $0.key < $1.key }) {
            guard let g = epoch.sky, let o = ours[time]?.sky else { continue }
            let expected = Self.constellationRuns(g), actual = Self.constellationRuns(o)
            guard !expected.isEmpty, Set(expected) == Set(actual) else { continue }
            compared += 1
            if expected == actual { same += 1 } else if compared - same < 3 { print("\(name) \(time): gpsd \(expected), ours \(actual)") }
        }
        print("gpsd golden \(name): constellation order as gpsd's in \(same)/\(compared) SKYs")
        #expect(compared > 10)
        #expect(same == compared, "\(name): \(same)/\(compared)")
    }

    /// gpsd sends a SKY when a GSV set ends, not at every epoch (haicom-305N sends GSV every third second): the
    /// number of dated TPVs a SKY came before, in gpsd 3.22's goldens — 23 of 68, 31 of 94, 187 of 187, 59 of 59.
    /// Ours: the fixes with `satellitesUpdated`, the ones the gpsd front sends a SKY with.
    @Test("a SKY goes with the epochs gpsd sends one with", arguments: goldens)
    func skyCadence(name: String) throws {
        var gpsdTPVs = 0, gpsdWithSky = 0, skySince = false
        let data = try #require(FileManager.default.contents(atPath: Self.directory + "/" + name + ".gpsd"))
        for line in data.split(separator: 10).map({ String(decoding: $0, as: UTF8.self) }) {
            if line.hasPrefix("{\"class\":\"TPV\""), line.contains("\"time\":") {
                gpsdTPVs += 1
                if skySince { gpsdWithSky += 1 }
                skySince = false
            } else if line.hasPrefix("{\"class\":\"SKY\"") {
                skySince = true
            }
        }
        let fixes = Captures.decode(try Captures.bytes(name)).filter { $0.time?.date != nil }
        let ours = fixes.filter(\.satellitesUpdated).count
        print("gpsd golden \(name): SKY with \(gpsdWithSky)/\(gpsdTPVs) TPVs, ours \(ours)/\(fixes.count)")
        // Within two epochs' worth (gpsd and we start and end the capture at slightly different epochs).
        #expect(abs(Double(ours) / Double(fixes.count) - Double(gpsdWithSky) / Double(gpsdTPVs)) <= 0.05)
    }

    /// gpsd 3.22 sends no SKY for a receiver that sends no GSV — neither for GGA's HDOP and count (cat-ms352:
    /// GGA and RMC; hemi: GGA, VTG, ZDA) nor for GSA's DOPs and used list (mr-350p) — and neither do we.
    @Test("a receiver without GSV gets no SKY, as from gpsd", arguments: ["cat-ms352.log", "hemi.log", "mr-350p.log"])
    func noSkyWithoutGSV(name: String) throws {
        let data = try #require(FileManager.default.contents(atPath: Self.directory + "/" + name + ".gpsd"))
        let lines = data.split(separator: 10).map { String(decoding: $0, as: UTF8.self) }
        #expect(lines.filter { $0.hasPrefix("{\"class\":\"TPV\"") }.count >= 4)
        #expect(!lines.contains { $0.hasPrefix("{\"class\":\"SKY\"") })
        let fixes = Captures.decode(try Captures.bytes(name))
        #expect(fixes.count >= 4)
        #expect(fixes.filter(\.satellitesUpdated).isEmpty)
    }

    /// GGA's fields 13–14 as gpsd 3.22 prints them, the TPV's last members: cat-ms352 (`…,M,1.4,0000`, DGPS) and
    /// mr-350p (`…,M,18.8,0000` with quality 1); none for `…,M,,0000` (the other goldens' receivers).
    @Test("dgpsAge and dgpsSta from GGA, as gpsd prints them", arguments: ["cat-ms352.log", "mr-350p.log"])
    func differential(name: String) throws {
        // A new-user helper: gpsd sends `"dgpsAge":1.4,"dgpsSta":0` for cat-ms352, the front sent neither.
        let theirs = try Self.gpsdEpochs(name), ours = try Self.ourEpochs(name)
        var compared = 0
        for (time, epoch) in theirs {
            guard let tpv = epoch.tpv, tpv.contains(where: { $0.0 == "dgpsAge" }), let mine = ours[time]?.tpv else { continue }
            #expect(Array(mine.suffix(2)).map { "\($0.0)=\($0.1)" } == Array(tpv.suffix(2)).map { "\($0.0)=\($0.1)" }, "\(time)")
            compared += 1
        }
        #expect(compared >= (name == "cat-ms352.log" ? 20 : 3), "\(compared)")
    }

    /// Floors: the share of epochs whose lines must be identical, a little under the measured figures
    /// (docs/GPSD.md; measured 34/93, 63/68, 37/59 TPV; SKY shape 21/31, 17/23, 0/58). What differs is timing —
    /// which sentence of the cycle gpsd computed a field at — and, for the u-blox, the used flags of a
    /// multi-constellation receiver (our GSA reading, issue 13's SKY item).
    static let tpvFloor: [String: Double] = ["skytraq-dgps.log": 0.33, "haicom-305N.log": 0.9, "ublox-neo-m9n-nmea.log": 0.6,
                                             "telit-he910.log": 0.74]
    static let skyFloor: [String: Double] = ["skytraq-dgps.log": 0.6, "haicom-305N.log": 0.7, "ublox-neo-m9n-nmea.log": 0,
                                             "telit-he910.log": 0.92]
}
