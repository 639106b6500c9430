import LocationCore
import LocationWire
import Testing

/// The typed `POLL` and `AUDIT` replies and the audit record against the examples of docs/PROTOCOL.md
/// ("POLL", "AUDIT"): the encoders write the page's bytes from the values it shows, and the decoders read
/// those bytes back to the same values (the daemon's audit file holds the records `AuditRecord.encoded()`
/// writes; `LocationClient` reads both replies with `ServerMessage.decode`).
@Suite("POLL and AUDIT replies as typed messages")
struct PollAndAuditMessageTests {
    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// docs/PROTOCOL.md "POLL", the reply.
    static let pollLine = #"{"class":"POLL","tpv":[{"class":"TPV","mode":3,"time":"2007-04-08T09:53:08.801Z","lat":-27.210781667,"lon":153.05213,"accuracy":"full"}]}"#
    /// The example's TPV: a 3D fix at 2007-04-08 09:53:08.801 UTC, 27.210781667° S 153.05213° E, full accuracy.
    static let pollTPV = ServerMessage.TPV(mode: .threeDimensional, time: utc(2007, 4, 8, 9, 53, 8, ms: 801),
                                           latitude: -27.210781667, longitude: 153.05213, accuracy: .full)

    /// docs/PROTOCOL.md "AUDIT", the reply: one event and the cursor of the next page.
    static let auditLine = #"{"class":"AUDIT","events":[{"unix":1764480000.5,"time":"2025-11-30T05:20:00.500Z","event":"decision","client":{"pid":4242,"uid":1000,"user":"alice","exe":"/usr/bin/navit","name":"My Navigator"},"request":"AUTHORIZE","status":"authorizedOnce","accuracy":"full","reason":"..."}],"next":"1764480000.5:1"}"#
    /// The example's event as a line of the audit file (the element of `events`, as stored).
    static let recordLine = #"{"unix":1764480000.5,"time":"2025-11-30T05:20:00.500Z","event":"decision","client":{"pid":4242,"uid":1000,"user":"alice","exe":"/usr/bin/navit","name":"My Navigator"},"request":"AUTHORIZE","status":"authorizedOnce","accuracy":"full","reason":"..."}"#
    /// The example's event: Unix time 1764480000.5 (2025-11-30 05:20:00.500 UTC), alice's (uid 1000) navit,
    /// pid 4242, declaring "My Navigator", granted a one-time authorization at full accuracy.
    static let record = AuditRecord(unixTime: 1_764_480_000.5, time: utc(2025, 11, 30, 5, 20, 0, ms: 500), event: "decision",
                                    client: ClientDescription(pid: 4242, uid: 1000, user: "alice", executable: "/usr/bin/navit",
                                                              name: "My Navigator"),
                                    request: "AUTHORIZE", status: "authorizedOnce", accuracy: .full, reason: "...")

    @Test("POLL: the value encodes to the protocol page's reply, which decodes back to it")
    func poll() throws {
        let message = ServerMessage.poll(.init(tpv: [Self.pollTPV]))
        #expect(Self.text(message.encoded()) == Self.pollLine + "\n")
        #expect(try ServerMessage.decode(Array(Self.pollLine.utf8)) == message)
        #expect(try ServerMessage.decode(message.encoded()).encoded() == message.encoded())
    }

    @Test("POLL as the daemon builds it, from the fix and the client's accuracy: the page's reply")
    func pollFromFix() {
        let fix = Fix(time: utc(2007, 4, 8, 9, 53, 8, ms: 801), mode: .threeDimensional, quality: .gps,
                      latitude: -27.210781667, longitude: 153.05213)
        let message = ServerMessage.poll(.init(tpv: [ServerMessage.TPV(fix, accuracy: .full)]))
        #expect(Self.text(message.encoded()) == Self.pollLine + "\n")
        // No report at that accuracy: an empty array, as the daemon always sent it.
        #expect(Self.text(ServerMessage.poll(.init(tpv: [])).encoded()) == #"{"class":"POLL","tpv":[]}"# + "\n")
    }

    @Test("AUDIT: the value encodes to the protocol page's reply, which decodes back to it")
    func audit() throws {
        let message = ServerMessage.audit(.init(events: [Self.record], next: "1764480000.5:1"))
        #expect(Self.text(message.encoded()) == Self.auditLine + "\n")
        #expect(try ServerMessage.decode(Array(Self.auditLine.utf8)) == message)
        #expect(try ServerMessage.decode(message.encoded()).encoded() == message.encoded())
        // The last page: no `next`.
        #expect(Self.text(ServerMessage.audit(.init(events: [Self.record])).encoded()) ==
                #"{"class":"AUDIT","events":["# + Self.recordLine + "]}\n")
    }

    @Test("an audit record encodes to the page's event, a line of the audit file, and reads back from it")
    func record() throws {
        #expect(Self.text(Self.record.encoded()) == Self.recordLine)
        #expect(try AuditRecord(decoding: Array(Self.recordLine.utf8)) == Self.record)
        #expect(try AuditRecord(decoding: Array((Self.recordLine + "\n").utf8)) == Self.record)
        // Text a client chose, escaped as the page says (`\u{XX}`), and JSON's own escapes, read back as written.
        let escaped = AuditRecord(unixTime: 1_764_480_000.125, time: utc(2025, 11, 30, 5, 20, 0, ms: 125), event: "delivery",
                                  client: ClientDescription(pid: 7, uid: 1000, name: #"Map \u{1B}[31m "red""#),
                                  request: nil, status: "authorizedPersistent", accuracy: .reduced, reason: "first delivery…")
        #expect(try AuditRecord(decoding: escaped.encoded()) == escaped)
        #expect(try AuditRecord(decoding: escaped.encoded()).encoded() == escaped.encoded())
    }

    @Test("a line that is not an audit record is refused, naming AUDIT", arguments: [
        #"{"unix":1764480000.5,"event":"decision""#, #"[1]"#, #"{"accuracy":"precise"}"#, #"{"time":"yesterday"}"#,
    ])
    func recordRefused(line: String) {
        do {
            _ = try AuditRecord(decoding: Array(line.utf8))
            Issue.record("read \(line)")
        } catch {
            #expect(error.className == "AUDIT", "\(error)")
        }
    }
}
