import LocationCore
import LocationPolicy
import LocationWire
import Testing
@testable import LocationServer

/// Issue 33 item 2, "every silence explained", in the pure parts: a watcher the Publisher sends nothing for now is
/// told why and until when (`Delivery.silence`), and the front writes it as a `STATE` (docs/PROTOCOL.md "STATE").
@Suite("Every silence explained")
struct SilenceTests {
    typealias P = PublisherTests

    /// The silences in `out`, by client.
    static func silences(_ out: [Delivery]) -> [(id: Int, silence: Silence)] {
        out.compactMap { if case let .silence(id, silence) = $0 { (id, silence) } else { nil } }
    }

    @Test("a reduced watcher between paced reports is told when the next is due, after its report and when it starts")
    func pacedReducedWatchers() {
        var p = P.publisher(P.rules(reducedInterval: 600))
        _ = P.watch(&p, 1, P.weather, at: P.moment(0))
        var out: [Delivery] = []
        p.publish(P.positioned[0], at: P.moment(1), into: &out)
        // The report, then when the next is due: the slot at 600, 599 s away (as a POLL is told: `PacedPollTests`).
        #expect(P.reports(out).map(\.id) == [1])
        #expect(Self.silences(out).map(\.id) == [1] && Self.silences(out).first?.silence == .paced(nextReportIn: .seconds(599), fix: true), "\(out)")
        // Fixes meanwhile: no report, and no word more (once per report, not per fix).
        out.removeAll()
        for i in 2..<41 { p.publish(P.positioned[i], at: P.moment(Double(i)), into: &out) }
        #expect(out.isEmpty, "\(out)")
        // A second reduced watcher between the reports: when the next is due — never "no fix": there is one.
        let started = P.watch(&p, 2, P.weather, at: P.moment(41))
        #expect(P.reports(started).isEmpty)
        #expect(Self.silences(started).map(\.silence) == [.paced(nextReportIn: .seconds(559), fix: false)], "\(started)")
        #expect(!started.contains { if case .fixState = $0 { true } else { false } })
        // The same whatever the fix: a watcher starting while the fix is lost, not due, is told the same.
        p.publish(P.fixes[0], at: P.moment(42), into: &out)
        let lost = P.watch(&p, 3, P.weather, at: P.moment(43))
        #expect(Self.silences(lost).map(\.silence) == [.paced(nextReportIn: .seconds(557), fix: false)], "\(lost)")
    }

    @Test("a reduced watcher due a report when there is no fix is told so, and when the fix's return may show")
    func reducedNoFixNotice() {
        var p = P.publisher(P.rules(reducedInterval: 600))
        _ = P.watch(&p, 1, P.weather, at: P.moment(0))
        var out: [Delivery] = []
        p.publish(P.positioned[0], at: P.moment(1), into: &out)
        out.removeAll()
        // The next slot (600) without a fix: a notice, which uses the slot; the next is due at 1200.
        p.publish(P.fixes[0], at: P.moment(600), into: &out)
        #expect(Self.silences(out).map(\.silence) == [.noFix(nextReportIn: .seconds(600))], "\(out)")
        #expect(!out.contains { if case .fixState = $0 { true } else { false } }, "a reduced client's fix loss is the notice")
        let line = String(decoding: ServerState.state(.noFix(nextReportIn: .seconds(600)), noFixReason: "no receiver has a fix"), as: UTF8.self)
        #expect(line == #"{"class":"STATE","fix":false,"reason":"no receiver has a fix; at reduced accuracy the next report is due in 10 min 0 s","nextReportIn":600}"# + "\n")
    }

    @Test("a When-In-Use watcher whose user has no active session is told why at its WATCH, and when the session goes")
    func notInUse() {
        let grant = PersistentGrant(subject: .executable("/usr/bin/curl", user: "1001"), allowed: true, accuracy: .full,
                                    created: 0, decidedBy: "agent", whenInUse: true)
        var p = P.publisher(grants: GrantSet(persistent: [grant]))
        let started = P.watch(&p, 1, P.stranger, at: P.moment(0))
        let reason = p.authorization(of: 1, at: P.moment(0)).reason
        #expect(Self.silences(started).map(\.silence) == [.notInUse(reason: reason)], "\(started)")
        // In use: streams; out of use again: AUTHORIZATION, then why nothing comes.
        _ = p.setUser(1001, inUse: true)
        var out = p.reevaluateAll(because: nil, at: P.moment(1))
        p.publish(P.positioned[0], at: P.moment(2), into: &out)
        // (Reduced: the default rule caps the grant; so the next report's due time follows.)
        #expect(P.reports(out).map(\.id) == [1] && Self.silences(out).map(\.silence) == [.paced(nextReportIn: .seconds(899), fix: true)], "\(out)")
        _ = p.setUser(1001, inUse: false)
        let paused = p.reevaluateAll(because: nil, at: P.moment(3))
        #expect(paused.count == 2, "\(paused)")
        #expect(Self.silences(paused).map(\.silence) == [.notInUse(reason: reason)], "\(paused)")
    }

    @Test("the STATE lines of the silences", arguments: [
        (Silence.paced(nextReportIn: .milliseconds(898_200), fix: true),
         #"{"class":"STATE","fix":true,"reason":"reduced accuracy: the next report is due in 14 min 59 s","waiting":"accuracyLimited","nextReportIn":899}"#),
        (.paced(nextReportIn: .seconds(60), fix: false),
         #"{"class":"STATE","fix":false,"reason":"reduced accuracy: the next report is due in 1 min 0 s","waiting":"accuracyLimited","nextReportIn":60}"#),
        (.notInUse(reason: "When In Use, and the user has no active login session: nothing is sent until one is active"),
         #"{"class":"STATE","fix":false,"reason":"When In Use, and the user has no active login session: nothing is sent until one is active","waiting":"insufficientlyInUse"}"#),
    ])
    func lines(silence: Silence, line: String) throws {
        let bytes = ServerState.state(silence, noFixReason: "unused")
        #expect(String(decoding: bytes, as: UTF8.self) == line + "\n")
        // And a client reads it back.
        guard case .state(let state) = try ServerMessage.decode(Array(bytes.dropLast())) else { Issue.record("not a STATE"); return }
        #expect(state.waiting != nil && state.fix == line.contains(#""fix":true"#))
    }
}
