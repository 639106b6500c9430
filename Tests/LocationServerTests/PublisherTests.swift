import FoundationEssentials
import LocationCore
import LocationPolicy
import LocationWire
import NMEA
import Testing
@testable import LocationServer

/// The Publisher on its own: no sockets, no clock of its own — the fixes of the bundled Haicom capture
/// (gpsd's regression suite) at 1 Hz of monotonic time, and clients made from identities.
@Suite("Publisher")
struct PublisherTests {
    /// The capture's epochs in order, with and without a position (it starts without a fix).
    static let fixes: [Fix] = {
        guard let data = FileManager.default.contents(atPath: DaemonProcess.demoCapture) else { return [] }
        var filter = CaptureFilter()
        var bytes: [UInt8] = []
        [UInt8](data).withUnsafeBufferPointer { filter.filter($0, into: &bytes) }
        var decoder = NMEADecoder()
        var out: [Fix] = []
        decoder.decode(bytes) { out.append($0) }
        return out
    }()
    static var positioned: [Fix] { fixes.filter(\.hasPosition) }

    static let navit = ClientIdentity(pid: 100, uid: 1000, gid: 1000, user: "alice", executable: "/usr/bin/navit")
    static let weather = ClientIdentity(pid: 200, uid: 1000, gid: 1000, user: "alice", executable: "/usr/bin/weather")
    static let stranger = ClientIdentity(pid: 300, uid: 1001, gid: 1001, user: "mallory", executable: "/usr/bin/curl")

    /// navit: always, full; weather: always, reduced; everyone else: ask.
    static func rules(navitAccuracy: AccuracyAuthorization = .full, reducedInterval: Double = 900) -> PolicyRules {
        var defaults = PolicyDefaults()
        defaults.access = .ask
        defaults.reducedInterval = reducedInterval
        return PolicyRules(defaults: defaults, clients: [
            ClientRule(name: "navit", executable: "/usr/bin/navit", access: .always, accuracy: navitAccuracy),
            ClientRule(name: "weather", executable: "/usr/bin/weather", access: .always, accuracy: .reduced),
        ])
    }

    static func publisher(_ rules: PolicyRules = rules(), grants: GrantSet = GrantSet()) -> Publisher {
        Publisher(policy: PolicyState(rules: rules, grants: grants, adminGroup: "locationd-admin"),
                  fudger: LocationFudger(gridMeters: 2000, secret: Array(repeating: 7, count: 32), originHour: 0), reducedEpoch: start)
    }

    /// Second `i` of a run: monotonic from a fixed start, and the capture's day on the wall clock.
    static let start = ContinuousClock.now
    static func moment(_ seconds: Double) -> Moment {
        Moment(monotonic: start + .seconds(seconds), wall: 1_175_990_000 + seconds)
    }

    /// Connects and starts watching a client the rules authorize.
    static func watch(_ p: inout Publisher, _ id: Int, _ identity: ClientIdentity, minInterval: Duration = .zero,
                      distanceFilter: Double = 0, at now: Moment) -> [Delivery] {
        p.connect(id, identity: identity)
        let state = p.authorization(of: id, at: now)
        return p.startWatching(id, minInterval: minInterval, distanceFilter: distanceFilter, state: state, at: now)
    }

    static func reports(_ deliveries: [Delivery]) -> [(id: Int, accuracy: AccuracyAuthorization)] {
        deliveries.compactMap { if case let .report(id, accuracy) = $0 { return (id, accuracy) } else { return nil } }
    }

