#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationPosix
import LocationSources
import NMEA
import Testing

@Suite("Replay receiver", .serialized)
struct ReplayReceiverTests {
    @Test("as fast as possible: the same fixes as the decoder, then unavailable at the end of the file")
    func fastReplay() {
        let name = "garmin-10x.log"
        let expected = TestCaptures.decode(TestCaptures.receiverBytes(name)).map { f -> Fix in var g = f; g.device = "demo"; return g }
        let receiver = ReplayReceiver(ReceiverConfiguration(name: "demo", source: .replay(file: TestCaptures.path(name), rate: nil, loop: false),
                                                            staleAfter: .seconds(3600)))
        let events = EventRecorder()
        receiver.start(events.handler)
        #expect(events.wait(timeout: 10) { r in
            r.statuses.contains { if case .unavailable(let why) = $0.state { return why.contains("end of file") } else { return false } }
        })
        receiver.stop()
        let got = events.fixes.filter { !($0.mode == .noFix && $0.time == nil) }
        #expect(got == expected)
    }

    @Test("at 20× the capture's pace it takes at least 1/20 of the capture's span")
    func pacedReplay() {
        let name = "garmin15x.log"
        let fixes = TestCaptures.decode(TestCaptures.receiverBytes(name))
        let times = fixes.compactMap(\.time)
        let span = times.last!.seconds(since: times.first!)!
        let receiver = ReplayReceiver(ReceiverConfiguration(name: "demo", source: .replay(file: TestCaptures.path(name), rate: 20, loop: false)))
        let events = EventRecorder()
        let start = monotonic()
        receiver.start(events.handler)
        #expect(events.wait(timeout: span) { $0.fixes.filter { $0.time != nil }.count >= fixes.count })
        let elapsed = monotonic() - start
        receiver.stop()
        #expect(elapsed >= span / 20 * 0.9, "played \(span) s of capture in \(elapsed) s")
    }

    @Test("a paced replay counts the sentences it has reached, not the whole capture at once (issue 33)")
    func pacedCounts() {
        let name = "haicom-305N.log"
        var decoder = NMEADecoder(requiresChecksum: true)
        decoder.decode(TestCaptures.receiverBytes(name)) { _ in }
        let total = decoder.statistics.framing.sentences
        let receiver = ReplayReceiver(ReceiverConfiguration(name: "demo", source: .replay(file: TestCaptures.path(name), rate: 1, loop: false)))
        let events = EventRecorder()
        receiver.start(events.handler)
        #expect(events.wait(timeout: 10) { $0.fixes.filter { $0.time != nil }.count >= 2 })
        let counted = receiver.status.sentences
        receiver.stop()
        // 1 KiB read at a time: a few epochs ahead of the fixes delivered at most.
        #expect(total > 200 && counted > 0 && counted < total / 4, "\(counted) of \(total) sentences counted after 2 fixes")
    }

    @Test("looping plays the capture again")
    func looping() {
        let name = "garmin17n.log"
        let perPass = TestCaptures.decode(TestCaptures.receiverBytes(name)).filter(\.hasPosition).count
        let receiver = ReplayReceiver(ReceiverConfiguration(name: "demo", source: .replay(file: TestCaptures.path(name), rate: nil, loop: true)))
        let events = EventRecorder()
        receiver.start(events.handler)
        #expect(events.wait(timeout: 10) { $0.fixes.filter(\.hasPosition).count >= 3 * perPass })
        receiver.stop()
    }

    @Test("a missing file is unavailable with the reason, and retried")
    func missingFile() {
        let receiver = ReplayReceiver(ReceiverConfiguration(name: "demo", source: .replay(file: "/nonexistent/capture.nmea", rate: 1, loop: false)))
        let events = EventRecorder()
        receiver.start(events.handler)
        #expect(events.wait(timeout: 3) { r in
            r.statuses.contains { if case .unavailable(let why) = $0.state { return why.contains("No such file") } else { return false } }
        })
        receiver.stop()
    }
}

@Suite("Failover between receivers")
struct FailoverTests {
    /// The selector's clock in these tests: `at(1.5)` is 1.5 s after an arbitrary origin.
    static let origin = ContinuousClock.now
    static func at(_ seconds: Double) -> ContinuousClock.Instant { origin + .seconds(seconds) }

    static func fix(_ device: String, _ second: Int, valid: Bool = true) -> Fix {
        Fix(device: device, time: UTCTime(date: CivilDate(year: 2020, month: 1, day: 1), millisecondsOfDay: second * 1000),
            mode: valid ? .threeDimensional : .noFix, latitude: valid ? 1 : nil, longitude: valid ? 2 : nil)
    }

