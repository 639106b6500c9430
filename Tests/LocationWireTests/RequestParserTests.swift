import LocationWire
import Testing

/// `RequestParser` against docs/PROTOCOL.md "Requests" and "Errors". The messages are the ones the
/// parser gave when it was built on Foundation's `JSONDecoder`; clients match on them, so they are the
/// spec here.
@Suite("Request parser")
struct RequestParserTests {
    static func parse(_ line: String) throws(RequestError) -> Request {
        try RequestParser.parse(Array(line.utf8))
    }

    static let requests: [(line: String, request: Request)] = [
        (#"{"class":"WATCH"}"#, .watch(enable: true, minInterval: 0, distanceFilter: 0)),
        (#"{"class":"WATCH","enable":false}"#, .watch(enable: false, minInterval: 0, distanceFilter: 0)),
        (#"{"class":"WATCH","enable":true,"minInterval":2.5,"distanceFilter":10}"#, .watch(enable: true, minInterval: 2.5, distanceFilter: 10)),
        (#"{"class":"POLL"}"#, .poll(timeout: 10)),
        (#"{"class":"POLL","timeout":300}"#, .poll(timeout: 300)),
        (#"{"class":"POLL","timeout":0.5}"#, .poll(timeout: 0.5)),
        (#"{"class":"STATUS"}"#, .status),
        (#"{"class":"AUTHORIZE"}"#, .authorize(kind: .once, accuracy: .full, name: nil)),
        (#"{"class":"AUTHORIZE","authorization":"persistent","accuracy":"reduced","name":"Navit \u00e9"}"#,
         .authorize(kind: .persistent, accuracy: .reduced, name: "Navit é")),
        (#"{"class":"AUTHORIZATION"}"#, .authorization),
        (#"{"class":"FULLACCURACY","purposeKey":"TurnByTurn"}"#, .fullAccuracy(purposeKey: "TurnByTurn")),
        (#"{"class":"AGENT"}"#, .agent),
        (#"{"class":"ANSWER","id":7,"answer":"allowOnce"}"#, .answer(id: 7, answer: .allowOnce, accuracy: nil)),
        (#"{"class":"ANSWER","id":8,"answer":"allowAlways","accuracy":"reduced"}"#, .answer(id: 8, answer: .allowAlways, accuracy: .reduced)),
        (#"{"class":"ANSWER","id":-1,"answer":"deny"}"#, .answer(id: -1, answer: .deny, accuracy: nil)),
        (#"{"class":"GRANTS"}"#, .grants),
        (#"{"class":"GRANT","executable":"/usr/bin/navit"}"#,
         .grant(subject: .executable("/usr/bin/navit"), kind: .persistent, accuracy: .full, expires: nil)),
        (#"{"class":"GRANT","unit":"navit.service","kind":"once","accuracy":"reduced","expires":1800000000}"#,
         .grant(subject: .unit("navit.service"), kind: .once, accuracy: .reduced, expires: 1_800_000_000)),
        (#"{"class":"GRANT","user":"alice","user":"bob"}"#, .grant(subject: .user("alice"), kind: .persistent, accuracy: .full, expires: nil)),
        (#"{"class":"REVOKE","user":"1000"}"#, .revoke(subject: .user("1000"))),
        (#"{"class":"REVOKE","executable":"\/usr\/bin\/x"}"#, .revoke(subject: .executable("/usr/bin/x"))),
        // REVOKE takes a relative path, to clear what a daemon before issue 12 stored under one.
        (#"{"class":"REVOKE","executable":"relative/x"}"#, .revoke(subject: .executable("relative/x"))),
        // A program of one user: executable or unit with user (before, refused as two subjects).
        (#"{"class":"GRANT","executable":"/usr/bin/python3","user":"bob"}"#,
         .grant(subject: .executable("/usr/bin/python3", user: "bob"), kind: .persistent, accuracy: .full, expires: nil)),
        (#"{"class":"REVOKE","unit":"navit.service","user":"1000"}"#, .revoke(subject: .unit("navit.service", user: "1000"))),
        // Standing approvals (protocol 1.3): the agent's answer, and an administrator's GRANT.
        (#"{"class":"ANSWER","id":9,"answer":"allowOnceStanding"}"#, .answer(id: 9, answer: .allowOnceStanding, accuracy: nil)),
        (#"{"class":"GRANT","executable":"/usr/bin/map","kind":"once","standing":true}"#,
         .grant(subject: .executable("/usr/bin/map"), kind: .once, accuracy: .full, expires: nil, standing: true)),
        (#"{"class":"GRANT","executable":"/usr/bin/map","kind":"once","standing":false}"#,
         .grant(subject: .executable("/usr/bin/map"), kind: .once, accuracy: .full, expires: nil)),
        // When In Use (protocol 1.4); "always" is Always, spelled "persistent" before.
        (#"{"class":"AUTHORIZE","authorization":"whenInUse"}"#, .authorize(kind: .whenInUse, accuracy: .full, name: nil)),
        (#"{"class":"AUTHORIZE","authorization":"always"}"#, .authorize(kind: .persistent, accuracy: .full, name: nil)),
        (#"{"class":"GRANT","user":"1000","kind":"whenInUse"}"#, .grant(subject: .user("1000"), kind: .whenInUse, accuracy: .full, expires: nil)),
        (#"{"class":"AUDIT"}"#, .audit(since: nil)),
        (#"{"class":"AUDIT","since":1700000000.5}"#, .audit(since: 1_700_000_000.5)),
        (#"{"class":"AUDIT","cursor":"1700000000.5:3","limit":256}"#, .audit(since: nil, cursor: "1700000000.5:3", limit: 256)),
        // Unknown members are ignored (PROTOCOL.md "Conventions"); null is the same as absent.
        (#"{"class":"WATCH","json":true,"device":"/dev/ttyUSB0","scaled":{"a":[1,2]}}"#, .watch(enable: true, minInterval: 0, distanceFilter: 0)),
        (#"{"class":"POLL","timeout":null,"enable":null}"#, .poll(timeout: 10)),
        // Whitespace between tokens, and trailing CR, spaces and tabs on the line.
        (" {\t\"class\" : \"STATUS\" }\r", .status),
        (#"{"class":"WATCH","minInterval":5}"# + " \t\r\r ", .watch(enable: true, minInterval: 5, distanceFilter: 0)),
        // The first of two same-named members counts (as with JSONDecoder).
        (#"{"class":"WATCH","class":"POLL"}"#, .watch(enable: true, minInterval: 0, distanceFilter: 0)),
        (#"{"class":"WATCH","enable":false,"enable":1}"#, .watch(enable: false, minInterval: 0, distanceFilter: 0)),
        // Names and values are read after their escapes.
        (#"{"cl\u0061ss":"W\u0041TCH"}"#, .watch(enable: true, minInterval: 0, distanceFilter: 0)),
        // An integer member takes a whole number however written; a number member takes an integer.
        (#"{"class":"ANSWER","id":7.0,"answer":"deny"}"#, .answer(id: 7, answer: .deny, accuracy: nil)),
        (#"{"class":"ANSWER","id":1e2,"answer":"deny"}"#, .answer(id: 100, answer: .deny, accuracy: nil)),
        (#"{"class":"ANSWER","id":9223372036854775807,"answer":"deny"}"#, .answer(id: .max, answer: .deny, accuracy: nil)),
        (#"{"class":"ANSWER","id":9007199254740993.0,"answer":"deny"}"#, .answer(id: 9_007_199_254_740_993, answer: .deny, accuracy: nil)),
        (#"{"class":"WATCH","minInterval":-0}"#, .watch(enable: true, minInterval: 0, distanceFilter: 0)),
        // A UTF-8 byte order mark before the object is skipped (JSONDecoder did; RFC 8259 §8.1 allows it).
        ("\u{FEFF}{\"class\":\"STATUS\"}", .status),
    ]

    @Test("each request class with its members", arguments: requests)
    func parses(line: String, request: Request) throws {
        #expect(try Self.parse(line) == request)
    }

    static let gpsd: [(line: String, request: Request)] = [
        (#"?WATCH={"enable":true,"json":true};"#, .watch(enable: true, minInterval: 0, distanceFilter: 0)),
        (#"?WATCH={"enable":false}"#, .watch(enable: false, minInterval: 0, distanceFilter: 0)),
        (#"?WATCH={"enable":true};"# + "\r", .watch(enable: true, minInterval: 0, distanceFilter: 0)),
        (#"?WATCH={} ; "#, .watch(enable: true, minInterval: 0, distanceFilter: 0)),
        ("?WATCH;", .watch(enable: true, minInterval: 0, distanceFilter: 0)),
        ("?POLL;", .poll(timeout: 10)),
        ("?POLL", .poll(timeout: 10)),
        (#"?POLL={"timeout":2};"#, .poll(timeout: 2)),
        // The class comes from the name before "="; a "class" member is not consulted.
        (#"?WATCH={"class":"POLL"};"#, .watch(enable: true, minInterval: 0, distanceFilter: 0)),
    ]

    @Test("gpsd's forms: ?CLASS={...}; and ?CLASS;", arguments: gpsd)
    func gpsdForms(line: String, request: Request) throws {
        #expect(try Self.parse(line) == request)
    }

    static let errors: [(line: String, request: String, message: String)] = [
        // Syntax.
        ("", "?", "invalid JSON"),
        ("{", "?", "invalid JSON"),
        (#"{"class":"WATCH"} x"#, "?", "invalid JSON"),
        (#"{"class":"WATCH",}"#, "?", "invalid JSON"),
        (#"{"class":"WATCH","minInterval":01}"#, "?", "invalid JSON"),
        (#"{"class":"WATCH","x":"\uD800"}"#, "?", "invalid JSON"),
        ("{\"class\":\"WATCH\",\"x\":\"\u{1}\"}", "?", "invalid JSON"),
        (#"?WATCH={"enable":tru};"#, "WATCH", "invalid JSON"),
        ("?WATCH=;", "WATCH", "invalid JSON"),
        (#"?WATCH={};;"#, "WATCH", "invalid JSON"),
        // Not an object.
        ("[]", "?", "not a JSON object"),
        ("42", "?", "not a JSON object"),
        (#""WATCH""#, "?", "not a JSON object"),
        ("true", "?", "not a JSON object"),
        ("?WATCH=[];", "WATCH", "not a JSON object"),
        ("null", "?", "invalid request"),
        ("?POLL=null;", "POLL", "invalid request"),
        // The class.
        ("{}", "?", "missing \"class\""),
        (#"{"class":null}"#, "?", "missing \"class\""),
        (#"{"enable":true}"#, "?", "missing \"class\""),
        (#"{"class":5}"#, "?", "class must be a string"),
        (#"{"class":["WATCH"]}"#, "?", "class must be a string"),
        (#"?WATCH={"class":5};"#, "WATCH", "class must be a string"),
        (#"{"class":"NOPE"}"#, "NOPE", "unknown class \"NOPE\""),
        (#"{"class":"watch"}"#, "watch", "unknown class \"watch\""),
        ("?NOPE;", "NOPE", "unknown class \"NOPE\""),
        ("?;", "", "unknown class \"\""),
        // Member types, checked for every class, in a fixed member order.
        (#"{"class":"WATCH","enable":1}"#, "WATCH", "enable must be true or false"),
        (#"{"class":"WATCH","enable":"true"}"#, "WATCH", "enable must be true or false"),
        (#"{"class":"WATCH","minInterval":"1"}"#, "WATCH", "minInterval must be a number"),
        (#"{"class":"WATCH","distanceFilter":true}"#, "WATCH", "distanceFilter must be a number"),
        (#"{"class":"POLL","timeout":[1]}"#, "POLL", "timeout must be a number"),
        (#"{"class":"AUTHORIZE","authorization":1}"#, "AUTHORIZE", "authorization must be a string"),
        (#"{"class":"AUTHORIZE","name":5}"#, "AUTHORIZE", "name must be a string"),
        (#"{"class":"AUTHORIZE","accuracy":{}}"#, "AUTHORIZE", "accuracy must be a string"),
        (#"{"class":"FULLACCURACY","purposeKey":false}"#, "FULLACCURACY", "purposeKey must be a string"),
        (#"{"class":"ANSWER","id":"7","answer":"deny"}"#, "ANSWER", "id must be Int"),
        (#"{"class":"ANSWER","id":true,"answer":"deny"}"#, "ANSWER", "id must be Int"),
        (#"{"class":"ANSWER","id":7,"answer":1}"#, "ANSWER", "answer must be a string"),
        (#"{"class":"GRANT","executable":1}"#, "GRANT", "executable must be a string"),
        (#"{"class":"GRANT","unit":[]}"#, "GRANT", "unit must be a string"),
        (#"{"class":"REVOKE","user":1000}"#, "REVOKE", "user must be a string"),
        (#"{"class":"GRANT","user":"a","kind":true}"#, "GRANT", "kind must be a string"),
        (#"{"class":"GRANT","user":"a","expires":"soon"}"#, "GRANT", "expires must be a number"),
        (#"{"class":"GRANT","user":"a","kind":"once","standing":"yes"}"#, "GRANT", "standing must be true or false"),
        (#"{"class":"GRANT","user":"a","standing":true}"#, "GRANT", "standing needs kind \"once\""),
        (#"{"class":"AUDIT","since":"yesterday"}"#, "AUDIT", "since must be a number"),
        (#"{"class":"AUDIT","cursor":7}"#, "AUDIT", "cursor must be a string"),
        (#"{"class":"AUDIT","limit":0}"#, "AUDIT", "limit must be an integer from 1 to 256"),
        (#"{"class":"AUDIT","limit":257}"#, "AUDIT", "limit must be an integer from 1 to 256"),
        (#"{"class":"STATUS","enable":1}"#, "STATUS", "enable must be true or false"),
        (#"{"class":"NOPE","timeout":"x"}"#, "NOPE", "timeout must be a number"),
        (#"{"class":"WATCH","since":"x","enable":1}"#, "WATCH", "enable must be true or false"),
        (#"{"class":"WATCH","enable":1,"enable":true}"#, "WATCH", "enable must be true or false"),
        (#"?WATCH={"enable":1};"#, "WATCH", "enable must be true or false"),
        // Numbers the member's type cannot hold.
        (#"{"class":"ANSWER","id":1.5,"answer":"deny"}"#, "ANSWER", "invalid JSON"),
        (#"{"class":"ANSWER","id":9223372036854775808,"answer":"deny"}"#, "ANSWER", "invalid JSON"),
        (#"{"class":"ANSWER","id":1e30,"answer":"deny"}"#, "ANSWER", "invalid JSON"),
        (#"{"class":"WATCH","minInterval":1e400}"#, "WATCH", "invalid JSON"),
        (#"{"class":"AUDIT","since":1e-400}"#, "AUDIT", "invalid JSON"),
        // Ranges and values, per class.
        (#"{"class":"WATCH","minInterval":-1}"#, "WATCH", "minInterval must be a number of seconds in [0, 86400]"),
        (#"{"class":"WATCH","minInterval":86400.5}"#, "WATCH", "minInterval must be a number of seconds in [0, 86400]"),
        (#"{"class":"WATCH","distanceFilter":-0.5}"#, "WATCH", "distanceFilter must be a number of metres ≥ 0"),
        (#"{"class":"POLL","timeout":0}"#, "POLL", "timeout must be a number of seconds in (0, 300]"),
        (#"{"class":"POLL","timeout":300.5}"#, "POLL", "timeout must be a number of seconds in (0, 300]"),
        (#"{"class":"AUTHORIZE","authorization":"sometimes"}"#, "AUTHORIZE", "authorization must be \"once\", \"whenInUse\", \"always\" or \"persistent\""),
        (#"{"class":"AUTHORIZE","accuracy":"exact"}"#, "AUTHORIZE", "accuracy must be \"full\" or \"reduced\""),
        (#"{"class":"FULLACCURACY"}"#, "FULLACCURACY", "purposeKey must be a non-empty string"),
        (#"{"class":"FULLACCURACY","purposeKey":""}"#, "FULLACCURACY", "purposeKey must be a non-empty string"),
        (#"{"class":"ANSWER","answer":"deny"}"#, "ANSWER", "id must be the ASK's id"),
        (#"{"class":"ANSWER","id":null,"answer":"deny"}"#, "ANSWER", "id must be the ASK's id"),
        (#"{"class":"ANSWER","id":7}"#, "ANSWER", "answer must be \"allowOnce\", \"allowOnceStanding\", \"allowAlways\" or \"deny\""),
        (#"{"class":"ANSWER","id":7,"answer":"yes"}"#, "ANSWER", "answer must be \"allowOnce\", \"allowOnceStanding\", \"allowAlways\" or \"deny\""),
        (#"{"class":"ANSWER","id":7,"answer":"deny","accuracy":"best"}"#, "ANSWER", "accuracy must be \"full\" or \"reduced\""),
        (#"{"class":"GRANT"}"#, "GRANT", "give executable or unit (each optionally with user), or user"),
        (#"{"class":"GRANT","executable":"/x","unit":"a"}"#, "GRANT", "give executable or unit (each optionally with user), or user"),
        (#"{"class":"REVOKE","executable":"/x","unit":"a","user":"b"}"#, "REVOKE", "give executable or unit (each optionally with user), or user"),
        (#"{"class":"GRANT","user":"a","kind":"forever"}"#, "GRANT", "kind must be \"once\", \"whenInUse\", \"always\" or \"persistent\""),
        (#"{"class":"GRANT","user":"a","accuracy":"exact"}"#, "GRANT", "accuracy must be \"full\" or \"reduced\""),
        (#"{"class":"GRANT","user":"a","expires":0}"#, "GRANT", "expires must be a number of seconds > 0"),
        (#"{"class":"GRANT","user":"a","expires":-5}"#, "GRANT", "expires must be a number of seconds > 0"),
        // Issue 12: a relative path matches no client (the kernel reports absolute ones).
        (#"{"class":"GRANT","executable":"relative/navit"}"#, "GRANT", "executable must be an absolute path, not \"relative/navit\""),
        (#"{"class":"GRANT","executable":"navit","user":"bob","kind":"once"}"#, "GRANT", "executable must be an absolute path, not \"navit\""),
    ]

    @Test("each refusal names the request class (or ?) and says what is wrong", arguments: errors)
    func refuses(line: String, request: String, message: String) {
        #expect(throws: RequestError(request: request, message: message)) { try Self.parse(line) }
    }

    @Test("a line of 16 KiB is read; one byte more is refused before anything else")
    func sizeLimit() throws {
        let limit = ProtocolVersion.maximumRequestLength
        #expect(limit == 16 * 1024)
        let head = #"{"class":"STATUS","pad":""#
        let fits = head + String(repeating: "x", count: limit - head.utf8.count - 2) + #""}"#
        #expect(fits.utf8.count == limit)
        #expect(try Self.parse(fits) == .status)
        let over = head + String(repeating: "x", count: limit - head.utf8.count - 1) + #""}"#
        #expect(over.utf8.count == limit + 1)
        #expect(throws: RequestError(request: "?", message: "request longer than 16384 bytes")) { try Self.parse(over) }
        // Trailing whitespace counts toward the limit (it is trimmed after the size check).
        #expect(throws: RequestError(request: "?", message: "request longer than 16384 bytes")) { try Self.parse(fits + " ") }
    }

    @Test("invalid UTF-8 in a request is invalid JSON; in a gpsd class name it is replaced, as before")
    func invalidUTF8() {
        let line = Array(#"{"class":"AUTHORIZE","name":""#.utf8) + [0xFF] + Array(#""}"#.utf8)
        #expect(throws: RequestError(request: "?", message: "invalid JSON")) { try RequestParser.parse(line) }
        #expect(throws: RequestError(request: "W\u{FFFD}", message: "unknown class \"W\u{FFFD}\"")) {
            try RequestParser.parse(Array("?W".utf8) + [0xFF] + Array(";".utf8))
        }
    }

    @Test("nesting deeper than the reader's limit is invalid JSON")
    func deepNesting() {
        let depth = JSONReader.defaultMaximumDepth
        let line = #"{"class":"WATCH","x":"# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}"
        #expect(throws: RequestError(request: "?", message: "invalid JSON")) { try Self.parse(line) }
        let fits = #"{"class":"WATCH","x":"# + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}"
        #expect(throws: Never.self) { try Self.parse(fits) }
    }
}
