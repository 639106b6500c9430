import LocationCore
import LocationPolicy
import Testing
@testable import LocationServer

/// All of a user's reduced clients share one cadence and get the same reports (docs/PROTOCOL.md). Found by
/// `Scripts/soak`: a WATCH arriving when the user's next report was due got a fresh report alone; the
/// user's other connections never got it (the next fix was another report, held for a whole interval) —
/// 265 of 1806 reports due to reduced clients in a 60 s soak went missing this way.
@Suite("Reduced cadence")
struct ReducedCadenceTests {
    @Test("a WATCH that starts the user's next interval gives that report to all of the user's reduced clients")
    func watchStartsIntervalForAll() {
        // weather: always, reduced; reduced-interval 5 s; a fix a second.
        var p = PublisherTests.publisher(PublisherTests.rules(reducedInterval: 5))
        let fixes = PublisherTests.positioned
        var out: [Delivery] = []
        #expect(PublisherTests.reports(PublisherTests.watch(&p, 1, PublisherTests.weather, at: PublisherTests.moment(0))).isEmpty)
        p.publish(fixes[0], at: PublisherTests.moment(1), into: &out)
        #expect(PublisherTests.reports(out).map(\.id) == [1])
        _ = PublisherTests.watch(&p, 2, PublisherTests.weather, at: PublisherTests.moment(1.5))
        for second in 2...6 {
            out.removeAll()
            p.publish(fixes[second - 1], at: PublisherTests.moment(Double(second)), into: &out)
            // 6 s: the interval has passed; both get the report of that fix.
            #expect(PublisherTests.reports(out).map(\.id).sorted() == (second == 6 ? [1, 2] : []))
        }
        // At 17 s a fix is held (within the interval); at 21.7 s, between two fixes, the interval has passed:
        // a third connection's WATCH starts the next one with that fix's report, and it goes to all three.
        out.removeAll()
        p.publish(fixes[10], at: PublisherTests.moment(11), into: &out)
        #expect(PublisherTests.reports(out).map(\.id).sorted() == [1, 2])
        out.removeAll()
        p.publish(fixes[11], at: PublisherTests.moment(16.6), into: &out)
        #expect(PublisherTests.reports(out).map(\.id).sorted() == [1, 2])
        out.removeAll()
        p.publish(fixes[12], at: PublisherTests.moment(17), into: &out)
        #expect(PublisherTests.reports(out).isEmpty)
        let third = PublisherTests.watch(&p, 3, PublisherTests.weather, at: PublisherTests.moment(21.7))
        #expect(PublisherTests.reports(third).map(\.id).sorted() == [1, 2, 3])
        // No duplicate: the next fix, within the interval, goes to nobody; the first after it to all three.
        out.removeAll()
        p.publish(fixes[13], at: PublisherTests.moment(22), into: &out)
        #expect(PublisherTests.reports(out).isEmpty)
        out.removeAll()
        p.publish(fixes[14], at: PublisherTests.moment(27), into: &out)
        #expect(PublisherTests.reports(out).map(\.id).sorted() == [1, 2, 3])
    }

    @Test("a second connection given the report the user already has starts nothing and duplicates nothing")
    func resendIsNotShared() {
        var p = PublisherTests.publisher(PublisherTests.rules(reducedInterval: 5))
        var out: [Delivery] = []
        _ = PublisherTests.watch(&p, 1, PublisherTests.weather, at: PublisherTests.moment(0))
        p.publish(PublisherTests.positioned[0], at: PublisherTests.moment(1), into: &out)
        #expect(PublisherTests.reports(PublisherTests.watch(&p, 2, PublisherTests.weather, at: PublisherTests.moment(7))).map(\.id) == [2])
    }
}
