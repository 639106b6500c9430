import LocationCore
import LocationPolicy
import Testing
@testable import LocationServer

/// A reduced client learns when the fix was lost or came back only at moments of its cadence, however it
/// watches or polls (docs/SECURITY.md "Timing"). Each test is an attack a helper made on the daemon.
@Suite("Reduced accuracy: fix loss and regain on the cadence")
struct ReducedRegainTests {
    typealias P = PublisherTests

    @Test("a reduced client does not learn when the fix came back: after the loss notice, its report waits for the notice's cadence")
    func reducedRegainIsOnTheCadence() {
        // Found by a helper attacking the daemon as uid 1 (reduced, reduced-interval 15 s): after the loss notice, the
        // first fix after the receiver regained it went out at once, within 1–10 ms of the epoch, whenever that was.
        var p = P.publisher(P.rules(reducedInterval: 10))
        _ = P.watch(&p, 1, P.weather, at: P.moment(0))
        var sent: [Double] = [], told: [Double] = []
        func publish(_ fix: Fix, at t: Double) {
            var out: [Delivery] = []
            p.publish(fix, at: P.moment(t), into: &out)
            if !P.reports(out).isEmpty { sent.append(t) }
            for case .fixState(1, false) in out { told.append(t) }
        }
        publish(P.positioned[0], at: 1)
        for t in 2...14 { publish(P.fixes[0], at: Double(t)) }   // lost; told when due, at 11
        // Back at 14.4: nothing until 21 (ten seconds after the notice), then the first fix after it.
        for (i, t) in stride(from: 14.4, through: 24, by: 1).enumerated() { publish(P.positioned[i + 1], at: t) }
        #expect(told == [11] && sent == [1, 21.4], "told \(told), sent \(sent)")
        // Lost again: told at the first no-fix epoch once due (31.4), at 32; back 0.5 s after 42, in that moment's
        // window (2.5 s): that moment's report, at the fix.
        for t in 25...42 { publish(P.fixes[0], at: Double(t)) }
        publish(P.positioned[20], at: 42.5)
        #expect(told == [11, 32] && sent == [1, 21.4, 42.5], "told \(told), sent \(sent)")
        // A report puts the cadence back to an interval after it: the POLL's wait says 9.5 s at 43.
        let due = p.reducedReportDue(of: 1, at: P.moment(43))
        #expect(due > .milliseconds(9499) && due < .milliseconds(9501), "\(due)")
    }

    @Test("a reduced client polling with short timeouts does not learn when the fix came back either")
    func reducedPollProbe() throws {
        // The same helper: after the due time, POLLs with a 0.3 s timeout answered "no fix" until the fix came back,
        // then the report — the regain to within the timeout. A POLL that timed out is a loss notice now.
        var p = P.publisher(P.rules(reducedInterval: 10))
        p.connect(1, identity: P.weather)
        var out: [Delivery] = []
        let first = p.addPoll(1, at: P.moment(0))
        #expect(first != nil)
        p.publish(P.positioned[0], at: P.moment(1), into: &out)     // answered: the cadence starts at 1
        #expect(out.contains { if case .pollReply(1, .reduced) = $0 { true } else { false } })
        for t in 2...12 { p.publish(P.fixes[0], at: P.moment(Double(t)), into: &out) }
        let probe = p.addPoll(1, at: P.moment(12))                 // due (11), no fix: a notice at once
        #expect(p.expirePoll(try #require(probe), of: 1, at: P.moment(12.3)))
        // The fix is back at 13: nothing answers a POLL until ten seconds after that notice.
        out.removeAll()
        #expect(p.reducedReportDue(of: 1, at: P.moment(13)) >= .seconds(9))
        let waiting = p.addPoll(1, at: P.moment(13))
        #expect(waiting != nil)
        for t in 13...21 { p.publish(P.positioned[t], at: P.moment(Double(t)), into: &out) }
        #expect(!out.contains { if case .pollReply = $0 { true } else { false } }, "\(out)")
        p.publish(P.positioned[22], at: P.moment(22.4), into: &out)
        #expect(out.contains { if case .pollReply(1, .reduced) = $0 { true } else { false } })
    }

