import LocationCore
import LocationPosix
import LocationPolicy
import LocationWire
import Testing
@testable import LocationServer

/// Uplinks as subscribers of the Publisher (issue 17): reduced means the very fix a reduced client gets,
/// on the same pacing; full goes through the uplink's filters; the first delivery is audited.
@Suite("Publisher: uplinks")
struct PublisherUplinkTests {
    /// What a sink received, in order.
    final class Received: Sendable {
        let fixes = Locked<[(Fix, AccuracyAuthorization)]>([])
        var sink: UplinkSink { { fix, accuracy in self.fixes.withLock { $0.append((fix, accuracy)) } } }
        var all: [(Fix, AccuracyAuthorization)] { fixes.withLock { $0 } }
    }

    /// The daemon, as the policy sees an uplink (`ClientIdentity.ofDaemon()` in the real daemon).
    static let daemon = ClientIdentity(pid: 100, uid: 0, gid: 0, user: "root", executable: "/usr/sbin/locationd", unit: "locationd.service")

    /// `PublisherTests.rules()`, plus a rule for the daemon's uplinks at `uplinkAccuracy`.
    static func rules(uplinkAccuracy: AccuracyAuthorization? = .full, access: AccessRule = .always, reducedInterval: Double = 900) -> PolicyRules {
        var rules = PublisherTests.rules(reducedInterval: reducedInterval)
        if let uplinkAccuracy {
            rules.clients.append(ClientRule(name: "uplinks", executable: "/usr/sbin/locationd", access: access, accuracy: uplinkAccuracy))
        }
        return rules
    }

    static func subscription(_ name: String, _ accuracy: AccuracyAuthorization, minInterval: Duration = .zero) -> UplinkSubscription {
        UplinkSubscription(name: name, broker: "mqtt://b:1883", topic: "t", format: "owntracks", accuracy: accuracy,
                           minInterval: minInterval, distanceFilter: 0)
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
        p.addUplink(Self.subscription("fleet", .reduced), identity: Self.daemon, sink: uplink.sink)
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
        var p = PublisherTests.publisher(Self.rules())
        let every = Received(), sparse = Received()
        p.addUplink(Self.subscription("all", .full), identity: Self.daemon, sink: every.sink)
        p.addUplink(Self.subscription("sparse", .full, minInterval: .seconds(10)), identity: Self.daemon, sink: sparse.sink)
        let deliveries = Self.run(&p)
        #expect(every.all.map(\.0) == PublisherTests.positioned)
        #expect(sparse.all.count == (PublisherTests.positioned.count + 9) / 10)
        let audits = deliveries.compactMap { if case .audit(let e) = $0, e.event == "delivery" { return e } else { return nil } }
        #expect(audits.count == 2)
        #expect(audits.map(\.name) == ["uplink all", "uplink sparse"])
        #expect(audits.allSatisfy { $0.reason.contains("first delivery") && $0.accuracy == .full })
    }

    @Test("an uplink asking full under a [policy] default of reduced gets the reduced fix, paced; GRANTS says so and why")
    func cappedByTheDefault() {
        var p = PublisherTests.publisher(Self.rules(uplinkAccuracy: nil, reducedInterval: 10))
        let uplink = Received()
        p.addUplink(Self.subscription("fleet", .full), identity: Self.daemon, sink: uplink.sink)
        let deliveries = Self.run(&p)
        let sent = uplink.all
        #expect(sent.count >= 3 && sent.count <= PublisherTests.positioned.count / 10 + 1, "\(sent.count) reports")
        #expect(sent.allSatisfy { $0.1 == .reduced && $0.0.speed == nil && ($0.0.eph ?? 0) >= 2000 })
        let grants = p.uplinkGrants(at: 0)
        #expect(grants == [ServerMessage.Grants.Uplink(name: "fleet", broker: "mqtt://b:1883", topic: "t", format: "owntracks", accuracy: .reduced,
                                                       requested: .full, sharing: true,
                                                       reason: "[policy] default allows no more than reduced accuracy")])
        let decisions = deliveries.compactMap { if case .audit(let e) = $0, e.event == "decision" { return e } else { return nil } }
        #expect(decisions.map(\.accuracy) == [.reduced])
    }

    @Test("a [client] rule matching the daemon's executable caps, raises or denies its uplinks; a reload's new rule applies at the next fix")
    func ruleForTheDaemon() {
        var p = PublisherTests.publisher(Self.rules(uplinkAccuracy: .full))
        let uplink = Received()
        p.addUplink(Self.subscription("fleet", .full), identity: Self.daemon, sink: uplink.sink)
        var out: [Delivery] = []
        p.publish(PublisherTests.positioned[0], at: PublisherTests.moment(1), into: &out)
        for handOff in p.publishUplinks(at: PublisherTests.moment(1), into: &out) { handOff.sink(handOff.fix, handOff.accuracy) }
        #expect(uplink.all.map(\.1) == [.full])
        _ = p.replaceRules(Self.rules(uplinkAccuracy: .full, access: .deny), fudger: nil, at: PublisherTests.moment(1.5))
        for (i, fix) in PublisherTests.positioned.enumerated().dropFirst() {
            p.publish(fix, at: PublisherTests.moment(Double(i + 1)), into: &out)
            for handOff in p.publishUplinks(at: PublisherTests.moment(Double(i + 1)), into: &out) { handOff.sink(handOff.fix, handOff.accuracy) }
        }
        #expect(uplink.all.count == 1, "a denied uplink got \(uplink.all.count - 1) more reports")
        #expect(p.uplinkGrants(at: 0).first?.accuracy == nil)
        #expect(p.uplinkGrants(at: 0).first?.reason == "rule [client uplinks] denies access: nothing is published")
        let decisions = out.compactMap { if case .audit(let e) = $0, e.event == "decision" { return e.status } else { return nil } }
        #expect(decisions == ["authorizedPersistent", "restricted"])
    }
}
