import LocationCore
import LocationWire
import Testing

/// The daemon's byte-returning `ServerMessage` functions, the rejection of malformed lines, and the
/// text helpers the client uses, against docs/PROTOCOL.md.
@Suite("Server message encoding and rejection")
struct ServerMessageEncodingTests {
    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test("the daemon's functions write the protocol page's lines")
    func documentedBytes() {
        #expect(Self.text(ServerMessage.version(release: "0.1.0")) ==
                #"{"class":"VERSION","release":"0.1.0","proto_major":1,"proto_minor":6}"# + "\n")
        #expect(Self.text(ServerMessage.error(request: "POLL", message: "no fix within 10 s")) ==
                #"{"class":"ERROR","request":"POLL","message":"no fix within 10 s"}"# + "\n")
        #expect(Self.text(ServerMessage.state(fix: false, reason: "no receiver has a fix")) ==
                #"{"class":"STATE","fix":false,"reason":"no receiver has a fix"}"# + "\n")
        #expect(Self.text(ServerMessage.state(fix: true, reason: nil)) == #"{"class":"STATE","fix":true}"# + "\n")
        #expect(Self.text(ServerMessage.watch(enable: true, minInterval: 1.5, distanceFilter: 10)) ==
                #"{"class":"WATCH","enable":true,"minInterval":1.5,"distanceFilter":10}"# + "\n")
        let authorization = #"{"class":"AUTHORIZATION","status":"authorizedOnce","accuracy":"full","reason":"one-time grant for this connection"}"# + "\n"
        #expect(Self.text(ServerMessage.authorization(status: .authorizedOnce, accuracy: .full,
                                                      reason: "one-time grant for this connection")) == authorization)
        let ask = ServerMessage.ask(.init(id: 7, client: ServerMessageTests.navit, request: "once", accuracy: .full, timeout: 30))
        #expect(Self.text(ask.encoded()) == #"{"class":"ASK","id":7,"client":{"pid":4242,"uid":1000,"user":"alice","exe":"/usr/bin/navit","unit":"navit.service","name":"My Navigator"},"request":"once","accuracy":"full","timeout":30}"# + "\n")
        #expect(Self.text(ServerMessage.answered(.init(id: 7, answer: "allowOnce", by: "root (uid 0)")).encoded()) ==
                #"{"class":"ANSWERED","id":7,"answer":"allowOnce","by":"root (uid 0)"}"# + "\n")
        #expect(Self.text(ServerMessage.agent.encoded()) == #"{"class":"AGENT"}"# + "\n")
    }

    @Test("STATUS from receiver reports: connectedSince from Unix seconds; fix timing only with fixDetails")
    func statusBytes() throws {
        let day = try #require(CivilDate(year: 2026, month: 11, day: 30)).daysSinceUnixEpoch
        let connected = Double(day * 86_400 + 5 * 3600 + 10 * 60)
        let report = ReceiverReport(name: "gnss0", type: "serial", path: "/dev/ttyACM0", state: "connected", speed: 9600,
                                    connectedSince: UTCTime(unixSeconds: connected), sentences: 1203, fixes: 300, errors: 0,
                                    lastFixTime: utc(2026, 11, 30, 5, 14, 59), priority: 0)
        #expect(Self.text(ServerMessage.status(mode: .threeDimensional, clients: 2, receivers: [report])) ==
                #"{"class":"STATUS","mode":3,"clients":2,"receivers":[{"name":"gnss0","type":"serial","path":"/dev/ttyACM0","state":"connected","speed":9600,"connectedSince":"2026-11-30T05:10:00.000Z","sentences":1203,"fixes":300,"errors":0,"lastFixTime":"2026-11-30T05:14:59.000Z","priority":0}]}"# + "\n")
        // Without fix details no `speed` either: with `speed = auto` it appears once the receiver was opened (found
        // 2026-12-03 by an attacker helper as uid nobody).
        #expect(Self.text(ServerMessage.status(mode: nil, clients: 2, receivers: [report], fixDetails: false)) ==
                #"{"class":"STATUS","clients":2,"receivers":[{"name":"gnss0","type":"serial","path":"/dev/ttyACM0","priority":0}]}"# + "\n")
        // A gpsd receiver's device (known once gpsd answered: it tells that the receiver runs) with fix details only.
        let gpsd = ReceiverReport(name: "up", type: "gpsd", path: "localhost:2948", state: "connected", priority: 0, device: "/dev/pts/6")
        #expect(Self.text(ServerMessage.status(mode: .threeDimensional, clients: 1, receivers: [gpsd])).contains(#""device":"/dev/pts/6""#))
        #expect(Self.text(ServerMessage.status(mode: nil, clients: 1, receivers: [gpsd], fixDetails: false)) ==
                #"{"class":"STATUS","clients":1,"receivers":[{"name":"up","type":"gpsd","path":"localhost:2948","priority":0}]}"# + "\n")
    }

    /// Fixes as the NMEA layer makes them from gpsd's captures (haicom-305N.log, hemi.log), a no-fix
    /// epoch, and a fix whose time has no date yet.
    static let fixes: [Fix] = [
        Fix(device: "gnss0", time: utc(2007, 4, 8, 9, 53, 5, ms: 802), mode: .threeDimensional, quality: .gps,
            latitude: -27.210911667, longitude: 153.05225, altitudeMSL: 3, altitudeHAE: 45.2, geoidSeparation: 42.2,
            speed: 0.9929, track: 133.96, eph: 400.9),
        Fix(device: "hemi", time: utc(2018, 9, 7, 19, 40, 58), mode: .threeDimensional, quality: .dgps,
            latitude: 42.363727402, longitude: -71.03239789, altitudeMSL: 6.786, altitudeHAE: -26.271,
            geoidSeparation: -33.057, speed: 0.0206, track: 346.88, magneticVariation: -14.7, climb: -1.77,
            heading: 274.07, eph: 26.6, epx: 11.2, epy: 13.9, epv: 40.4),
        Fix(device: "gnss0", time: utc(2007, 4, 8, 9, 52, 55, ms: 810), mode: .noFix, quality: .dgps, latitude: 1, longitude: 2),
        Fix(time: UTCTime(date: nil, millisecondsOfDay: 1000), mode: .twoDimensional, latitude: 0.123456789, longitude: -0.5),
    ]

    @Test("a TPV value made from a fix encodes to the bytes of the daemon's fast path", arguments: fixes)
    func tpvMatchesFastPath(fix: Fix) throws {
        for accuracy in [nil, AccuracyAuthorization.full, .reduced] {
            var fast: [UInt8] = []
            var encoder = GPSDEncoder()
            encoder.appendTPV(fix, accuracy: accuracy?.rawValue, to: &fast)
            let value = ServerMessage.TPV(fix, accuracy: accuracy)
            #expect(Self.text(ServerMessage.tpv(value).encoded()) == Self.text(fast))
            #expect(try ServerMessage.decode(fast) == .tpv(value))
        }
    }

    static let malformed: [(line: String, className: String?, message: String)] = [
        ("", nil, "invalid JSON"),
        (#"{"class":"AGENT"} x"#, nil, "invalid JSON"),
        (#"{"class":"TPV","lat":01}"#, nil, "invalid JSON"),
        ("[]", nil, "not a JSON object"),
        (#""TPV""#, nil, "not a JSON object"),
        (#"{"mode":1}"#, nil, "missing \"class\" (a string)"),
        (#"{"class":3}"#, nil, "missing \"class\" (a string)"),
        (#"{"class":"GST","rms":1.5}"#, "GST", "unknown class \"GST\""),
        (#"{"class":"SKY","satellites":[{"gnssid":0,"used":true}]}"#, "SKY", "SKY.satellites[].PRN is missing"),
        (#"{"class":"VERSION","release":"0.1.0"}"#, "VERSION", "VERSION.proto_major is missing"),
        (#"{"class":"VERSION","proto_major":"1"}"#, "VERSION", "VERSION.proto_major must be an integer"),
        (#"{"class":"VERSION","proto_major":1.5}"#, "VERSION", "VERSION.proto_major must be an integer"),
        (#"{"class":"ERROR","request":7}"#, "ERROR", "ERROR.request must be a string"),
        (#"{"class":"STATE"}"#, "STATE", "STATE.fix is missing"),
        (#"{"class":"STATE","fix":"no"}"#, "STATE", "STATE.fix must be true or false"),
        (#"{"class":"TPV","mode":3,"lat":"-27.2"}"#, "TPV", "TPV.lat must be a number"),
        (#"{"class":"TPV","mode":3,"lat":1e999}"#, "TPV", "TPV.lat must be a number"),
        (#"{"class":"TPV","time":"2007-04-08 09:53:05Z"}"#, "TPV", "TPV.time must be an ISO 8601 UTC time"),
        (#"{"class":"TPV","accuracy":"exact"}"#, "TPV", "TPV.accuracy must be \"reduced\" or \"full\""),
        (#"{"class":"POLL","tpv":{"class":"TPV"}}"#, "POLL", "POLL.tpv must be an array of objects"),
        (#"{"class":"POLL","tpv":[{"class":"TPV","mode":"3"}]}"#, "POLL", "POLL.tpv[].mode must be an integer"),
        (#"{"class":"STATUS","mode":4}"#, "STATUS", "STATUS.mode must be 1, 2 or 3"),
        (#"{"class":"STATUS","receivers":[{"name":"a","speed":9600.5}]}"#, "STATUS", "STATUS.receivers[].speed must be an integer"),
        (#"{"class":"AUTHORIZATION"}"#, "AUTHORIZATION", "AUTHORIZATION.status is missing"),
        (#"{"class":"AUTHORIZATION","status":"authorizedSometimes"}"#, "AUTHORIZATION",
         "AUTHORIZATION.status must be \"notDetermined\", \"denied\", \"restricted\", \"authorizedOnce\", \"authorizedPersistent\" or \"authorizedWhenInUse\""),
        (#"{"class":"ASK","client":{}}"#, "ASK", "ASK.id is missing"),
        (#"{"class":"ASK","id":7,"client":"alice"}"#, "ASK", "ASK.client must be an object"),
        (#"{"class":"ANSWERED","answer":"deny"}"#, "ANSWERED", "ANSWERED.id is missing"),
        (#"{"class":"GRANTS","persistent":[1]}"#, "GRANTS", "GRANTS.persistent must be an array of objects"),
        (#"{"class":"GRANTS","once":[{"granted":1764480000}]}"#, "GRANTS", "GRANTS.once[].granted must be a string"),
        (#"{"class":"AUDIT","events":[{"client":{"pid":"1"}}]}"#, "AUDIT", "AUDIT.events[].client.pid must be an integer"),
    ]

    @Test("a malformed line is refused, naming its class and the member", arguments: malformed)
    func rejects(line: String, className: String?, message: String) {
        #expect {
            _ = try ServerMessage.decode(Array(line.utf8))
        } throws: { error in
            guard let error = error as? ServerMessageError else { return false }
            return error.className == className && error.message.hasPrefix(message)
        }
    }

    @Test("unknown members and null are ignored; the first of two same-named members counts")
    func lenientMembers() throws {
        #expect(try ServerMessage.decode(Array(#"{"class":"STATE","fix":true,"reason":null,"since":[1,{}]}"#.utf8)) ==
                .state(.init(fix: true)))
        #expect(try ServerMessage.decode(Array(#"{"class":"ANSWERED","id":7,"id":8}"#.utf8)) ==
                .answered(.init(id: 7, answer: nil, by: nil)))
        // gpsd's mode 0 ("not seen yet") is no fix.
        #expect(try ServerMessage.decode(Array(#"{"class":"TPV","mode":0}"#.utf8)) == .tpv(.init(mode: .noFix)))
    }

    // Moved from LocationClient's tests with the parser they test.

    @Test("protocol times", arguments: [
        ("2007-04-08T09:53:05.802Z", "2007-04-08T09:53:05.802Z"),
        ("2007-04-08T09:53:05Z", "2007-04-08T09:53:05.000Z"),
        ("2007-04-08T09:53:05.8Z", "2007-04-08T09:53:05.800Z"),
        ("2007-04-08T09:53:05.802999Z", "2007-04-08T09:53:05.802Z"),
        ("2016-12-31T23:59:60.500Z", "2016-12-31T23:59:60.500Z"),
    ])
    func times(text: String, expected: String) {
        #expect(UTCTime(iso8601: text)?.iso8601 == expected)
    }

    @Test("malformed times", arguments: [
        "", "2007-04-08 09:53:05.802Z", "2007-04-08T09:53:05.802", "2007-02-30T09:53:05.802Z",
        "2007-04-08T24:00:00.000Z", "2007-04-08T09:53:60.000Z", "2007-04-08T09:53:05.Z", "2007-04-08T09:5a:05Z",
    ])
    func badTimes(text: String) {
        #expect(UTCTime(iso8601: text) == nil)
    }

    @Test("the TPV inside a POLL reply, as written")
    func pollElement() {
        let tpv = #"{"class":"TPV","device":"a]b{\"c","mode":3,"lat":1,"lon":2}"#
        let line = Array((#"{"class":"POLL","x":"tpv","tpv":[ "# + tpv + #" , {"class":"TPV"}]}"#).utf8)
        #expect(JSONText.objectElements(ofArrayMember: "tpv", in: line)?.first.map { String(decoding: $0, as: UTF8.self) } == tpv)
        #expect(JSONText.objectElements(ofArrayMember: "tpv", in: Array(#"{"class":"POLL","tpv":[]}"#.utf8))?.first == nil)
        #expect(JSONText.objectElements(ofArrayMember: "tpv", in: Array(#"{"class":"POLL"}"#.utf8))?.first == nil)
    }

    @Test("objectElements splits an array of objects exactly as written, strings with brackets included")
    func objectElementsSplitting() {
        let line = Array(#"{"class":"AUDIT","x":[1],"events":[{"a":"}]{["},{"b":{"c":[1,2]}} ,{}]}"#.utf8)
        let elements = JSONText.objectElements(ofArrayMember: "events", in: line)?.map { String(decoding: $0, as: UTF8.self) }
        #expect(elements == [#"{"a":"}]{["}"#, #"{"b":{"c":[1,2]}}"#, "{}"])
        #expect(JSONText.objectElements(ofArrayMember: "events", in: Array(#"{"events":[]}"#.utf8))?.isEmpty == true)
        #expect(JSONText.objectElements(ofArrayMember: "events", in: Array(#"{"events":[{},1]}"#.utf8)) == nil)
        #expect(JSONText.objectElements(ofArrayMember: "events", in: Array(#"{"events":["x"]}"#.utf8)) == nil)
        #expect(JSONText.objectElements(ofArrayMember: "events", in: Array(#"{"class":"AUDIT"}"#.utf8)) == nil)
    }
}
