import LocationCore
import LocationPolicy
import Testing
@testable import LocationServer

/// Issue 12, "Wrong results a new user hit", in the pure parts: the accuracy a client asked for caps what
/// the Publisher sends it; a reduced client can be told when its next paced report is due, and that time
/// depends on nothing but when it last got a report.
@Suite("Publisher: requested accuracy and the pacing's due time")
struct PacedPollTests {
    static let key = ReducedPacing.Key(uid: 1000)
    static let start = ContinuousClock.now

    @Test("timeUntilDue: zero before any report and from reduced-interval on; what is left of it in between",
          arguments: [
              (nil as Double?, 0.0, 0.0),        // never had a report: due
              (0, 0, 900),                       // just had one: a whole interval
              (0, 1, 899),
              (0, 897.5, 2.5),
              (0, 900, 0),                       // due exactly then
              (0, 5000, 0),
          ])
    func timeUntilDue(recordedAt: Double?, queriedAt: Double, expected: Double) {
        var pacing = ReducedPacing()
        if let recordedAt { pacing.record(Self.key, report: 1, now: Self.start + .seconds(recordedAt), interval: .seconds(900)) }
        let wait = pacing.timeUntilDue(Self.key, now: Self.start + .seconds(queriedAt), interval: .seconds(900))
        #expect(wait == .seconds(expected))
        #expect(pacing.isDue(Self.key, now: Self.start + .seconds(queriedAt), interval: .seconds(900)) == (expected == 0))
        // Another user's program, or another program of the user: its own time.
        #expect(pacing.timeUntilDue(.init(uid: 1001), now: Self.start + .seconds(queriedAt),
                                    interval: .seconds(900)) == .zero)
    }

    /// The fixes after the first report: all with a position, all without, or alternating.
    enum Afterwards: CaseIterable, Sendable { case positions, noFix, alternating }

    @Test("the due time a reduced client is told is the same whatever the fix did since its last report",
          arguments: Afterwards.allCases)
    func dueTimeTellsNothingOfTheFix(afterwards: Afterwards) {
        var p = PublisherTests.publisher(PublisherTests.rules(reducedInterval: 600))
        _ = PublisherTests.watch(&p, 1, PublisherTests.weather, at: PublisherTests.moment(0))
        var out: [Delivery] = []
        p.publish(PublisherTests.positioned[0], at: PublisherTests.moment(1), into: &out)
        #expect(PublisherTests.reports(out).map(\.id) == [1])
        #expect(p.reducedReportDue(of: 1, at: PublisherTests.moment(1)) == .seconds(600))
        for i in 2..<40 {
            let lost = afterwards == .noFix || (afterwards == .alternating && i % 2 == 0)
            p.publish(lost ? PublisherTests.fixes[0] : PublisherTests.positioned[i], at: PublisherTests.moment(Double(i)), into: &out)
        }
        #expect(p.reducedReportDue(of: 1, at: PublisherTests.moment(41)) == .seconds(560))
        // A connection of the same user and program that never had a report itself waits as long.
        p.connect(2, identity: PublisherTests.weather)
        #expect(p.reducedReportDue(of: 2, at: PublisherTests.moment(41)) == .seconds(560))
        #expect(p.reducedReportDue(of: 1, at: PublisherTests.moment(601)) == .zero)
    }

    @Test("a client whose rule allows full but that asked for reduced is sent reduced reports, paced",
          arguments: [AccuracyAuthorization.full, .reduced])
    func requestedAccuracyCapsDeliveries(requested: AccuracyAuthorization) {
        var p = PublisherTests.publisher()
        p.connect(1, identity: PublisherTests.navit)
        p.changeSession(of: 1) { $0 = $0.asking(.authorize(.once, requested)) }
        let state = p.authorization(of: 1, at: PublisherTests.moment(0))
        #expect(state.status == .authorizedPersistent && state.accuracy == requested)
        _ = p.startWatching(1, minInterval: .zero, distanceFilter: 0, state: state, at: PublisherTests.moment(0))
        var out: [Delivery] = []
        for (i, fix) in PublisherTests.positioned.prefix(10).enumerated() {
            p.publish(fix, at: PublisherTests.moment(Double(i + 1)), into: &out)
        }
        let reports = PublisherTests.reports(out)
        #expect(reports.allSatisfy { $0.accuracy == requested })
        #expect(reports.count == (requested == .full ? 10 : 1))
        // A later AUTHORIZE for full: the rule's full accuracy again, from the next fix on.
        out.removeAll()
        p.changeSession(of: 1) { $0 = $0.asking(.authorize(.once, .full)) }
        p.publish(PublisherTests.positioned[10], at: PublisherTests.moment(11), into: &out)
        #expect(PublisherTests.reports(out).map(\.accuracy) == [.full])
    }

    @Test("the ERROR of a reduced POLL without a report says when the next is due, in words and in nextReportIn",
          arguments: [
              (Duration.seconds(900), "no fix yet; at reduced accuracy the next report is due in 15 min 0 s", 900.0),
              (.milliseconds(722_100), "no fix yet; at reduced accuracy the next report is due in 12 min 3 s", 723),
              (.zero, "no fix yet; at reduced accuracy the next report is due now, with the next fix", 0),
          ])
    func noFixErrorText(wait: Duration, message: String, seconds: Double) {
        let line = String(decoding: ServerState.pacedPollError("no fix yet; at reduced accuracy the next report is due", wait: wait), as: UTF8.self)
        #expect(line == #"{"class":"ERROR","request":"POLL","message":"\#(message)","nextReportIn":\#(Int(seconds))}"# + "\n")
    }
}
