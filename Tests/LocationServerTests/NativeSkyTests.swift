import FoundationEssentials
import LocationCore
import LocationWire
import Testing

/// Issue 13: `SKY` on the native front (docs/PROTOCOL.md "SKY") — after each TPV to a full-accuracy watcher that
/// asked for satellites; never at reduced accuracy, never unasked. The real daemon replays a u-blox M9N capture
/// (GPS, SBAS, GLONASS, Galileo, BeiDou); its skies are checked against gpsd's decoding of it (`.chk`).
@Suite("Native front: SKY for full-accuracy watchers", .serialized)
struct NativeSkyTests {
    static let capture = DaemonProcess.sharedDirectory + "/nmea-logs/ublox-neo-m9n-nmea.log"

    /// gpsd's skies for the capture: each SKY's satellites as (gnssid, svid, used).
    static func gpsdSkies() throws -> Set<Set<[Int]>> {
        let text = try #require(FileManager.default.contents(atPath: capture + ".chk").map { String(decoding: $0, as: UTF8.self) })
        var skies: Set<Set<[Int]>> = []
        // CR LF lines: split on either (one Character in Swift).
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }) where line.contains("\"class\":\"SKY\"") {
            guard case .sky(let sky)? = try? ServerMessage.decode(Array(line.utf8)), !sky.satellites.isEmpty else { continue }
            skies.insert(Self.identities(sky))
        }
        return skies
    }

    /// A sky's satellites in gpsd's numbering (`GpsdSatelliteID`: gpsd's PRN and ours both map to gnssid, svid).
    static func identities(_ sky: ServerMessage.Sky) -> Set<[Int]> {
        Set(sky.satellites.map { sat -> [Int] in
            let id = GpsdSatelliteID(sat)
            return [id.gnssid, id.svid, sat.used ? 1 : 0]
        })
    }

    @Test("WATCH satellites: a SKY follows each TPV, with the time of the TPV; its satellites are gpsd's, 25 used of 43")
    func skyAfterTPV() throws {
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = always\naccuracy = full",
                                                                          rate: "20", capture: Self.capture))
        let client = try RawClient(daemon.socketPath)
        client.send(#"{"class":"WATCH","satellites":true}"#)
        let echo = try #require(client.message("WATCH"))
        #expect(echo["satellites"]?.bool == true)
        let reference = try Self.gpsdSkies()
        try #require(reference.count > 10, "gpsd's skies: \(reference.count)")
        var pairs = 0, agreeing = 0, lastTime: String?
        var sawFull = false
        let end = monotonic() + 10
        while pairs < 8, monotonic() < end, let line = client.line(timeout: 5) {
            guard case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: Data(line.utf8)) else { continue }
            if object["class"]?.string == "TPV" { lastTime = object["time"]?.string; continue }
            guard object["class"]?.string == "SKY", case .sky(let sky)? = try? ServerMessage.decode(Array(line.utf8)) else { continue }
            pairs += 1
            #expect(sky.time?.iso8601 == lastTime, "SKY time \(sky.time?.iso8601 ?? "-") after TPV \(lastTime ?? "-")")
            #expect(sky.used == sky.satellites.filter(\.used).count)
            if reference.contains(Self.identities(sky)) { agreeing += 1 }
            if sky.visible == 43 && sky.used == 25 { sawFull = true }
        }
        #expect(pairs == 8)
        // Each sky is one gpsd decoded too (SkyAgreementTests: 14 of 14 distinct skies on this capture).
        #expect(agreeing == pairs)
        #expect(sawFull, "no sky with 25 used of 43 (gpsd's count for this receiver)")
    }

    @Test("no SKY unasked, and none at reduced accuracy even when asked")
    func noSkyUnaskedOrReduced() throws {
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = always\naccuracy = full",
                                                                          rate: "20", capture: Self.capture))
        let plain = try RawClient(daemon.socketPath)
        plain.send(#"{"class":"WATCH"}"#)
        var classes: [String] = []
        let end = monotonic() + 1.5
        while monotonic() < end, let line = plain.line(timeout: 1) {
            if let name = JSONValue.object(line)?["class"]?.string { classes.append(name) }
        }
        #expect(classes.filter { $0 == "TPV" }.count >= 5)
        #expect(!classes.contains("SKY"))

        let reducedDaemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = always\naccuracy = reduced",
                                                                                 rate: "20", capture: Self.capture))
        let reduced = try RawClient(reducedDaemon.socketPath)
        reduced.send(#"{"class":"WATCH","satellites":true}"#)
        let tpv = try #require(reduced.message("TPV"))
        #expect(tpv["accuracy"]?.string == "reduced")
        var sawSky = false
        let until = monotonic() + 1.5
        while monotonic() < until, let line = reduced.line(timeout: 1) {
            if JSONValue.object(line)?["class"]?.string == "SKY" { sawSky = true }
        }
        #expect(!sawSky)
    }
}
