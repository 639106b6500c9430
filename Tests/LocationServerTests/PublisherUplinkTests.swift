import LocationCore
import LocationPolicy
import LocationWire
import Synchronization
import Testing
@testable import LocationServer

/// Uplinks as subscribers of the Publisher (issue 17): reduced means the very fix a reduced client gets,
/// on the same pacing; full goes through the uplink's filters; the first delivery is audited.
@Suite("Publisher: uplinks")
struct PublisherUplinkTests {
    /// What a sink received, in order.
    final class Received: Sendable {
        let fixes = Mutex<[(Fix, AccuracyAuthorization)]>([])
        var sink: UplinkSink { { fix, accuracy in self.fixes.withLock { $0.append((fix, accuracy)) } } }
        var all: [(Fix, AccuracyAuthorization)] { fixes.withLock { $0 } }
    }

    static func run(_ p: inout Publisher, seconds: Double = 1) -> [Delivery] {
        var all: [Delivery] = []
        for (i, fix) in PublisherTests.positioned.enumerated() {
            var out: [Delivery] = []
            let now = PublisherTests.moment(Double(i + 1) * seconds)
            p.publish(fix, at: now, into: &out)
            for handOff in p.publishUplinks(at: now, into: &out) { handOff.sink(handOff.fix, handOff.accuracy) }
            all += out
        }
        return all
    }

    @Test("a reduced uplink gets the fudged fix a reduced client gets, at the same reports, paced by reduced-interval")
    func reducedLikeAClient() throws {
        var p = PublisherTests.publisher(PublisherTests.rules(reducedInterval: 10))
        _ = PublisherTests.watch(&p, 2, PublisherTests.weather, at: PublisherTests.moment(0))
        let uplink = Received()
        p.addUplink(UplinkSubscription(name: "fleet", destination: "mqtt://b:1883 t", accuracy: .reduced, minInterval: .zero, distanceFilter: 0),
                    sink: uplink.sink)
        var clientFixes: [Fix] = []
        for (i, fix) in PublisherTests.positioned.enumerated() {
            var out: [Delivery] = []
            let now = PublisherTests.moment(Double(i + 1))
            p.publish(fix, at: now, into: &out)
            if PublisherTests.reports(out).contains(where: { $0.id == 2 }), let reduced = p.reportFix(.reduced) { clientFixes.append(reduced) }
            for handOff in p.publishUplinks(at: now, into: &out) { handOff.sink(handOff.fix, handOff.accuracy) }
        }
        let sent = uplink.all
        #expect(sent.count >= 3 && sent.count <= PublisherTests.positioned.count / 10 + 1, "\(sent.count) reports in \(PublisherTests.positioned.count) s")
        #expect(sent.allSatisfy { $0.1 == .reduced && $0.0.speed == nil && $0.0.altitudeMSL == nil && ($0.0.eph ?? 0) >= 2000 })
        #expect(sent.map(\.0) == clientFixes, "the uplink and the reduced client got different fixes")
    }

    @Test("a full uplink gets every fix, through min-interval; its first delivery is audited once, naming the uplink")
    func fullWithFilterAndAudit() {
        var p = PublisherTests.publisher()
        let every = Received(), sparse = Received()
        p.addUplink(UplinkSubscription(name: "all", destination: "d", accuracy: .full, minInterval: .zero, distanceFilter: 0), sink: every.sink)
        p.addUplink(UplinkSubscription(name: "sparse", destination: "d", accuracy: .full, minInterval: .seconds(10), distanceFilter: 0),
                    sink: sparse.sink)
        let deliveries = Self.run(&p)
        #expect(every.all.map(\.0) == PublisherTests.positioned)
        #expect(sparse.all.count == (PublisherTests.positioned.count + 9) / 10)
        let audits = deliveries.compactMap { if case .audit(let e) = $0 { return e } else { return nil } }
        #expect(audits.count == 2)
        #expect(audits.map(\.name) == ["uplink all", "uplink sparse"])
        #expect(audits.allSatisfy { $0.reason.contains("first delivery") && $0.accuracy == "full" })
    }
}
