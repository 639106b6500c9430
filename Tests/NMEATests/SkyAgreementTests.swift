import FoundationEssentials
import LocationCore
import LocationWire
import NMEA
import Testing

/// Satellites seen and used on multi-constellation receivers, against gpsd's decoding of the same captures
/// (the `.chk` files of gpsd's regression suite in `../shared/nmea-logs`).
///
/// gpsd writes a SKY each time one constellation's GSV set completes, so it passes through partial views;
/// we write one per epoch. The comparison therefore asks whether each sky we produce — the satellites seen
/// and those marked used, as (gnssid, svid) — is one gpsd produced too.
@Suite("Multi-constellation SKY against gpsd")
struct SkyAgreementTests {
    /// A sky: satellites seen and satellites used, each as gpsd's (gnssid, svid).
    struct Sky: Hashable {
        var seen: Set<[Int]>
        var used: Set<[Int]>
    }

    /// The distinct consecutive skies of our decoding of `name`.
    static func ours(_ name: String) throws -> [Sky] {
        var skies: [Sky] = []
        for fix in Captures.decode(try Captures.bytes(name)) where !fix.satellites.isEmpty {
            var sky = Sky(seen: [], used: [])
            for sat in fix.satellites {
                let id = GpsdSatelliteID(sat)
                sky.seen.insert([id.gnssid, id.svid])
                if sat.used { sky.used.insert([id.gnssid, id.svid]) }
            }
            if skies.last != sky { skies.append(sky) }
        }
        return skies
    }

    /// Every SKY with satellites in gpsd's `.chk` of `name`.
    static func gpsd(_ name: String) throws -> Set<Sky> {
        struct Satellite: Decodable { var gnssid: Int?; var svid: Int?; var used: Bool? }
        struct Object: Decodable { var `class`: String; var satellites: [Satellite]? }
        var skies: Set<Sky> = []
        let decoder = JSONDecoder()
        for line in try Captures.bytes(name + ".chk").split(separator: 10) where line.first == UInt8(ascii: "{") {
            guard let object = try? decoder.decode(Object.self, from: Data(line)), object.class == "SKY",
                  let satellites = object.satellites else { continue }
            var sky = Sky(seen: [], used: [])
            for sat in satellites {
                guard let gnssid = sat.gnssid, let svid = sat.svid else { continue }
                sky.seen.insert([gnssid, svid])
                if sat.used == true { sky.used.insert([gnssid, svid]) }
            }
            skies.insert(sky)
        }
        return skies
    }

    /// Captures of receivers tracking two to five constellations, with how many of our distinct skies gpsd also
    /// produced, of how many (measured; every one of them on most). What differs: skytraq-dgps and st-teseo-liv3f, one or two
    /// epochs where gpsd applied a GSA to the previous cycle's view; beidou-bd, whose first BeiDou GSA gpsd
    /// applies before the BeiDou satellites are in view.
    static let captures: [(name: String, agreeing: Int, of: Int)] = [
        ("ublox-neo-m9n-nmea.log", 14, 14), ("ublox-zed-f9p-nmea.log", 14, 14), ("ublox-8.log", 10, 10),
        ("unicore-um621.log", 9, 9), ("quectel-l76k-nmea.log", 31, 31), ("quectelLC79D-1.log", 14, 14),
        ("telit-pls83-w.log", 8, 8), ("furuno_gl_ga.log", 5, 5), ("sl869.log", 3, 3), ("bu353-glonass.log", 2, 2),
        ("ericsson-gru04-02-70sec.log", 2, 2), ("st-teseo-liv3f.log", 20, 21), ("skytraq-dgps.log", 52, 54),
        ("beidou-bd.log", 2, 3),
    ]

    @Test("each sky we decode is one gpsd decoded: the same satellites seen and used", arguments: captures)
    func skiesAgree(capture: (name: String, agreeing: Int, of: Int)) throws {
        let ours = try Self.ours(capture.name), reference = try Self.gpsd(capture.name)
        let agreeing = ours.filter { reference.contains($0) }.count
        #expect(ours.count == capture.of, "\(capture.name): \(ours.count) skies")
        #expect(agreeing >= capture.agreeing, "\(capture.name): \(agreeing)/\(ours.count) agree with gpsd")
        // The satellites seen agree on every sky.
        let referenceSeen = Set(reference.map(\.seen))
        #expect(ours.allSatisfy { referenceSeen.contains($0.seen) }, "\(capture.name)")
    }