    @Test("the higher priority wins while it has a fix; loss, silence and return switch as specified")
    func selector() {
        var s = FixSelector(receivers: [("low", 0), ("high", 10)])
        #expect(s.fix(Self.fix("low", 1), from: "low", now: Self.at(0)) == .publish(Self.fix("low", 1)))
        #expect(s.selected == "low")
        // The higher-priority receiver gets a fix: it takes over at once.
        #expect(s.fix(Self.fix("high", 1), from: "high", now: Self.at(0.1)) == .publish(Self.fix("high", 1)))
        #expect(s.fix(Self.fix("low", 2), from: "low", now: Self.at(1)) == .none)
        #expect(s.fix(Self.fix("high", 2), from: "high", now: Self.at(1.1)) == .publish(Self.fix("high", 2)))
        // It loses its fix: the other one's latest fix is published at once.
        #expect(s.fix(Self.fix("high", 3, valid: false), from: "high", now: Self.at(2.1)) == .publish(Self.fix("low", 2)))
        #expect(s.selected == "low")
        // It returns.
        #expect(s.fix(Self.fix("high", 4), from: "high", now: Self.at(3.1)) == .publish(Self.fix("high", 4)))
        // It falls silent: after 2.5 s without a fix, the low one is chosen.
        _ = s.fix(Self.fix("low", 4), from: "low", now: Self.at(3.2))
        _ = s.fix(Self.fix("low", 5), from: "low", now: Self.at(4.2))
        _ = s.fix(Self.fix("low", 6), from: "low", now: Self.at(5.2))
        #expect(s.tick(now: Self.at(5.5)) == .none)
        #expect(s.tick(now: Self.at(5.7)) == .publish(Self.fix("low", 6)))
        // It disappears (unavailable) after returning: immediate switch.
        _ = s.fix(Self.fix("high", 7), from: "high", now: Self.at(6))
        #expect(s.connection("high", connected: false, now: Self.at(6.1)) != .none)
        #expect(s.selected == "low")
        // Nobody has a fix: one no-fix is published.
        #expect(s.connection("low", connected: false, now: Self.at(7)) == .publish(Fix(device: "low", mode: .noFix)))
        #expect(s.tick(now: Self.at(8)) == .none)
    }

    @Test("while no receiver has a fix, each no-fix epoch of the one that would be chosen first is published, with its time")
    func noFixEpochs() {
        var s = FixSelector(receivers: [("low", 0), ("high", 10)])
        #expect(s.fix(Self.fix("high", 1), from: "high", now: Self.at(0)) == .publish(Self.fix("high", 1)))
        // Losing the fix: the epoch itself goes out (gpsd's `mode` 1 TPV with the epoch's time), not a bare no-fix.
        #expect(s.fix(Self.fix("high", 2, valid: false), from: "high", now: Self.at(1)) == .publish(Self.fix("high", 2, valid: false)))
        #expect(s.fix(Self.fix("low", 2, valid: false), from: "low", now: Self.at(1.1)) == .none)
        #expect(s.fix(Self.fix("high", 3, valid: false), from: "high", now: Self.at(2)) == .publish(Self.fix("high", 3, valid: false)))
        #expect(s.tick(now: Self.at(2.5)) == .none)
        // The first one goes away: the other's epochs speak from then on.
        #expect(s.connection("high", connected: false, now: Self.at(2.6)) == .none)
        #expect(s.fix(Self.fix("low", 3, valid: false), from: "low", now: Self.at(3.1)) == .publish(Self.fix("low", 3, valid: false)))
        // A fix again: published, and no no-fix epoch of anyone while it qualifies.
        #expect(s.fix(Self.fix("low", 4), from: "low", now: Self.at(4.1)) == .publish(Self.fix("low", 4)))
        #expect(s.fix(Self.fix("high", 5, valid: false), from: "high", now: Self.at(5)) == .none)
        #expect(s.fix(Self.fix("low", 5), from: "low", now: Self.at(5.1)) == .publish(Self.fix("low", 5)))
    }

    @Test("one missed epoch of the preferred receiver publishes nothing of the other (issue 12: Brisbane → Oregon → Brisbane)")
    func missedEpochIsNoFailover() {
        var s = FixSelector(receivers: [("oregon", 0), ("brisbane", 10)])
        var published: [String?] = []
        func note(_ action: FixSelector.Action) { if case .publish(let fix) = action { published.append(fix.device) } }
        // Both at 1 Hz; brisbane misses its epoch at second 3 (nothing arrives from it).
        for second in 0...6 {
            note(s.fix(Self.fix("oregon", second), from: "oregon", now: Self.at(Double(second) + 0.05)))
            if second != 3 { note(s.fix(Self.fix("brisbane", second), from: "brisbane", now: Self.at(Double(second) + 0.1))) }
            note(s.tick(now: Self.at(Double(second) + 0.6)))
        }
        #expect(s.selected == "brisbane")
        #expect(!published.dropFirst().contains("oregon"), "published: \(published)")
        // Two missed epochs (7 and 8) are a failure: it switches, 2.5 s after its last fix.
        for second in 7...9 {
            note(s.fix(Self.fix("oregon", second), from: "oregon", now: Self.at(Double(second) + 0.05)))
            note(s.tick(now: Self.at(Double(second) + 0.6)))
        }
        #expect(s.selected == "oregon")
        #expect(published.last == "oregon")
    }

    @Test("two replay receivers: when the higher-priority one stops, fixes come from the other within 2 s")
    func replayFailover() {
        let high = ReplayReceiver(ReceiverConfiguration(name: "high", source: .replay(file: TestCaptures.path("garmin15x.log"), rate: 10, loop: false), priority: 10))
        let low = ReplayReceiver(ReceiverConfiguration(name: "low", source: .replay(file: TestCaptures.path("haicom-305N.log"), rate: 10, loop: true), priority: 0))
        let set = ReceiverSet([high, low])
        let events = EventRecorder()
        set.start(events.setHandler)
        #expect(events.wait(timeout: 10) { $0.fixes.contains { $0.device == "high" && $0.hasPosition } })
        #expect(events.wait(timeout: 30) { r in
            r.statuses.contains { $0.name == "high" && { if case .unavailable = $0.state { return true } else { return false } }($0) }
        })
        let stoppedAt = monotonic()
        #expect(events.wait(timeout: 5) { $0.fixes.last?.device == "low" && $0.fixes.last?.hasPosition == true })
        #expect(monotonic() - stoppedAt < 2)
        set.stop()
    }
}
