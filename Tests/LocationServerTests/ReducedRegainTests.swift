import LocationCore
import LocationPolicy
import Testing
@testable import LocationServer

/// A reduced client learns when the fix was lost or came back only at moments of the one cadence (slots of the grid,
/// `ReducedPacing`), however it watches or polls (docs/SECURITY.md "Timing"). Each test is an attack a helper made.
@Suite("Reduced accuracy: fix loss and regain on the cadence")
struct ReducedRegainTests {
    typealias P = PublisherTests

    @Test("a reduced client does not learn when the fix came back: after the loss notice, its report waits for the next slot",
          arguments: [10, 14, 19])
    func reducedRegainIsOnTheCadence(regainedSecond: Int) {
        // Found by a helper attacking the daemon as uid 1 (reduced, reduced-interval 15 s): after the loss notice, the
        // first fix after the receiver regained it went out at once, within 1–10 ms of the epoch, whenever that was.
        // Slots of the one grid start at 0, 10, 20, … (reduced-interval 10 s).
        var p = P.publisher(P.rules(reducedInterval: 10))
        _ = P.watch(&p, 1, P.weather, at: P.moment(0))
        var sent: [Double] = [], told: [Double] = []
        func publish(_ fix: Fix, at t: Double) {
            var out: [Delivery] = []
            p.publish(fix, at: P.moment(t), into: &out)
            if !P.reports(out).isEmpty { sent.append(t) }
            for case .silence(1, .noFix) in out { told.append(t) }   // a reduced client's loss notice (`SilenceTests`)
        }
        publish(P.positioned[0], at: 1)
        for t in 2...regainedSecond { publish(P.fixes[0], at: Double(t)) }   // lost; told when due, at 10
        // Back 0.4 s after `regainedSecond`: nothing until slot 2's first fix (20.4), wherever in slot 1 it came back.
        for t in regainedSecond...24 { publish(P.positioned[t - regainedSecond + 1], at: Double(t) + 0.4) }
        #expect(told == [10] && sent == [1, 20.4], "told \(told), sent \(sent)")
        // Lost again: told at slot 3 (30). Slot 4 (40) is a notice too, told nothing new but used: the fix back at 42.5
        // shows at slot 5 (50), not at once.
        for t in 25...42 { publish(P.fixes[0], at: Double(t)) }
        publish(P.positioned[20], at: 42.5)
        for t in 43...50 { publish(P.positioned[t - 22], at: Double(t)) }
        #expect(told == [10, 30] && sent == [1, 20.4, 50], "told \(told), sent \(sent)")
        // A report uses its slot: the POLL's wait says 9 s at 51 (slot 6, at 60).
        #expect(p.reducedReportDue(of: 1, at: P.moment(51)) == .seconds(9))
    }

    @Test("a reduced client polling with short timeouts does not learn when the fix came back either")
    func reducedPollProbe() throws {
        // The same helper: after the due time, POLLs with a 0.3 s timeout answered "no fix" until the fix came back,
        // then the report — the regain to within the timeout. A POLL due without a fix is a loss notice, using the slot.
        var p = P.publisher(P.rules(reducedInterval: 10))
        p.connect(1, identity: P.weather)
        var out: [Delivery] = []
        let first = p.addPoll(1, at: P.moment(0))
        #expect(first != nil)
        p.publish(P.positioned[0], at: P.moment(1), into: &out)     // answered: slot 0
        #expect(out.contains { if case .pollReply(1, .reduced) = $0 { true } else { false } })
        for t in 2...12 { p.publish(P.fixes[0], at: P.moment(Double(t)), into: &out) }
        let probe = p.addPoll(1, at: P.moment(12))                 // due (slot 1), no fix: a notice at once
        #expect(p.expirePoll(try #require(probe), of: 1, at: P.moment(12.3)))
        // The fix is back at 13: nothing answers a POLL until slot 2 starts, at 20.
        out.removeAll()
        #expect(p.reducedReportDue(of: 1, at: P.moment(13)) == .seconds(7))
        let waiting = p.addPoll(1, at: P.moment(13))
        #expect(waiting != nil)
        for t in 13...19 { p.publish(P.positioned[t], at: P.moment(Double(t)), into: &out) }
        #expect(!out.contains { if case .pollReply = $0 { true } else { false } }, "\(out)")
        p.publish(P.positioned[20], at: P.moment(20), into: &out)
        #expect(out.contains { if case .pollReply(1, .reduced) = $0 { true } else { false } })
    }