    /// Quectel LC79D: gpsd marks no satellite used there (it takes `$GNGSA` after `$GPGSA` for a new cycle and
    /// clears the list), so only the satellites seen compare; Quectel numbers Galileo 101–136 and sends a GPS
    /// GSV set whose last page alone carries a signal id.
    @Test("Quectel LC79D: the satellites seen agree with gpsd's on every sky")
    func quectelSeen() throws {
        let ours = try Self.ours("quectelLC79D.log"), reference = Set(try Self.gpsd("quectelLC79D.log").map(\.seen))
        #expect(ours.count == 10)
        #expect(ours.allSatisfy { reference.contains($0.seen) })
        // GPS 2, 4, 6, 7, 9, 30 and GLONASS 70, 72, 73, 74, 88 (svid 6, 8, 9, 10, 24) from $GPGSA/$GNGSA.
        let first = try #require(ours.first { !$0.used.isEmpty })
        #expect(first.used == [[0, 2], [0, 4], [0, 6], [0, 7], [0, 9], [0, 30], [6, 6], [6, 8], [6, 9], [6, 10], [6, 24]])
    }

    /// u-blox NEO-M9N, NMEA 4.11: four `$GNGSA` per epoch, one per system id, each numbering from 1.
    /// gpsd's decoding of the epoch after 22:37:46: 25 used of 43 (8 GPS + 2 SBAS, 7 GLONASS, 5 Galileo, 5 BeiDou
    /// — its SKY lists SBAS 131 and 138 among GPS's used). Galileo's 3 and BeiDou's 30 are not GPS's 3 and 30.
    @Test("u-blox M9N: uSat 25 of 43, per system, as gpsd decodes it")
    func ubloxPerSystem() throws {
        let fixes = Captures.decode(try Captures.bytes("ublox-neo-m9n-nmea.log"))
        let fix = try #require(fixes.first { $0.time?.iso8601 == "2020-07-11T22:37:47.000Z" })
        let used = fix.satellites.filter(\.used).map { GpsdSatelliteID($0) }
        #expect(fix.satellites.count == 43)
        #expect(used.count == 25)
        #expect(fix.satellitesUsed == 25)
        let bySystem = Dictionary(grouping: used, by: \.gnssid).mapValues { $0.map(\.svid).sorted() }
        #expect(bySystem[2] == [3, 5, 15, 27, 30])
        #expect(bySystem[3] == [27, 28, 30, 32, 33])
        #expect(bySystem[6]?.count == 7)
        #expect(!used.contains(GpsdSatelliteID(Satellite(prn: 3, constellation: .gps))))
        // gpsd's SKY for the same epoch lists exactly these.
        let reference = try Self.gpsd("ublox-neo-m9n-nmea.log")
        #expect(reference.contains(Sky(seen: Set(fix.satellites.map { let i = GpsdSatelliteID($0); return [i.gnssid, i.svid] }),
                                       used: Set(used.map { [$0.gnssid, $0.svid] }))))
    }

    /// NMEA 0183 v4.11 §GSV: the page count may be left empty after the first page; the set still completes.
    @Test("a GSV set whose later pages leave the page count empty completes")
    func emptyRepeatedFields() throws {
        let sentences = [
            "$GPGGA,123519.00,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
            "$GPGSV,2,1,05,01,40,083,46,02,17,308,41,12,07,344,39,14,22,228,45,1",
            "$GPGSV,,2,,16,10,100,30,1",
            "$GNGSA,A,3,01,02,12,,,,,,,,,,1.8,0.9,1.5,1",
            "$GNGSA,A,3,02,14,,,,,,,,,,,1.8,0.9,1.5,3",
            "$GPRMC,123519.00,A,4807.038,N,01131.000,E,0.0,0.0,230394,,,A",
            "$GPGGA,123520.00,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
        ]
        let fixes = Captures.decode(Array(sentences.map { TestNMEA.line($0) }.joined().utf8))
        let fix = try #require(fixes.first)
        #expect(fix.satellites.map(\.prn) == [1, 2, 12, 14, 16])
        // GPS 1, 2, 12 used; Galileo 2 and 14 are not GPS 2 and 14.
        #expect(fix.satellites.filter(\.used).map(\.prn) == [1, 2, 12])
        #expect(fix.satellitesUsed == 5)
    }
}
