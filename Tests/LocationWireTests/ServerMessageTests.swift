#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationWire
import Testing

/// A UTC time on a date, for expected values.
func utc(_ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int, _ second: Int, ms: Int = 0) -> UTCTime {
    UTCTime(date: CivilDate(year: year, month: month, day: day),
            millisecondsOfDay: ((hour * 60 + minute) * 60 + second) * 1000 + ms)
}

/// `ServerMessage`: the server's lines as values, against docs/PROTOCOL.md.
@Suite("Server messages")
struct ServerMessageTests {
    static func decode(_ line: String) throws(ServerMessageError) -> ServerMessage {
        try ServerMessage.decode(Array(line.utf8))
    }

    static let navit = ClientDescription(pid: 4242, uid: 1000, user: "alice", executable: "/usr/bin/navit",
                                  unit: "navit.service", name: "My Navigator")

    /// The example lines of docs/PROTOCOL.md, with the values they stand for read off the page.
    static let documented: [(line: String, message: ServerMessage)] = [
        (#"{"class":"VERSION","release":"0.1.0","proto_major":1,"proto_minor":6}"#,
         .version(.init(release: "0.1.0", protocolMajor: 1, protocolMinor: 6))),
        (#"{"class":"AUTHORIZATION","status":"authorizedOnce","accuracy":"full","reason":"one-time grant for this connection, from a standing approval","standing":true}"#,
         .authorization(.init(status: .authorizedOnce, accuracy: .full, reason: "one-time grant for this connection, from a standing approval",
                              standing: true))),
        (#"{"class":"WATCH","enable":true,"minInterval":1.0,"distanceFilter":10}"#,
         .watch(.init(enable: true, minInterval: 1, distanceFilter: 10))),
        (#"{"class":"POLL","tpv":[{"class":"TPV","mode":3,"time":"2007-04-08T09:53:08.801Z","lat":-27.210781667,"lon":153.05213,"accuracy":"full"}]}"#,
         .poll(.init(tpv: [.init(mode: .threeDimensional, time: utc(2007, 4, 8, 9, 53, 8, ms: 801), latitude: -27.210781667,
                                 longitude: 153.05213, accuracy: .full)]))),
        (#"{"class":"ERROR","request":"POLL","message":"no fix within 10 s"}"#,
         .error(.init(request: "POLL", message: "no fix within 10 s"))),
        (#"{"class":"STATUS","mode":3,"clients":2,"receivers":[{"name":"gnss0","type":"serial","path":"/dev/ttyACM0","state":"connected","speed":9600,"connectedSince":"2026-11-30T05:10:00.000Z","sentences":1203,"fixes":300,"errors":0,"lastFixTime":"2026-11-30T05:14:59.000Z","priority":0}]}"#,
         .status(.init(mode: .threeDimensional, clients: 2, receivers: [
            .init(name: "gnss0", type: "serial", path: "/dev/ttyACM0", state: "connected", speed: 9600,
                  connectedSince: utc(2026, 11, 30, 5, 10, 0), sentences: 1203, fixes: 300, errors: 0,
                  lastFixTime: utc(2026, 11, 30, 5, 14, 59), priority: 0)]))),
        // Protocol 1.5: fixes a plausibility rule rejected, by rule, and the last reason (issue 33).
        (#"{"class":"STATUS","clients":1,"receivers":[{"name":"gnss0","type":"serial","state":"connected","sentences":1403,"fixes":0,"errors":61,"priority":0,"rejected":[{"rule":"check-date","count":61}],"lastRejection":{"rule":"check-date","reason":"fix dated 2020-07-11 rejected: check-date; set check-date = no for captures"}}]}"#,
         .status(.init(mode: nil, clients: 1, receivers: [
            .init(name: "gnss0", type: "serial", state: "connected", sentences: 1403, fixes: 0, errors: 61, priority: 0,
                  rejected: [.init(rule: "check-date", count: 61)],
                  lastRejection: .init(rule: "check-date", reason: "fix dated 2020-07-11 rejected: check-date; set check-date = no for captures"))]))),
        (#"{"class":"STATE","fix":false,"reason":"no receiver has a fix"}"#, .state(.init(fix: false, reason: "no receiver has a fix"))),
        (#"{"class":"STATE","fix":true}"#, .state(.init(fix: true))),
        (#"{"class":"STATE","fix":false,"reason":"reduced accuracy: the next report is due in 14 min 58 s","waiting":"accuracyLimited","nextReportIn":898}"#,
         .state(.init(fix: false, reason: "reduced accuracy: the next report is due in 14 min 58 s", waiting: "accuracyLimited", nextReportIn: 898))),
        (#"{"class":"STATE","fix":false,"reason":"When In Use, and the user has no active login session: nothing is sent until one is active","waiting":"insufficientlyInUse"}"#,
         .state(.init(fix: false, reason: "When In Use, and the user has no active login session: nothing is sent until one is active",
                      waiting: "insufficientlyInUse"))),
        (#"{"class":"ERROR","request":"WATCH","message":"minInterval must be a number of seconds ≥ 0"}"#,
         .error(.init(request: "WATCH", message: "minInterval must be a number of seconds ≥ 0"))),
        (#"{"class":"AUTHORIZATION","status":"authorizedOnce","accuracy":"full","reason":"one-time grant for this connection"}"#,
         .authorization(.init(status: .authorizedOnce, accuracy: .full, reason: "one-time grant for this connection"))),
        (#"{"class":"AGENT"}"#, .agent),
        (#"{"class":"ASK","id":7,"client":{"pid":4242,"uid":1000,"user":"alice","exe":"/usr/bin/navit","unit":"navit.service","name":"My Navigator"},"request":"once","accuracy":"full","timeout":30}"#,
         .ask(.init(id: 7, client: navit, request: "once", accuracy: .full, timeout: 30))),
        (#"{"class":"ANSWERED","id":7,"answer":"allowOnce","by":"root (uid 0)"}"#,
         .answered(.init(id: 7, answer: "allowOnce", by: "root (uid 0)"))),
        (#"{"class":"ERROR","request":"GRANT","message":"permission denied: ..."}"#,
         .error(.init(request: "GRANT", message: "permission denied: ..."))),
        (#"{"class":"GRANTS","persistent":[{"executable":"/usr/bin/python3.11","user":"1000","allowed":true,"accuracy":"full"}],"preapproved":[],"once":[]}"#,
         .grants(.init(persistent: [.init(subject: .executable("/usr/bin/python3.11", user: "1000"), allowed: true, accuracy: .full)]))),
        (#"{"class":"ERROR","request":"POLL","message":"reduced accuracy: the next report is due in 12 min 3 s","nextReportIn":723}"#,
         .error(.init(request: "POLL", message: "reduced accuracy: the next report is due in 12 min 3 s", nextReportIn: 723))),
        (#"{"class":"GRANTS","persistent":[],"preapproved":[],"once":[],"effective":{"accuracy":"reduced","reason":"the [policy] default allows no more than reduced accuracy"}}"#,
         .grants(.init(effective: .init(accuracy: .reduced, reason: "the [policy] default allows no more than reduced accuracy")))),
        (#"{"class":"GRANTS","persistent":[],"preapproved":[],"once":[],"revoked":0}"#, .grants(.init(revoked: 0))),
        // The example of an uplink in PROTOCOL.md "GRANTS, GRANT, REVOKE", and one a rule denies (no accuracy).
        (#"{"class":"GRANTS","persistent":[],"preapproved":[],"once":[],"uplinks":[{"name":"fleet","broker":"mqtt://broker:1883","topic":"owntracks/fleet/van7","format":"owntracks","accuracy":"reduced","requested":"full","sharing":true,"reason":"[policy] default allows no more than reduced accuracy"},{"name":"home","broker":"mqtts://h:8883","topic":"t","format":"tpv","requested":"reduced","sharing":false,"reason":"rule [client x] denies access: nothing is published"}]}"#,
         .grants(.init(uplinks: [
            .init(name: "fleet", broker: "mqtt://broker:1883", topic: "owntracks/fleet/van7", format: "owntracks", accuracy: .reduced,
                  requested: .full, sharing: true, reason: "[policy] default allows no more than reduced accuracy"),
            .init(name: "home", broker: "mqtts://h:8883", topic: "t", format: "tpv", accuracy: nil, requested: .reduced, sharing: false,
                  reason: "rule [client x] denies access: nothing is published")]))),
        (#"{"class":"AUDIT","events":[{"unix":1764480000.5,"time":"2025-11-30T05:20:00.500Z","event":"decision","client":{"pid":4242,"uid":1000},"request":"AUTHORIZE","status":"authorizedOnce","accuracy":"full","reason":"one-time grant by [policy] default"}]}"#,
         .audit(.init(events: [.init(unixTime: 1_764_480_000.5, time: utc(2025, 11, 30, 5, 20, 0, ms: 500), event: "decision",
                                     client: ClientDescription(pid: 4242, uid: 1000), request: "AUTHORIZE", status: "authorizedOnce",
                                     accuracy: .full, reason: "one-time grant by [policy] default")]))),
        // Protocol 1.2: a page and the cursor of the next one.
        (#"{"class":"AUDIT","events":[{"unix":1764480000.5,"time":"2025-11-30T05:20:00.500Z","event":"decision","client":{"pid":4242,"uid":1000,"user":"alice","exe":"/usr/bin/navit","name":"My Navigator"},"request":"AUTHORIZE","status":"authorizedOnce","accuracy":"full","reason":"..."}],"next":"1764480000.5:1"}"#,
         .audit(.init(events: [.init(unixTime: 1_764_480_000.5, time: utc(2025, 11, 30, 5, 20, 0, ms: 500), event: "decision",
                                     client: ClientDescription(pid: 4242, uid: 1000, user: "alice", executable: "/usr/bin/navit",
                                                               name: "My Navigator"),
                                     request: "AUTHORIZE", status: "authorizedOnce", accuracy: .full, reason: "...")],
                      next: "1764480000.5:1"))),
    ]

    @Test("the protocol page's lines decode to what they say", arguments: documented)
    func decodesDocumented(line: String, message: ServerMessage) throws {
        #expect(try Self.decode(line) == message)
        #expect(try Self.decode(line + "\n") == message)
    }

    /// Every class, with every member it can carry (strings that need escapes, negative and fractional
    /// numbers), and with the least it can carry.
    static let messages: [ServerMessage] = [
        .version(.init(release: "0.1.0")),
        .version(.init(release: nil, protocolMajor: 2, protocolMinor: nil)),
        .error(.init(request: "?", message: "too many clients (64)")),
        .error(.init(request: nil, message: nil)),
        .error(.init(request: "POLL", message: "reduced accuracy: the next report is due in 40 s", nextReportIn: 40)),
        .watch(.init(enable: true, minInterval: 2.5, distanceFilter: 0)),
        .watch(.init(enable: nil, minInterval: nil, distanceFilter: nil)),
        .state(.init(fix: false, reason: "receiver \"gnss0\"\nunavailable")),
        .state(.init(fix: true)),
        .poll(.init(tpv: [.init(device: "gnss0", mode: .twoDimensional, time: utc(2007, 4, 8, 9, 53, 4, ms: 802),
                               latitude: -27.210866667, longitude: 153.052328333, eph: 323, accuracy: .reduced)])),
        .poll(.init(tpv: [])),
        .tpv(.init(device: "hemi", mode: .threeDimensional, status: 2, time: utc(2018, 9, 7, 19, 40, 58),
                   latitude: 42.363727402, longitude: -71.03239789, altitudeHAE: -26.271, altitudeMSL: 6.786,
                   geoidSeparation: -33.057, speed: 0.0206, track: 346.88, magneticVariation: -14.27, climb: -1.77,
                   eph: 26.6, epx: 12.5, epy: 13.25, epv: 40.125, heading: 274.07, accuracy: .full)),
        .tpv(.init(mode: .noFix)),
        .status(.init(mode: nil, clients: 1, receivers: [])),
        .status(.init(mode: .twoDimensional, clients: 3, receivers: [
            .init(name: "gnss0", type: "serial", path: "/dev/ttyACM0", state: "connected", speed: 9600,
                  connectedSince: utc(2026, 11, 30, 5, 10, 0), sentences: 1203, fixes: 300, errors: 2,
                  lastFixTime: utc(2026, 11, 30, 5, 14, 59, ms: 1), priority: 1),
            .init(name: "backup", type: "gpsd", state: "unavailable", reason: "connection refused",
                  rejected: [.init(rule: "check-date", count: 3), .init(rule: "null-island", count: 1)],
                  lastRejection: .init(rule: "null-island", reason: "fix at 0°, 0° rejected: null-island (the receiver has no position yet)"))])),
        .authorization(.init(status: .denied, reason: "no agent is running to ask")),
        .authorization(.init(status: .authorizedPersistent, accuracy: .reduced, reason: "rule [client navit]")),
        .agent,
        .ask(.init(id: 8, client: ClientDescription(pid: 4242, uid: 1000, executable: "/usr/bin/navit"),
                   request: "temporaryFullAccuracy", purposeKey: "Navigation", accuracy: .full,
                   purpose: "Turn-by-turn directions need your exact position.", timeout: 30)),
        .ask(.init(id: 1, client: nil, request: nil)),
        .answered(.init(id: 3, answer: "timeout", by: "nobody")),
        .grants(.init()),
        .grants(.init(effective: .init(accuracy: nil, reason: "rule [client kiosk] denies access: the grant does not apply"), revoked: nil)),
        .grants(.init(effective: .init(accuracy: .full), revoked: 3)),
        .grants(.init(
            persistent: [.init(subject: .executable("/usr/bin/navit"), allowed: true, accuracy: .reduced,
                               created: utc(2026, 11, 30, 5, 0, 0), expires: utc(2026, 12, 7, 5, 0, 0), decidedBy: "agent root (uid 0)"),
                         .init(subject: .unit("spy.service", user: "1000"), allowed: false, accuracy: .reduced),
                         .init(subject: nil, allowed: nil, accuracy: nil)],
            preapproved: [.init(subject: .user("kiosk"), accuracy: .full, created: utc(2026, 11, 30, 5, 2, 0))],
            once: [.init(pid: 4242, uid: 1000, executable: "/usr/bin/navit", accuracy: .full,
                         granted: utc(2026, 11, 30, 5, 3, 0), expires: utc(2026, 11, 30, 6, 3, 0))])),
        .audit(.init(events: [])),
        .audit(.init(events: [.init(event: "revoke", client: ClientDescription(pid: 1, uid: 0, user: "root"),
                                    request: "REVOKE executable /usr/bin/navit", reason: "by administrator root (uid 0)"),
                              .init(unixTime: -0.25, event: nil)])),
    ]

    @Test("encode then decode gives the same message", arguments: messages)
    func roundTrip(message: ServerMessage) throws {
        let line = message.encoded()
        #expect(line.last == 10)
        #expect(line.dropLast().contains(10) == false)
        #expect(try ServerMessage.decode(line) == message)
        var appended = Array("x".utf8)
        message.append(to: &appended)
        #expect(appended == Array("x".utf8) + line)
    }
}

/// docs/PROTOCOL.md "Accuracy": gpsd's ~95 % figures as 68 % ones.
@Suite("Accuracy at 68 % confidence")
struct ConfidenceLevelTests {
    /// The factors from the normal distribution's quantiles, computed here independently: a circular
    /// bivariate normal holds p within σ·√(−2 ln(1−p)); a normal holds p within ±z·σ (z68 = 0.994458,
    /// z95 = 1.959964, the standard normal table).
    @Test("factors: √(−2 ln 0.32)/√(−2 ln 0.05) horizontally, z68/z95 vertically")
    func factors() {
        let horizontal = (-2 * log(0.32)).squareRoot() / (-2 * log(0.05)).squareRoot()
        #expect(abs(ConfidenceLevel.horizontal68Per95 - horizontal) < 1e-5)
        #expect(abs(ConfidenceLevel.vertical68Per95 - 0.994458 / 1.959964) < 1e-5)
    }

    @Test("full accuracy converts; reduced keeps the grid bound it was sent; absent stays absent")
    func conversions() {
        // gpsd's eph for HDOP 1.0 without DGPS is 19 m at 95 % (libgpsd_core.c P_UERE_NO_DGPS).
        #expect(abs((ConfidenceLevel.horizontalAccuracy(eph: 19, accuracy: .full) ?? 0) - 11.71787) < 1e-5)
        #expect(ConfidenceLevel.horizontalAccuracy(eph: 2000, accuracy: .reduced) == 2000)
        #expect(ConfidenceLevel.horizontalAccuracy(eph: nil, accuracy: .full) == nil)
        #expect(abs((ConfidenceLevel.verticalAccuracy(epv: 23) ?? 0) - 11.66997) < 1e-5)
    }
}

/// docs/PROTOCOL.md "SKY": the native front's SKY, read back; gpsd's own SKY lines read the same way.
@Suite("SKY messages")
struct SkyMessageTests {
    @Test("a SKY line as the daemon writes it decodes to its satellites and DOPs, and encodes back to the same line")
    func roundTrip() throws {
        // The daemon's line for u-blox M9N at 22:37:47 (nSat, uSat and the first satellites as gpsd decodes them).
        let line = #"{"class":"SKY","device":"gnss0","time":"2020-07-11T22:37:47.000Z","hdop":0.56,"vdop":0.88,"pdop":1.04,"nSat":43,"uSat":2,"satellites":[{"PRN":3,"gnssid":2,"el":44,"az":149,"ss":41,"used":true,"sigid":7},{"PRN":66,"gnssid":6,"el":9,"az":27,"used":false,"sigid":1},{"PRN":131,"gnssid":1,"el":45,"az":171,"ss":45,"used":true}]}"#
        guard case .sky(let sky) = try ServerMessage.decode(Array(line.utf8)) else {
            Issue.record("not a SKY")
            return
        }
        #expect(sky.device == "gnss0")
        #expect(sky.time?.iso8601 == "2020-07-11T22:37:47.000Z")
        #expect(sky.dop.horizontal == 0.56 && sky.dop.vertical == 0.88 && sky.dop.position == 1.04)
        #expect(sky.visible == 43 && sky.used == 2)
        #expect(sky.satellites == [
            Satellite(prn: 3, constellation: .galileo, elevation: 44, azimuth: 149, signalToNoise: 41, used: true, signalID: 7),
            Satellite(prn: 66, constellation: .glonass, elevation: 9, azimuth: 27, used: false, signalID: 1),
            Satellite(prn: 131, constellation: .sbas, elevation: 45, azimuth: 171, signalToNoise: 45, used: true),
        ])
        #expect(String(decoding: ServerMessage.sky(sky).encoded(), as: UTF8.self) == line + "\n")
    }

    @Test("gpsd's own SKY line (its .chk of the same receiver) decodes too")
    func gpsdLine() throws {
        let line = #"{"class":"SKY","gdop":2.70,"hdop":0.54,"pdop":0.99,"tdop":1.37,"xdop":0.66,"ydop":0.84,"vdop":0.83,"nSat":16,"uSat":8,"satellites":[{"PRN":5,"gnssid":0,"svid":5,"az":47.0,"el":1.0,"used":false},{"PRN":13,"gnssid":0,"svid":13,"az":62.0,"el":22.0,"ss":23.0,"used":true}]}"#
        guard case .sky(let sky) = try ServerMessage.decode(Array(line.utf8)) else {
            Issue.record("not a SKY")
            return
        }
        #expect(sky.dop.geometric == 2.70 && sky.dop.time == 1.37)
        #expect(sky.satellites.map(\.prn) == [5, 13])
        #expect(sky.satellites.map(\.used) == [false, true])
    }

    @Test("WATCH satellites: parsed, encoded, echoed")
    func watchSatellites() throws {
        #expect(try RequestParser.parse(Array(#"{"class":"WATCH","satellites":true}"#.utf8))
                == .watch(enable: true, minInterval: 0, distanceFilter: 0, satellites: true))
        #expect(String(decoding: Request.watch(enable: true, minInterval: 1, distanceFilter: 0, satellites: true).encoded(), as: UTF8.self)
                == #"{"class":"WATCH","enable":true,"minInterval":1,"distanceFilter":0,"satellites":true}"# + "\n")
        #expect(String(decoding: ServerMessage.watch(enable: true, minInterval: 0, distanceFilter: 0, satellites: true), as: UTF8.self)
                == #"{"class":"WATCH","enable":true,"minInterval":0,"distanceFilter":0,"satellites":true}"# + "\n")
    }
}
