import LocationCore
import LocationPolicy
import Testing
@testable import LocationServer

/// Every reduced client, of every user, shares one cadence and gets the same reports (docs/PROTOCOL.md, issue 32
/// finding 4). Found by `Scripts/soak`: a WATCH arriving when the next report was due got a fresh report alone; the
/// other connections never got it (the next fix was another report, held for a whole interval) — 265 of 1806
/// reports due to reduced clients in a 60 s soak went missing this way.
@Suite("Reduced cadence")
struct ReducedCadenceTests {
    typealias P = PublisherTests

    /// The weather program run by another user (uid 1001): the `weather` rule matches it too, reduced.
    static let otherUsersWeather: ClientIdentity = {
        var identity = P.weather
        identity.uid = 1001
        identity.gid = 1001
        identity.user = "bob"
        return identity
    }()

    @Test("a WATCH that starts the next slot gives that report to every reduced client, of every user")
    func watchStartsSlotForAll() {
        // weather: always, reduced; reduced-interval 5 s, so slots start at 0, 5, 10, …; a fix a second.
        var p = P.publisher(P.rules(reducedInterval: 5))
        let fixes = P.positioned
        var out: [Delivery] = []
        #expect(P.reports(P.watch(&p, 1, P.weather, at: P.moment(0))).isEmpty)
        p.publish(fixes[0], at: P.moment(1), into: &out)
        #expect(P.reports(out).map(\.id) == [1])
        // Another user joining in the same slot gets that report, not a new one.
        #expect(P.reports(P.watch(&p, 2, Self.otherUsersWeather, at: P.moment(1.5))).map(\.id) == [2])
        for second in 2...6 {
            out.removeAll()
            p.publish(fixes[second - 1], at: P.moment(Double(second)), into: &out)
            // 5 s: the next slot, but only 4.5 s (5 − 0.5 s slack) after the report at 1, which is at 5.5; at 6 both get
            // the report of that fix.
            #expect(P.reports(out).map(\.id).sorted() == (second == 6 ? [1, 2] : []), "at \(second)")
        }
        // 11 s and 16.6 s: the first fix of slots 2 and 3 goes to both; at 17 a fix is held (slot 3 is used). At 21.7
        // s, between two fixes, slot 4 is free: a third connection's WATCH uses it with the fix of 17, and it goes to
        // all three, both users.
        out.removeAll()
        p.publish(fixes[10], at: P.moment(11), into: &out)
        #expect(P.reports(out).map(\.id).sorted() == [1, 2])
        out.removeAll()
        p.publish(fixes[11], at: P.moment(16.6), into: &out)
        #expect(P.reports(out).map(\.id).sorted() == [1, 2])
        out.removeAll()
        p.publish(fixes[12], at: P.moment(17), into: &out)
        #expect(P.reports(out).isEmpty)
        let third = P.watch(&p, 3, P.weather, at: P.moment(21.7))
        #expect(P.reports(third).map(\.id).sorted() == [1, 2, 3])
        // No duplicate: the next fix, in the used slot, goes to nobody; the first of the next slot (and at least
        // 5 − 0.5 s after 21.7) to all three.
        out.removeAll()
        p.publish(fixes[13], at: P.moment(22), into: &out)
        #expect(P.reports(out).isEmpty)
        out.removeAll()
        p.publish(fixes[14], at: P.moment(25.5), into: &out)
        #expect(P.reports(out).isEmpty, "slot 5 has started, but 21.7 + 4.5 s has not passed")
        out.removeAll()
        p.publish(fixes[15], at: P.moment(26.5), into: &out)
        #expect(P.reports(out).map(\.id).sorted() == [1, 2, 3])
    }

    @Test("a connection given the report the others already have starts no slot and duplicates nothing, however late")
    func resendIsNotShared() {
        var p = P.publisher(P.rules(reducedInterval: 5))
        var out: [Delivery] = []
        _ = P.watch(&p, 1, P.weather, at: P.moment(0))
        p.publish(P.positioned[0], at: P.moment(1), into: &out)
        // At 7 slot 1 is free and due, but no fix came since 1: the new connection (another user) gets that report
        // alone, and slot 1 stays free for the next fix, which goes to both.
        #expect(P.reports(P.watch(&p, 2, Self.otherUsersWeather, at: P.moment(7))).map(\.id) == [2])
        out.removeAll()
        p.publish(P.positioned[1], at: P.moment(8), into: &out)
        #expect(P.reports(out).map(\.id).sorted() == [1, 2])
    }
}
