import LocationCore
import Testing
@testable import LocationServer

/// A fix whose turn reads an earlier time than a WATCH that ran just before it. Found by the soak: 1 of
/// 1,038,781 due fixes skipped (uid 2008 got epoch 127 with its WATCH's acknowledgement, then 129). The
/// receiver's thread read the time, then waited for the lock while the WATCH's turn ran with a later time;
/// the fix then failed the new watcher's interval filter (`now - lastAt < minInterval`: negative < 0).
@Suite("Turns whose times cross")
struct TurnOrderTests {
    typealias P = PublisherTests

    @Test("a watcher without minInterval gets the next fix even when its time reads before the WATCH's")
    func fixBeforeWatch() {
        var p = P.publisher()
        var out: [Delivery] = []
        p.publish(P.positioned[0], at: P.moment(1), into: &out)
        let watched = P.watch(&p, 1, P.navit, at: P.moment(1.0006))
        #expect(P.reports(watched).map(\.id) == [1], "the latest fix with the WATCH")
        out.removeAll()
        p.publish(P.positioned[1], at: P.moment(1.0005), into: &out)
        #expect(P.reports(out).map(\.id) == [1], "the next fix, whatever its turn's time")
    }

    @Test("minInterval still holds a report back, and one whose time reads earlier too")
    func intervalStillHolds() {
        var filter = DeliveryFilter(minInterval: .seconds(2))
        var admitted: [Bool] = []
        for seconds in [10, 11, 9, 12] as [Int64] { admitted.append(filter.admit(nil, now: .seconds(seconds))) }
        #expect(admitted == [true, false, false, true])
    }
}
