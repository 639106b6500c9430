import LocationCore
import LocationPolicy
import Testing
@testable import LocationServer

/// Issue 12, "Wrong results a new user hit", in the pure parts: the accuracy a client asked for caps what
/// the Publisher sends it; a reduced client can be told when its next paced report is due, and that time
/// depends on nothing but the clock and when the one cadence's slots were used (`ReducedPacing`).
@Suite("Publisher: requested accuracy and the pacing's due time")
struct PacedPollTests {
    static let start = ContinuousClock.now

    /// A pacing whose grid starts at `start`, read at `seconds` after it.
    static func at(_ seconds: Double) -> ContinuousClock.Instant { start + .seconds(seconds) }

    @Test("one grid for everyone: a report uses its slot; the next is due at the next slot, at least interval − 1 s later",
          arguments: [
              (nil as Double?, 0.0, 0.0),        // nothing yet: due
              (nil, 1234, 0),
              (0, 0, 900),                       // a report at the slot's start: the next slot
              (0, 1, 899),
              (0, 900, 0),                       // due exactly then
              (0, 5000, 0),                      // slot 5, unused
              (10, 11, 898),                     // late in slot 0: slot 1 from 900, and 899 s after it: 909
              (450, 451, 898),                   // mid-slot (a first report nobody had used the slot for): 1349
              (450, 1349, 0),
          ])
    func slots(reportAt: Double?, queriedAt: Double, expected: Double) {
        var pacing = ReducedPacing(epoch: Self.start)
        if let reportAt { pacing.record(report: 1, now: Self.at(reportAt), interval: .seconds(900)) }
        let wait = pacing.timeUntilDue(now: Self.at(queriedAt), interval: .seconds(900))
        #expect(wait == .seconds(expected))
        #expect(pacing.isDue(now: Self.at(queriedAt), interval: .seconds(900)) == (expected == 0))
        // The same report again is allowed within its slot, another not.
        if let reportAt, expected > 0, pacing.slot(at: Self.at(queriedAt), interval: .seconds(900)) == pacing.slot(at: Self.at(reportAt), interval: .seconds(900)) {
            #expect(pacing.allows(report: 1, now: Self.at(queriedAt), interval: .seconds(900)))
            #expect(!pacing.allows(report: 2, now: Self.at(queriedAt), interval: .seconds(900)))
        }
    }

    @Test("three users asking 10 s apart get no more distinct reports than one (issue 32, finding 4)")
    func severalUsersOneCadence() {
        // Before: pacing per uid — uids started 10 s apart with reduced-interval 30 s had a fresh report every 10 s.
        var pacing = ReducedPacing(epoch: Self.start)
        var given: [(at: Double, report: UInt64)] = []
        var serial: UInt64 = 0
        for second in 0..<300 {
            serial += 1                                         // a fix a second
            let now = Self.at(Double(second))
            // uid 1 from 0 s, uid 2 from 10 s, uid 3 from 20 s, each watching: each asks at every fix.
            for uid in 1...3 where second >= (uid - 1) * 10 {
                guard pacing.allows(report: serial, now: now, interval: .seconds(30)) else { continue }
                pacing.record(report: serial, now: now, interval: .seconds(30))
                if given.last?.report != serial { given.append((Double(second), serial)) }
            }
        }
        let gaps = zip(given, given.dropFirst()).map { $1.at - $0.at }
        #expect(given.count == 10 && gaps.allSatisfy { $0 == 30 }, "\(given)")
        // A notice uses its slot too: the fix back 1 s later shows at the next slot only.
        var noticed = ReducedPacing(epoch: Self.start)
        noticed.record(report: 1, now: Self.at(0.5), interval: .seconds(30))
        noticed.recordNotice(now: Self.at(30.2), interval: .seconds(30))
        #expect(!noticed.allows(report: 7, now: Self.at(31.2), interval: .seconds(30)))
        // Exact instants (a `Duration` from 31.2 as a Double is 31.1999…): the wait is the next slot's start, to the ns.
        let regained = Self.start + .milliseconds(31_200)
        #expect(noticed.timeUntilDue(now: regained, interval: .seconds(30)) == .milliseconds(28_800))
    }

    @Test("a reload's new reduced-interval reads the used slot right; the slack is a tenth of the interval, at most 1 s")
    func intervalChangeAndSlack() {
        // Used at 100 s on a 30 s grid, read on a 900 s grid: slot 0 is used, the next report due at 999 (900 s − 1 s
        // after it), not held until "slot 3" of the new grid (2700 s), as a slot number kept across the change was.
        var raised = ReducedPacing(epoch: Self.start)
        raised.record(report: 1, now: Self.at(100), interval: .seconds(30))
        #expect(raised.timeUntilDue(now: Self.at(200), interval: .seconds(900)) == .seconds(799))
        #expect(raised.isDue(now: Self.at(999), interval: .seconds(900)))
        // The other way: used at 100 on a 900 s grid, read on a 30 s grid at 200: slot 6 (180–210) is free.
        var lowered = ReducedPacing(epoch: Self.start)
        lowered.record(report: 1, now: Self.at(100), interval: .seconds(900))
        #expect(lowered.isDue(now: Self.at(200), interval: .seconds(30)))
        // The slack: 1 s at 900 s; a tenth of a 2 s cadence — a report late in slot 0 (1.5 s), the next 1.8 s after
        // it (not 1 s), at 3.3 s in slot 1.
        #expect(ReducedPacing.slack(for: .seconds(900)) == .seconds(1))
        var fast = ReducedPacing(epoch: Self.start)
        fast.record(report: 1, now: Self.at(1.5), interval: .seconds(2))
        #expect(fast.timeUntilDue(now: Self.at(1.5), interval: .seconds(2)) == .milliseconds(1800))
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
        // The next slot starts at 600 (the grid's start is `PublisherTests.start`), which is also 600 − 1 s slack after
        // the report at 1: due in 599 s, whatever the fix does meanwhile.
        #expect(p.reducedReportDue(of: 1, at: PublisherTests.moment(1)) == .seconds(599))
        for i in 2..<40 {
            let lost = afterwards == .noFix || (afterwards == .alternating && i % 2 == 0)
            p.publish(lost ? PublisherTests.fixes[0] : PublisherTests.positioned[i], at: PublisherTests.moment(Double(i)), into: &out)
        }
        #expect(p.reducedReportDue(of: 1, at: PublisherTests.moment(41)) == .seconds(559))
        // Any connection, of this user or another, waits as long: there is one cadence.
        p.connect(2, identity: PublisherTests.stranger)
        #expect(p.reducedReportDue(of: 2, at: PublisherTests.moment(41)) == .seconds(559))
        #expect(p.reducedReportDue(of: 1, at: PublisherTests.moment(599.5)) == .milliseconds(500))
        #expect(p.reducedReportDue(of: 1, at: PublisherTests.moment(600)) == .zero)
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
