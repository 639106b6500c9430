import LocationCore
import LocationPosix
import LocationSources
import NMEA
import Testing

/// The daemon's rules for bad receivers (docs/RECEIVERS.md "Bad receivers"), on fixes decoded from
/// sentences built by the NMEA 0183 RMC layout (`$GPRMC,hhmmss.ss,A,llll.llll,a,yyyyy.yyyy,a,knots,track,
/// ddmmyy,,,mode*hh`, checksum the XOR between `$` and `*`, computed outside this code) and from gpsd's
/// captures of real rolled-over receivers.
@Suite("Bad receivers: plausibility rules")
struct FixPlausibilityTests {
    /// 2026-12-01T12:00:00Z, Unix seconds: the wall clock of these tests.
    static let clock = 1_796_126_400.0
    static let origin = ContinuousClock.now

    static func decode(_ sentences: [String]) -> [Fix] {
        TestCaptures.decode(Array(sentences.map { $0 + "\r\n" }.joined().utf8))
    }

    /// Vets each fix, arriving one second apart, against `clock`.
    static func vet(_ fixes: [Fix], clock: Double = clock, configuration: FixPlausibility.Configuration = .init())
        -> [(fix: Fix?, findings: [FixPlausibility.Finding])] {
        var rules = FixPlausibility(configuration: configuration)
        return fixes.enumerated().map { i, fix in
            rules.vet(fix, wallClock: clock + Double(i), now: origin + .seconds(i))
        }
    }

    // Brisbane, 2026-12-01 12:00:00 to 12:00:03, then Sydney (about 730 km away).
    static let t0 = "$GPRMC,120000.00,A,2712.6546,S,15303.1350,E,0.5,54.7,011226,,,A*71"
    static let t1 = "$GPRMC,120001.00,A,2712.6546,S,15303.1350,E,0.5,54.7,011226,,,A*70"
    static let t2 = "$GPRMC,120002.00,A,2712.6546,S,15303.1350,E,0.5,54.7,011226,,,A*73"
    static let t3 = "$GPRMC,120003.00,A,2712.6546,S,15303.1350,E,0.5,54.7,011226,,,A*72"
    static let back58 = "$GPRMC,115958.00,A,2712.6546,S,15303.1350,E,0.5,54.7,011226,,,A*73"
    static let back59 = "$GPRMC,115959.00,A,2712.6546,S,15303.1350,E,0.5,54.7,011226,,,A*72"
    static let sydney2 = "$GPRMC,120002.00,A,3351.5400,S,15112.6000,E,0.5,54.7,011226,,,A*72"
    static let sydney3 = "$GPRMC,120003.00,A,3351.5400,S,15112.6000,E,0.5,54.7,011226,,,A*73"
    static let sydney4 = "$GPRMC,120004.00,A,3351.5400,S,15112.6000,E,0.5,54.7,011226,,,A*74"

    @Test("today's fixes pass unchanged")
    func plausible() {
        let fixes = Self.decode([Self.t0, Self.t1, Self.t2])
        let vetted = Self.vet(fixes)
        #expect(vetted.map(\.fix) == fixes)
        #expect(vetted.allSatisfy { $0.findings.isEmpty })
    }

    @Test("a fix at exactly 0,0 from any receiver (gpsd's TPV too) is published as no fix")
    func nullIsland() throws {
        let fix = Fix(device: "gps0", time: UTCTime(date: CivilDate(year: 2026, month: 12, day: 1), millisecondsOfDay: 43_200_000),
                      mode: .threeDimensional, quality: .gps, latitude: 0, longitude: 0, altitudeMSL: 0, speed: 0)
        let (vetted, findings) = Self.vet([fix])[0]
        let published = try #require(vetted)
        #expect(published.mode == .noFix && !published.hasPosition && published.altitudeMSL == nil && published.speed == nil)
        #expect(published.time == fix.time)
        #expect(findings == [.nullIsland])
    }

