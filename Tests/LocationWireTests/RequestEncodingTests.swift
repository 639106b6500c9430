import LocationWire
import Testing

/// `Request.encoded()`: what `LocationClient` writes, read back by the daemon's `RequestParser`.
@Suite("Request encoder")
struct RequestEncodingTests {
    /// Every request class, with and without its optional members, and each kind of grant subject.
    static let requests: [Request] = [
        .watch(enable: true, minInterval: 0, distanceFilter: 0),
        .watch(enable: true, minInterval: 2.5, distanceFilter: 10),
        .watch(enable: false, minInterval: 0, distanceFilter: 0),
        .poll(timeout: 10),
        .poll(timeout: 0.5),
        .status,
        .authorize(kind: .once, accuracy: .full, name: nil),
        .authorize(kind: .persistent, accuracy: .reduced, name: "Navit \"é\"\n"),
        .authorization,
        .fullAccuracy(purposeKey: "TurnByTurn"),
        .agent,
        .answer(id: 7, answer: .allowOnce, accuracy: nil),
        .answer(id: 8, answer: .allowAlways, accuracy: .reduced),
        .answer(id: -1, answer: .deny, accuracy: .full),
        .grants,
        .grant(subject: .executable("/usr/bin/navit"), kind: .persistent, accuracy: .full, expires: nil),
        .grant(subject: .executable("/usr/bin/python3", user: "bob"), kind: .once, accuracy: .reduced, expires: 86400),
        .grant(subject: .unit("navit.service", user: "1000"), kind: .persistent, accuracy: .full, expires: 0.25),
        .grant(subject: .user("alice"), kind: .once, accuracy: .reduced, expires: 5400),
        .revoke(subject: .executable("/usr/bin/navit")),
        .revoke(subject: .unit("navit.service")),
        .revoke(subject: .user("1000")),
        .audit(since: nil),
        .audit(since: 1_700_000_000.5),
        .share(sharing: nil, forSeconds: nil),
        .share(sharing: true, forSeconds: nil),
        .share(sharing: false, forSeconds: 3600),
        .share(sharing: false, forSeconds: nil, discard: true),
    ]

    @Test("SHARE's discard goes with sharing false only")
    func discardNeedsOff() {
        #expect(throws: RequestError.self) { try RequestParser.parse(Array(#"{"class":"SHARE","sharing":true,"discard":true}"#.utf8)) }
        #expect(throws: RequestError.self) { try RequestParser.parse(Array(#"{"class":"SHARE","discard":true}"#.utf8)) }
        #expect(throws: RequestError.self) { try RequestParser.parse(Array(#"{"class":"SHARE","sharing":false,"discard":1}"#.utf8)) }
    }

    @Test("encode then parse gives the same request", arguments: requests)
    func roundTrip(request: Request) throws {
        let line = request.encoded()
        #expect(line.last == 10)
        #expect(line.filter { $0 == 10 }.count == 1)
        #expect(try RequestParser.parse(Array(line.dropLast())) == request)
    }

    /// The lines of docs/PROTOCOL.md and the ones `LocationClient` has always written (its tests check
    /// them byte for byte against a fake daemon).
    static let lines: [(request: Request, line: String)] = [
        (.watch(enable: true, minInterval: 1, distanceFilter: 10), #"{"class":"WATCH","enable":true,"minInterval":1,"distanceFilter":10}"#),
        (.watch(enable: false, minInterval: 0, distanceFilter: 0), #"{"class":"WATCH","enable":false}"#),
        (.poll(timeout: 10), #"{"class":"POLL","timeout":10}"#),
        (.status, #"{"class":"STATUS"}"#),
        (.authorize(kind: .once, accuracy: .full, name: "My Navigator"),
         #"{"class":"AUTHORIZE","authorization":"once","accuracy":"full","name":"My Navigator"}"#),
        (.authorization, #"{"class":"AUTHORIZATION"}"#),
        (.fullAccuracy(purposeKey: "TurnByTurn"), #"{"class":"FULLACCURACY","purposeKey":"TurnByTurn"}"#),
        (.agent, #"{"class":"AGENT"}"#),
        (.answer(id: 7, answer: .allowOnce, accuracy: .reduced), #"{"class":"ANSWER","id":7,"answer":"allowOnce","accuracy":"reduced"}"#),
        (.grants, #"{"class":"GRANTS"}"#),
        (.grant(subject: .executable("/usr/bin/navit"), kind: .persistent, accuracy: .reduced, expires: 86400),
         #"{"class":"GRANT","executable":"/usr/bin/navit","kind":"persistent","accuracy":"reduced","expires":86400}"#),
        (.grant(subject: .unit("navit.service", user: "alice"), kind: .persistent, accuracy: .full, expires: nil),
         #"{"class":"GRANT","unit":"navit.service","user":"alice","kind":"persistent","accuracy":"full"}"#),
        (.revoke(subject: .executable("/usr/bin/navit")), #"{"class":"REVOKE","executable":"/usr/bin/navit"}"#),
        (.audit(since: 1_764_480_000), #"{"class":"AUDIT","since":1764480000}"#),
        (.audit(since: 1_764_480_000, cursor: "1764480000.5:1", limit: 100),
         #"{"class":"AUDIT","since":1764480000,"cursor":"1764480000.5:1","limit":100}"#),
    ]

    @Test("the protocol page's lines, byte for byte", arguments: lines)
    func bytes(request: Request, line: String) {
        #expect(request.encoded() == Array(line.utf8) + [10])
    }
}