    /// A reduced report is due from 10 (interval 10: slot 1; the first at 1); the fix is lost from 2 (or `lost` never).
    /// Nobody wants a report at 10 (the POLL was answered), so slot 1 is still free at 11.
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
            // Slot 1 used either way (with a fix by the timeout, without one by the POLL itself): the same wait, to
            // slot 2.
            #expect(p.reducedReportDue(of: 1, at: P.moment(12)) == .seconds(8), "lost: \(lost)")
        }
        // And the wait a reduced POLL gets covers the next epoch: the window after the due time.
        let p = Self.dueUser(lost: false)
        #expect(p.reducedPollWait(of: 1, at: P.moment(11.5)) == ReducedPacing.window)
        #expect(p.reducedPollWait(of: 1, at: P.moment(5)) == .seconds(5) + ReducedPacing.window)
    }

    @Test("a POLL before the report is due places no notice: the due time is the same with a fix or without")
    func earlyPollIsNoNotice() throws {
        // A report late in slot 0 (9.5, the first) leaves slot 1 free but the next report due only at 18.5 (10 − 1 s
        // after it). A POLL at 12 without a fix was a notice in slot 1 (f271121): the report then waited for slot 2
        // (20), and came at 18.5 with a fix at 12 — the fix's state at a moment of the client's choosing.
        for lost in [false, true] {
            var p = P.publisher(P.rules(reducedInterval: 10))
            p.connect(1, identity: P.weather)
            var out: [Delivery] = []
            _ = p.addPoll(1, at: P.moment(9))
            p.publish(P.positioned[0], at: P.moment(9.5), into: &out)
            for t in 10...11 { p.publish(lost ? P.fixes[0] : P.positioned[t], at: P.moment(Double(t)), into: &out) }
            let probe = p.addPoll(1, at: P.moment(12))
            #expect(probe != nil)
            #expect(p.reducedReportDue(of: 1, at: P.moment(12.5)) == .seconds(6), "lost: \(lost)")
            out.removeAll()
            for t in 13...18 { p.publish(P.positioned[t], at: P.moment(Double(t) + 0.5), into: &out) }
            let replies = out.filter { if case .pollReply = $0 { true } else { false } }
            #expect(replies.count == 1, "lost: \(lost)")
        }
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
        func expire(before t: Double) {
            while next < polls.count, 11.6 + 0.5 * Double(next) < t {   // timeouts at 11.6, 12.1, … 19.1
                _ = p.expirePoll(polls[next], of: 1, at: P.moment(11.6 + 0.5 * Double(next)))
                next += 1
            }
        }
        for second in 12...19 {
            expire(before: Double(second))
            p.publish(second < 15 ? P.fixes[0] : P.positioned[second], at: P.moment(Double(second)), into: &out)
        }
        expire(before: 19.5)
        // The fix came back at 15; the first POLL (11.5, due without a fix) used slot 1, whatever the others did: the
        // next report is due at slot 2 (20), and no POLL was answered before.
        #expect(p.reducedReportDue(of: 1, at: P.moment(19.5)) == .milliseconds(500))
        #expect(!out.contains { if case .pollReply = $0 { true } else { false } }, "\(out)")
        let last = p.addPoll(1, at: P.moment(19.5))
        #expect(last != nil)
        p.publish(P.positioned[20], at: P.moment(20), into: &out)
        #expect(out.contains { if case .pollReply(1, .reduced) = $0 { true } else { false } })
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
        // The fix is back at 27; the POLL at 20.3 used slot 2, so the next is refused until slot 3 (30).
        p.connect(3, identity: P.weather)
        #expect(p.reducedReportDue(of: 3, at: P.moment(28)) == .seconds(2))
        #expect(!out.contains { if case .pollReply = $0 { true } else { false } })
    }
}