    @Test("clients leaving mid-stream: the rest keep their own reports and state (the table moves the last client into a freed slot)",
          arguments: [[2], [4], [1, 3], [1, 2, 3, 4]])
    func leavingMidStream(leaving: [Int]) {
        var p = Self.publisher()
        for id in 1...4 { _ = Self.watch(&p, id, id == 3 ? Self.weather : Self.navit, at: Self.moment(0)) }
        var out: [Delivery] = []
        p.publish(Self.positioned[0], at: Self.moment(1), into: &out)
        for id in leaving { p.disconnect(id) }
        _ = Self.watch(&p, 5, Self.navit, at: Self.moment(1.5))
        out.removeAll()
        p.publish(Self.positioned[1], at: Self.moment(2), into: &out)
        let staying = Set(1...4).subtracting(leaving)
        // navit (full) gets every fix; weather (reduced, id 3) had its one report per interval already.
        let expected = Set(staying.filter { $0 != 3 } + [5])
        #expect(Set(Self.reports(out).map(\.id)) == expected)
        #expect(Self.reports(out).allSatisfy { $0.accuracy == .full })
        #expect(Self.reports(out).count == expected.count, "one report each")
        #expect(p.subscribers.count == staying.count + 1)
        for id in staying.union([5]) { #expect(p.subscribers[id]?.id == id) }
        for id in leaving { #expect(p.subscribers[id] == nil) }
    }

    @Test("the capture has fixes without and with a position")
    func capture() {
        #expect(Self.fixes.count > 60)
        #expect(Self.fixes.first?.hasPosition == false)
        #expect(Self.positioned.count > 40)
    }

    @Test("each client gets the fix at the accuracy its rule allows; reduced is fudged, paced, without speed or altitude")
    func accuracyPerClient() throws {
        var p = Self.publisher()
        _ = Self.watch(&p, 1, Self.navit, at: Self.moment(0))
        _ = Self.watch(&p, 2, Self.weather, at: Self.moment(0))
        var out: [Delivery] = []
        var full = 0, reduced = 0
        for (i, fix) in Self.positioned.enumerated() {
            out.removeAll()
            p.publish(fix, at: Self.moment(Double(i + 1)), into: &out)
            for r in Self.reports(out) {
                if r.id == 1 { #expect(r.accuracy == .full); full += 1 }
                if r.id == 2 { #expect(r.accuracy == .reduced); reduced += 1 }
            }
            if i == 0 {
                // The capture's first position as gpsd decodes it (haicom-305N.log.chk: lat -27.210866667,
                // lon 153.052328333), in full; moved and snapped when reduced.
                let full = try JSONReader.read(p.reportBytes(.full))
                let reduced = try JSONReader.read(p.reportBytes(.reduced))
                let latitude = try #require(full["lat"]?.doubleValue)
                #expect(abs(latitude - -27.210866667) < 1e-9)
                #expect(abs((full["lon"]?.doubleValue ?? 0) - 153.052328333) < 1e-9)
                #expect(full["accuracy"] == .string("full"))
                #expect(reduced["accuracy"] == .string("reduced"))
                #expect(reduced["speed"] == nil && reduced["altMSL"] == nil && reduced["track"] == nil)
                let reducedLatitude = try #require(reduced["lat"]?.doubleValue)
                #expect(abs(reducedLatitude - latitude) > 1e-6)
                #expect(try #require(reduced["eph"]?.doubleValue) >= 2000)
            }
        }
        // Full: every fix; reduced: one per reduced-interval (900 s) — the run is shorter, so the first only.
        #expect(full == Self.positioned.count)
        #expect(reduced == 1)
    }

    @Test("reduced pacing counts per user: a second connection gets the same report, not a new one")
    func pacingPerProgram() {
        var p = Self.publisher()
        _ = Self.watch(&p, 1, Self.weather, at: Self.moment(0))
        var out: [Delivery] = []
        p.publish(Self.positioned[0], at: Self.moment(1), into: &out)
        #expect(Self.reports(out).map(\.id) == [1])
        // The same program connects again: the report it already had, and nothing newer until the
        // interval has passed, on either connection.
        out.removeAll()
        #expect(Self.reports(Self.watch(&p, 2, Self.weather, at: Self.moment(2))).map(\.id) == [2])
        p.publish(Self.positioned[1], at: Self.moment(3), into: &out)
        #expect(Self.reports(out).isEmpty)
        // …then one report to each connection, the same one.
        out.removeAll()
        p.publish(Self.positioned[2], at: Self.moment(901), into: &out)
        #expect(Self.reports(out).map(\.id).sorted() == [1, 2])
    }

    @Test("minInterval lets through at most one report per interval", arguments: [0.0, 2.0, 5.0])
    func minInterval(seconds: Double) {
        var p = Self.publisher()
        _ = Self.watch(&p, 1, Self.navit, minInterval: .seconds(seconds), at: Self.moment(0))
        var times: [Double] = []
        var out: [Delivery] = []
        for (i, fix) in Self.positioned.enumerated() {
            out.removeAll()
            let t = Double(i + 1)
            p.publish(fix, at: Self.moment(t), into: &out)
            if !Self.reports(out).isEmpty { times.append(t) }
        }
        let n = Double(Self.positioned.count)
        // 1 Hz: every ⌈interval⌉-th second (the first report at second 1).
        #expect(Double(times.count) == (seconds == 0 ? n : (n / seconds).rounded(.up)))
        for (a, b) in zip(times, times.dropFirst()) { #expect(b - a >= seconds) }
    }

    @Test("distanceFilter: each report is at least that far (m) from the last one delivered", arguments: [0.0, 1.0, 3.0])
    func distanceFilter(meters: Double) throws {
        var p = Self.publisher()
        _ = Self.watch(&p, 1, Self.navit, distanceFilter: meters, at: Self.moment(0))
        var delivered: [Fix] = []
        var out: [Delivery] = []
        for (i, fix) in Self.positioned.enumerated() {
            out.removeAll()
            p.publish(fix, at: Self.moment(Double(i + 1)), into: &out)
            if let last = delivered.last, Self.reports(out).isEmpty {
                // Held back: it was within the filter of the last delivered report.
                #expect(Self.distance(last, fix) < meters)
            } else if !Self.reports(out).isEmpty {
                if let last = delivered.last { #expect(Self.distance(last, fix) >= meters) }
                delivered.append(fix)
            }
        }
        #expect(!delivered.isEmpty)
        if meters == 0 { #expect(delivered.count == Self.positioned.count) } else { #expect(delivered.count < Self.positioned.count) }
    }

    static func distance(_ a: Fix, _ b: Fix) -> Double {
        Geodesy.distance(latitude1: a.latitude ?? 0, longitude1: a.longitude ?? 0, latitude2: b.latitude ?? 0, longitude2: b.longitude ?? 0)
    }

    @Test("fix loss: told once when the fix goes (each no-fix epoch after it goes on, for gpsd's mode 1 TPVs), once when it is back, then the report")
    func fixLoss() {
        var p = Self.publisher()
        let initial = Self.watch(&p, 1, Self.navit, at: Self.moment(0))
        // Before any fix: told there is none.
        #expect(initial.contains { if case .fixState(1, false) = $0 { true } else { false } })
        var out: [Delivery] = []
        p.publish(Self.positioned[0], at: Self.moment(1), into: &out)
        #expect(out.contains { if case .fixState(1, true) = $0 { true } else { false } })
        #expect(Self.reports(out).count == 1)
        let lost = Self.fixes[0]
        out.removeAll()
        p.publish(lost, at: Self.moment(2), into: &out)
        p.publish(lost, at: Self.moment(3), into: &out)
        // A full-accuracy watcher: the first no-fix says the fix was lost (STATE on the native front), the next
        // epochs go to it too (the gpsd front sends each as gpsd does), and no STATE more.
        #expect(out.count == 2)
        #expect(out.first.map { if case .noFixEpoch(1, true) = $0 { true } else { false } } == true, "\(out)")
        #expect(out.last.map { if case .noFixEpoch(1, false) = $0 { true } else { false } } == true, "\(out)")
        out.removeAll()
        p.publish(Self.positioned[1], at: Self.moment(4), into: &out)
        #expect(out.contains { if case .fixState(1, true) = $0 { true } else { false } })
        #expect(Self.reports(out).count == 1)
    }

    @Test("a When-In-Use client whose user has no active session is not told of fix loss either (nothing is sent to it)")
    func fixLossNotToldWhenNotInUse() {
        let grant = PersistentGrant(subject: .executable("/usr/bin/curl", user: "1001"), allowed: true, accuracy: .full,
                                    created: 0, decidedBy: "agent", whenInUse: true)
        var p = Self.publisher(grants: GrantSet(persistent: [grant]))
        // Found by a helper attacking the daemon: the STATE of a lost fix reached such a client.
        let initial = Self.watch(&p, 1, Self.stranger, at: Self.moment(0))
        #expect(p.authorization(of: 1, at: Self.moment(0)).status == .authorizedWhenInUse)
        // Told why nothing comes (`SilenceTests`), nothing of the fix.
        #expect(initial.allSatisfy { if case .silence(1, .notInUse) = $0 { true } else { false } } && initial.count == 1, "\(initial)")
        var out: [Delivery] = []
        p.publish(Self.positioned[0], at: Self.moment(1), into: &out)
        p.publish(Self.fixes[0], at: Self.moment(2), into: &out)
        #expect(out.allSatisfy { if case .fixState = $0 { false } else if case .report = $0 { false } else { true } }, "\(out)")
    }

    @Test("a revoked grant stops the stream mid-way: AUTHORIZATION, an ERROR for WATCH, and no report")
    func revokeMidStream() {
        let subject = GrantSubject.executable("/usr/bin/curl", user: "1001")
        let grants = GrantSet(persistent: [PersistentGrant(subject: subject, allowed: true, accuracy: .full, created: 0,
                                                           decidedBy: "agent root (uid 0)")])
        var p = Self.publisher(grants: grants)
        _ = Self.watch(&p, 1, Self.stranger, at: Self.moment(0))
        _ = Self.watch(&p, 2, Self.navit, at: Self.moment(0))
        var out: [Delivery] = []
        p.publish(Self.positioned[0], at: Self.moment(1), into: &out)
        #expect(Self.reports(out).map(\.id).sorted() == [1, 2])
        p.changeGrants { $0.persistent.removeAll { $0.subject == subject } }
        out.removeAll()
        p.publish(Self.positioned[1], at: Self.moment(2), into: &out)
        #expect(Self.reports(out).map(\.id) == [2])
        #expect(out.contains { if case .authorization(1, let s) = $0 { s.status == .notDetermined } else { false } })
        #expect(out.contains { if case .watchEnded(1, _) = $0 { true } else { false } })
        // And it stays ended.
        out.removeAll()
        p.publish(Self.positioned[2], at: Self.moment(3), into: &out)
        #expect(Self.reports(out).map(\.id) == [2])
        #expect(!out.contains { if case .watchEnded = $0 { true } else { false } })
    }

    @Test("new rules lower a client's accuracy for the next fix", arguments: [AccuracyAuthorization.full, .reduced])
    func accuracyChange(to accuracy: LocationWire.AccuracyAuthorization) {
        var p = Self.publisher()
        _ = Self.watch(&p, 1, Self.navit, at: Self.moment(0))
        var out: [Delivery] = []
        p.publish(Self.positioned[0], at: Self.moment(1), into: &out)
        #expect(Self.reports(out).map(\.accuracy) == [.full])
        let told = p.replaceRules(Self.rules(navitAccuracy: accuracy), fudger: nil, at: Self.moment(2))
        #expect(told.isEmpty)  // it never asked, so it is not told; its reports say the accuracy
        out.removeAll()
        p.publish(Self.positioned[1], at: Self.moment(3), into: &out)
        #expect(Self.reports(out).map(\.accuracy) == [accuracy])
    }

    @Test("POLL: answered by the next fix; at most 16 waiting per connection; a timed-out one is gone")
    func polls() throws {
        var p = Self.publisher()
        p.connect(1, identity: Self.navit)
        var ids: [Int] = []
        for _ in 0..<PollCounts.perConnection {
            let poll = p.addPoll(1, at: Self.moment(0))
            ids.append(try #require(poll))
        }
        let oneMore = p.addPoll(1, at: Self.moment(0))
        #expect(oneMore == nil)
        let expired = p.expirePoll(ids[0], of: 1, at: Self.moment(0.5)), again = p.expirePoll(ids[0], of: 1, at: Self.moment(0.5))
        #expect(expired && !again)
        var out: [Delivery] = []
        p.publish(Self.positioned[0], at: Self.moment(1), into: &out)
        #expect(out.filter { if case .pollReply(1, .full) = $0 { true } else { false } }.count == 1)
        let answered = p.expirePoll(ids[1], of: 1, at: Self.moment(1))
        #expect(!answered)
    }

    @Test("the first delivery under a grant is audited once")
    func firstDeliveryAudit() {
        var p = Self.publisher()
        _ = Self.watch(&p, 1, Self.navit, at: Self.moment(0))
        var out: [Delivery] = []
        for (i, fix) in Self.positioned.prefix(5).enumerated() { p.publish(fix, at: Self.moment(Double(i + 1)), into: &out) }
        let audits = out.compactMap { if case .audit(let e) = $0 { e } else { nil } }
        #expect(audits.map(\.event) == ["delivery"])
        #expect(audits.first?.identity.executable == "/usr/bin/navit")
        #expect(audits.first?.status == "authorizedPersistent")
    }

    // MARK: - Issue 12: what a reduced client can learn from timing

    @Test("reduced reports go out on the pacing cadence whatever the client's filters", arguments: [0.0, 1.0, 1e6])
    func reducedCadenceIgnoresFilters(distanceFilter: Double) {
        var p = Self.publisher(Self.rules(reducedInterval: 10))
        _ = Self.watch(&p, 1, Self.weather, minInterval: .seconds(3), distanceFilter: distanceFilter, at: Self.moment(0))
        var times: [Int] = []
        var out: [Delivery] = []
        for (i, fix) in Self.positioned.enumerated() {
            out.removeAll()
            p.publish(fix, at: Self.moment(Double(i + 1)), into: &out)
            if !Self.reports(out).isEmpty { times.append(i + 1) }
        }
        // The first fix at once (slot 0 of the one grid was free), then the first fix of each slot — 10, 20, … (the
        // second 9 s after the first: interval − `ReducedPacing.slack`) — and nothing in between, for every filter.
        #expect(times == [1] + Array(stride(from: 10, through: Self.positioned.count, by: 10)))
    }

    @Test("a reduced client is told of fix loss only when its next report is due; a full one at once")
    func reducedFixLossIsPaced() {
        var p = Self.publisher(Self.rules(reducedInterval: 10))
        _ = Self.watch(&p, 1, Self.weather, at: Self.moment(0))
        _ = Self.watch(&p, 2, Self.navit, at: Self.moment(0))
        var out: [Delivery] = []
        p.publish(Self.positioned[0], at: Self.moment(1), into: &out)
        #expect(Self.reports(out).map(\.id).sorted() == [1, 2])
        let lost = Self.fixes[0]
        var told: [Int: Int] = [:]
        for t in 2...12 {
            out.removeAll()
            p.publish(lost, at: Self.moment(Double(t)), into: &out)
            for case let .fixState(id, false) in out { told[id] = t }
            for case let .noFixEpoch(id, true) in out { told[id] = t }
            // A reduced client's fix loss is a notice of the cadence, with when the fix's return may show (`SilenceTests`).
            for case let .silence(id, .noFix) in out { told[id] = t }
            // The reduced client gets no epoch of it: their times would tell the receiver's cadence.
            #expect(!out.contains { if case .noFixEpoch(1, _) = $0 { true } else { false } })
        }
        #expect(told[2] == 2)
        #expect(told[1] == 10)  // its report after the one at second 1 was due at the next slot, second 10
        // STATUS shows the reduced client only what it was told.
        #expect(p.modeShown(to: 1, accuracy: .reduced) == .noFix)
    }

    @Test("a reduced client's STATUS mode follows its paced messages, not the receiver")
    func reducedStatusMode() {
        var p = Self.publisher(Self.rules(reducedInterval: 10))
        p.connect(1, identity: Self.weather)
        #expect(p.modeShown(to: 1, accuracy: .reduced) == nil)
        _ = Self.watch(&p, 2, Self.weather, at: Self.moment(0))
        var out: [Delivery] = []
        p.publish(Self.positioned[0], at: Self.moment(1), into: &out)
        #expect(p.modeShown(to: 2, accuracy: .reduced) == .twoDimensional)
        p.publish(Self.fixes[0], at: Self.moment(2), into: &out)
        #expect(p.modeShown(to: 2, accuracy: .reduced) == .twoDimensional)  // not due yet: not told
        #expect(p.modeShown(to: 2, accuracy: .full) == .noFix)
    }

    @Test("pending POLLs are bounded per user across connections")
    func pollsPerUser() {
        var p = Self.publisher()
        var accepted = 0
        for id in 1...5 {
            p.connect(id, identity: Self.navit)
            for _ in 0..<PollCounts.perConnection where p.addPoll(id, at: Self.moment(0)) != nil { accepted += 1 }
        }
        #expect(accepted == PollCounts.perUser)
        // Another user is not affected.
        p.connect(9, identity: Self.stranger)
        let other = p.addPoll(9, at: Self.moment(0))
        #expect(other != nil)
        // A disconnect gives the user's share back.
        p.disconnect(1)
        let again = p.addPoll(5, at: Self.moment(0))
        #expect(again != nil)
    }

    @Test("pacing is keyed on the user: a fresh systemd unit, or another program, gets no fresh report")
    func pacingIgnoresUnit() {
        var p = Self.publisher(Self.rules(reducedInterval: 900))
        var first = Self.weather
        first.unit = "run-u1.scope"
        var second = Self.weather
        second.unit = "run-u2.scope"
        _ = Self.watch(&p, 1, first, at: Self.moment(0))
        var out: [Delivery] = []
        p.publish(Self.positioned[0], at: Self.moment(1), into: &out)
        p.disconnect(1)
        out.removeAll()
        _ = Self.watch(&p, 2, second, at: Self.moment(2))
        p.publish(Self.positioned[1], at: Self.moment(3), into: &out)
        #expect(Self.reports(out).isEmpty)
    }
}