    /// A reduced user's report is due from 11 (interval 10, its first at 1); the fix is lost from 2 (or `lost` never).
    static func dueUser(lost: Bool) -> Publisher {
        var p = P.publisher(P.rules(reducedInterval: 10))
        p.connect(1, identity: P.weather)
        var out: [Delivery] = []
        _ = p.addPoll(1, at: P.moment(0))
        p.publish(P.positioned[0], at: P.moment(1), into: &out)
        for t in 2...11 { p.publish(lost ? P.fixes[0] : P.positioned[t], at: P.moment(Double(t)), into: &out) }
        return p
    }

    @Test("a POLL shorter than an epoch does not probe the fix: timed out while due, it is a notice with or without one")
    func subEpochProbe() throws {
        // Found 2026-12-03 by a helper as uid nobody (reduced-interval 60 s, a 1 Hz receiver): due, with a fix, POLLs
        // with a 0.05 s timeout between epochs timed out and left it due, while without a fix one was a notice; so
        // POLLing once a second told it the second the fix was lost, at no cost.
        for lost in [false, true] {
            var p = Self.dueUser(lost: lost)
            let probe = p.addPoll(1, at: P.moment(11.5))
            let expired = p.expirePoll(try #require(probe), of: 1, at: P.moment(11.55))
            #expect(expired)
            // Not due any more either way: with a fix from the timeout, without one from the POLL itself.
            #expect(p.reducedReportDue(of: 1, at: P.moment(12)) > .seconds(9), "lost: \(lost)")
        }
        // And the wait a reduced POLL gets covers the next epoch: the window after the due time.
        let p = Self.dueUser(lost: false)
        #expect(p.reducedPollWait(of: 1, at: P.moment(11.5)) == ReducedPacing.window)
        #expect(p.reducedPollWait(of: 1, at: P.moment(5)) == .seconds(6) + ReducedPacing.window)
    }

    @Test("staggered POLLs do not place the notice")
    func staggeredPolls() throws {
        // Found 2026-12-03 by the same helper: 64 POLLs with timeouts 0.5 s apart, each timing out during the no-fix
        // stretch a notice, moved the cadence to the last one before the fix came back — the regain to 0.5 s.
        var p = Self.dueUser(lost: true)
        var polls: [Int] = []
        for _ in 0..<16 { if let poll = p.addPoll(1, at: P.moment(11.5)) { polls.append(poll) } }
        #expect(polls.count == 16)
        var out: [Delivery] = [], next = 0
        for second in 12...20 {
            while next < polls.count, 11.6 + 0.5 * Double(next) < Double(second) {   // timeouts at 11.6, 12.1, … 19.1
                _ = p.expirePoll(polls[next], of: 1, at: P.moment(11.6 + 0.5 * Double(next)))
                next += 1
            }
            p.publish(second < 15 ? P.fixes[0] : P.positioned[second], at: P.moment(Double(second)), into: &out)
        }
        // The fix came back at 15; the cadence runs from the first POLL (11.5, due without a fix), whatever the others did.
        let due = p.reducedReportDue(of: 1, at: P.moment(20))
        #expect(due > .milliseconds(1499) && due < .milliseconds(1501), "\(due)")
        #expect(!out.contains { if case .pollReply = $0 { true } else { false } }, "\(out)")
    }

    @Test("a POLL dropped before its timeout is no free look at the fix: due without one, it is a notice when asked")
    func hungUpPoll() throws {
        // Found 2026-12-03 by an attacker helper as uid nobody (reduced-interval 20 s): due, and no fix, a POLL on a new
        // connection hung up after 1.1 s left no notice; one such probe a second told it the second the fix came back.
        var p = Self.dueUser(lost: true)
        p.connect(2, identity: P.weather)
        let probe = p.addPoll(2, at: P.moment(20.3))
        #expect(probe != nil)
        p.disconnect(2)
        var out: [Delivery] = []
        for t in 21...28 { p.publish(t < 27 ? P.fixes[0] : P.positioned[t], at: P.moment(Double(t)), into: &out) }
        // The fix is back at 27; the next POLL is refused until the cadence from 20.3 says so.
        p.connect(3, identity: P.weather)
        let due = p.reducedReportDue(of: 3, at: P.moment(28))
        #expect(due > .milliseconds(2299) && due < .milliseconds(2301), "\(due)")
        #expect(!out.contains { if case .pollReply = $0 { true } else { false } })
    }
}