    @Test("week rollover, real: gpsd's april6_2019.log (Telit HE910, 1999-08-22) is moved 1024 weeks to 2019-04-07, by the clock or by the earliest date")
    func rolloverFromCapture() throws {
        let fixes = TestCaptures.decode(TestCaptures.receiverBytes("april6_2019.log")).filter(\.hasPosition)
        let first = try #require(fixes.first)
        #expect(first.time?.iso8601 == "1999-08-22T00:02:31.420Z")
        // The release date taken as 2019-01-01, as a build of that time would have it; the clock set to the
        // capture's day (its header: just after the 6 April 2019 rollover).
        let early = FixPlausibility.Configuration(earliestDate: try #require(CivilDate(year: 2019, month: 1, day: 1)))
        let byClock = Self.vet([first], clock: 1_554_595_380, configuration: early)[0]
        #expect(byClock.fix?.time?.iso8601 == "2019-04-07T00:02:31.420Z")
        #expect(byClock.fix?.hasPosition == true)
        #expect(byClock.findings == [.weekRolloverCorrected(periods: 1)])
        // No clock (a board that booted at 1970): the one shift into the 1024 weeks from 2019-01-01.
        let byPivot = Self.vet([first], clock: 0, configuration: early)[0]
        #expect(byPivot.fix?.time?.iso8601 == "2019-04-07T00:02:31.420Z")
    }

    @Test("two rollovers back (1987) and one ahead (2046) are corrected to today; a date before 2000 or years ahead that no rollover explains is no fix",
          arguments: [
            ("$GPRMC,120000.00,A,2712.6546,S,15303.1350,E,0.5,54.7,010987,,,A*70", "2026-12-01T12:00:00.000Z", FixPlausibility.Finding.weekRolloverCorrected(periods: 2)),
            ("$GPRMC,120000.00,A,2712.6546,S,15303.1350,E,0.5,54.7,170746,,,A*74", "2026-12-01T12:00:00.000Z", .weekRolloverCorrected(periods: -1)),
            ("$GPRMC,120000.00,A,2712.6546,S,15303.1350,E,0.5,54.7,100395,,,A*79", nil, .implausibleDate(CivilDate(year: 1995, month: 3, day: 10)!)),
            ("$GPRMC,120000.00,A,2712.6546,S,15303.1350,E,0.5,54.7,150631,,,A*77", nil, .implausibleDate(CivilDate(year: 2031, month: 6, day: 15)!)),
          ] as [(String, String?, FixPlausibility.Finding)])
    func dates(sentence: String, corrected: String?, finding: FixPlausibility.Finding) throws {
        let (vetted, findings) = Self.vet(Self.decode([sentence]))[0]
        let fix = try #require(vetted)
        #expect(findings == [finding])
        if let corrected {
            #expect(fix.time?.iso8601 == corrected)
            #expect(fix.hasPosition)
        } else {
            #expect(fix.mode == .noFix && !fix.hasPosition, "no bogus time published with a good fix")
        }
    }

    @Test("with no clock, a date more than 1024 weeks after the earliest date is no fix")
    func yearsAheadWithoutClock() throws {
        // 2046-07-17 from a board without a clock: beyond 2026-01-01 + 1024 weeks (2045-08-17).
        let (vetted, findings) = Self.vet(Self.decode(["$GPRMC,120000.00,A,2712.6546,S,15303.1350,E,0.5,54.7,170746,,,A*74"]), clock: 0)[0]
        #expect(vetted?.hasPosition == false)
        #expect(findings == [.implausibleDate(CivilDate(year: 2046, month: 7, day: 17)!)])
    }

    @Test("the leap second 23:59:60 is published as the 60th second, neither dropped as backwards nor merged with 00:00:00")
    func leapSecond() {
        let fixes = Self.decode([
            "$GPRMC,235959.00,A,2712.6546,S,15303.1350,E,0.5,54.7,311216,,,A*73",
            "$GPRMC,235960.00,A,2712.6546,S,15303.1350,E,0.5,54.7,311216,,,A*79",
            "$GPRMC,000000.00,A,2712.6546,S,15303.1350,E,0.5,54.7,010117,,,A*72",
        ])
        // The clock on 2016-12-31 23:59:59 UTC, in a build of 2016.
        let built2016 = FixPlausibility.Configuration(earliestDate: CivilDate(year: 2016, month: 1, day: 1)!)
        let vetted = Self.vet(fixes, clock: 1_483_228_799, configuration: built2016)
        #expect(vetted.map { $0.fix?.time?.iso8601 } == [
            "2016-12-31T23:59:59.000Z", "2016-12-31T23:59:60.000Z", "2017-01-01T00:00:00.000Z",
        ])
        #expect(vetted.allSatisfy { $0.findings.isEmpty && $0.fix?.hasPosition == true })
    }

    @Test("time going backwards: the older fix is dropped; three in a row going on from the older time are the new timeline")
    func backwards() {
        let once = Self.vet(Self.decode([Self.t0, Self.t1, Self.back58, Self.t2]))
        #expect(once.map { $0.fix?.time?.iso8601 } == ["2026-12-01T12:00:00.000Z", "2026-12-01T12:00:01.000Z", nil, "2026-12-01T12:00:02.000Z"])
        #expect(once[2].findings == [.timeWentBackwards])

        let reset = Self.vet(Self.decode([Self.t1, Self.back58, Self.back59, Self.t0]))
        #expect(reset.map { $0.fix?.time?.iso8601 } == ["2026-12-01T12:00:01.000Z", nil, nil, "2026-12-01T12:00:00.000Z"])
    }

    @Test("an impossible jump (730 km in 1 s) is dropped and the track goes on; three agreeing fixes at the new place are taken")
    func jump() throws {
        let once = Self.vet(Self.decode([Self.t0, Self.t1, Self.sydney2, Self.t3]))
        #expect(once.map { $0.fix != nil } == [true, true, false, true])
        guard case .impossibleJump(let speed)? = once[2].findings.first else {
            Issue.record("no jump found: \(once[2].findings)")
            return
        }
        // Brisbane to Sydney, 1 s: great-circle distance about 730 km.
        #expect(speed > 700_000 && speed < 760_000)

        let moved = Self.vet(Self.decode([Self.t0, Self.t1, Self.sydney2, Self.sydney3, Self.sydney4]))
        #expect(moved.map { $0.fix != nil } == [true, true, false, false, true])
        #expect(moved[4].fix?.time?.iso8601 == "2026-12-01T12:00:04.000Z")
    }

    @Test("a reported speed above 1000 m/s (2500 knots) is removed; the position stays")
    func impossibleSpeed() throws {
        let (vetted, findings) = Self.vet(Self.decode(["$GPRMC,120000.00,A,2712.6546,S,15303.1350,E,2500.0,54.7,011226,,,A*43"]))[0]
        let fix = try #require(vetted)
        #expect(fix.hasPosition && fix.speed == nil)
        guard case .impossibleSpeed(let speed)? = findings.first, findings.count == 1 else {
            Issue.record("findings: \(findings)")
            return
        }
        #expect(abs(speed - 2500 * 1852.0 / 3600) < 1e-9, "2500 knots (1 knot = 1852 m/h)")
    }

    @Test("a replay's fixes keep their year and order: only the 0,0 and speed rules apply")
    func replay() {
        let fixes = Self.decode([Self.t1, Self.back58, "$GPRMC,120000.00,A,2712.6546,S,15303.1350,E,0.5,54.7,100395,,,A*79"])
        let vetted = Self.vet(fixes, configuration: .replay)
        #expect(vetted.map(\.fix) == fixes)
    }

    @Test("the daemon's path: a live receiver's 0,0 is published as no fix, its rolled-over date corrected, its stale epoch not published, and STATUS counts them")
    func throughReceiverSet() throws {
        let receiver = ScriptedReceiver("gnss0", plausibility: .init(earliestDate: CivilDate(year: 2019, month: 1, day: 1)!))
        // The wall clock at the capture's day, 2019-04-07 00:03 UTC.
        let set = ReceiverSet([receiver], wallClock: { 1_554_595_380 })
        let published = Locked<[Fix]>([])
        set.start { event in if case .fix(let fix) = event { published.withLock { $0.append(fix) } } }
        defer { set.stop() }
        let capture = TestCaptures.decode(TestCaptures.receiverBytes("april6_2019.log")).filter(\.hasPosition)
        // The capture's one dated fix (1999-08-22T00:02:31.420Z), and the same a second later.
        let first = try #require(capture.last)
        var second = first
        second.time?.millisecondsOfDay += 1000
        var null = first
        null.latitude = 0
        null.longitude = 0
        receiver.send(null)
        receiver.send(first)
        receiver.send(second)
        receiver.send(first)  // an older epoch again
        let fixes = published.withLock { $0 }
        #expect(fixes.first?.hasPosition == false, "0,0 is no fix")
        #expect(fixes.filter(\.hasPosition).compactMap { $0.time?.date } == [CivilDate(year: 2019, month: 4, day: 7)!, CivilDate(year: 2019, month: 4, day: 7)!])
        #expect(fixes.filter(\.hasPosition).map(\.time) != [first.time, second.time], "the dates were corrected")
        #expect(set.statuses.first?.implausibleFixes == 4, "0,0, two corrected dates, one stale epoch")
    }

    @Test("a receiver replaced on reload (check-date turned off) starts with its own rules, not the old receiver's")
    func replacedReceiverStartsAfresh() throws {
        let checking = ScriptedReceiver("gnss0", plausibility: .init(earliestDate: CivilDate(year: 2019, month: 1, day: 1)!))
        let set = ReceiverSet([checking], wallClock: { 1_554_595_380 })
        let published = Locked<[Fix]>([])
        set.start { event in if case .fix(let fix) = event { published.withLock { $0.append(fix) } } }
        defer { set.stop() }
        // The capture's dated fix, 1999-08-22 (a GPS week rollover): the checking receiver corrects it.
        let dated = try #require(TestCaptures.decode(TestCaptures.receiverBytes("april6_2019.log")).filter(\.hasPosition).last)
        checking.send(dated)
        #expect(published.withLock { $0.last?.time?.date } == CivilDate(year: 2019, month: 4, day: 7)!)
        // `check-date = no`: a new receiver of the same name, whose fixes keep the date they carry.
        let trusting = ScriptedReceiver("gnss0", plausibility: .init(checksDate: false))
        _ = set.replaceReceivers([trusting])
        trusting.send(dated)
        #expect(published.withLock { $0.last?.time } == dated.time, "the replaced receiver's rules no longer apply")
    }

    @Test("rejected fixes are counted by rule with the last reason, and the owner hears once per change of reason")
    func rejectionsByRule() throws {
        let receiver = ScriptedReceiver("gnss0", plausibility: .init())
        // The wall clock at 2026-06-01 12:00 UTC; the capture is dated 2020-07-11.
        let set = ReceiverSet([receiver], wallClock: { 1_780_315_200 })
        let heard = Locked<[FixRejection]>([])
        set.start { event in if case .rejected(let name, let rejection) = event, name == "gnss0" { heard.withLock { $0.append(rejection) } } }
        defer { set.stop() }
        let capture = TestCaptures.decode(TestCaptures.receiverBytes("ublox-neo-m9n-nmea.log")).filter(\.hasPosition)
        try #require(capture.count == 61)
        let today = CivilDate(year: 2026, month: 6, day: 1)
        var null = capture[2], good = capture[3]
        null.time?.date = today
        null.latitude = 0
        null.longitude = 0
        good.time?.date = today
        receiver.send(capture[0])  // 2020: check-date
        receiver.send(capture[1])  // the same reason: not heard again
        receiver.send(null)        // null-island
        receiver.send(good)        // published: the next rejection is a change again
        receiver.send(capture[4])  // check-date
        let dated = "fix dated 2020-07-11 rejected: check-date; set check-date = no for captures"
        #expect(heard.withLock { $0 } == [FixRejection(rule: "check-date", reason: dated),
                                          FixRejection(rule: "null-island", reason: "fix at 0°, 0° rejected: null-island (the receiver has no position yet)"),
                                          FixRejection(rule: "check-date", reason: dated)])
        let status = try #require(set.statuses.first)
        #expect(status.rejectedFixes == ["check-date": 3, "null-island": 1])
        #expect(status.lastRejection?.reason == dated)
        #expect(status.fixes == 1)
    }
}
