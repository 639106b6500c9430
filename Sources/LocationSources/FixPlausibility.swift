import LocationCore
import LocationPosix

/// What a live receiver's fix must look like before it is published: a receiver can send valid-looking
/// fixes that are not (docs/RECEIVERS.md "Bad receivers" gives each rule, why, and the tests).
///
/// One value per receiver, fed each fix in order with the wall clock and the monotonic clock of its arrival.
/// Pure: the clocks come in as arguments, so every rule is tested without waiting.
///
/// - A position at exactly 0°, 0° is no position (modules send it before their first fix): no-fix.
/// - A date before `earliestDate`, or more than a day after a set wall clock, is not today's. It is
///   corrected when it is a whole number of GPS week-number rollovers (1024 weeks, 7168 days) off and that
///   is proven: by the wall clock when it is set (the shifted date falls within a day of it), else by
///   `earliestDate` (the one shift that lands in the 1024 weeks from it). A date that is neither plausible
///   nor provably rolled over makes the fix a no-fix: a receiver that does not know GPS time has no
///   trustworthy solution either.
/// - A leap second (`23:59:60`) is kept as the 60th second: it sorts between 23:59:59 and 00:00:00.
/// - A fix older than the last one published is dropped (a stale epoch from a buffer); `confirmations`
///   fixes in a row going forward from the older time are taken as the receiver's new timeline (a reset).
/// - A position farther from the last published one than `maximumSpeed` allows for the time between them
///   is dropped; `confirmations` fixes in a row that agree with each other are taken as where the
///   receiver is (the earlier position was the wrong one, or the receiver moved while off).
/// - A reported speed above `maximumSpeed` is dropped from the fix (the position stays).
public struct FixPlausibility: Sendable {
    /// The rules' settings.
    public struct Configuration: Sendable, Hashable {
        /// The earliest date a live receiver can report: the GPS week-rollover pivot when the wall clock is
        /// not set (gpsd's timebase.c uses its build date the same way). Default 2026-01-01.
        public var earliestDate: CivilDate
        /// Whether the time rules (date, backwards) apply: true for live receivers; a replay plays a
        /// recording of any year, at any pace, looped.
        public var checksTime: Bool
        /// Whether the date rule applies (with `checksTime`): config `check-date`, default on.
        public var checksDate: Bool
        /// Whether the jump rule applies: false for a replay, whose pace is not the capture's.
        public var checksMotion: Bool
        /// Speeds above this are impossible, metres per second (default 1000: twice the 515 m/s
        /// (1000 knots) above which receivers stop reporting under the COCOM export limits).
        public var maximumSpeed: Double
        /// Fixes in a row that confirm a new timeline or position (default 3).
        public var confirmations: Int

        /// - Parameters: as the properties.
        public init(earliestDate: CivilDate = FixPlausibility.defaultEarliestDate, checksTime: Bool = true,
                    checksDate: Bool = true, checksMotion: Bool = true, maximumSpeed: Double = 1000, confirmations: Int = 3) {
            self.earliestDate = earliestDate
            self.checksTime = checksTime
            self.checksDate = checksDate
            self.checksMotion = checksMotion
            self.maximumSpeed = maximumSpeed
            self.confirmations = confirmations
        }

        /// A replay: only the 0,0 rule and the reported-speed rule.
        public static let replay = Configuration(checksTime: false, checksMotion: false)
    }

    /// What a rule did to a fix.
    public enum Finding: Hashable, Sendable {
        /// Position at exactly 0°, 0°: made a no-fix.
        case nullIsland
        /// The date was moved by this many 1024-week periods (positive: forward).
        case weekRolloverCorrected(periods: Int)
        /// The date is neither plausible nor provably rolled over: made a no-fix.
        case implausibleDate(CivilDate)
        /// Older than the last fix published: dropped.
        case timeWentBackwards
        /// Farther from the last fix published than the maximum speed allows, metres per second: dropped.
        case impossibleJump(metersPerSecond: Double)
        /// Reported speed above the maximum, metres per second: the speed was removed.
        case impossibleSpeed(metersPerSecond: Double)
    }

    /// The default `earliestDate`: no live receiver reports a date before this release was made.
    public static let defaultEarliestDate = CivilDate(year: 2026, month: 1, day: 1) ?? CivilDate(daysSinceUnixEpoch: 20_454)
    /// 1024 weeks in days: the GPS week-number rollover period (IS-GPS-200, 10-bit week number).
    public static let rolloverDays = 7168
    /// How far a position may move without time counting, metres (receiver noise between close epochs).
    public static let jumpSlackMeters = 100.0

    /// The rules' settings this value applies.
    public let configuration: Configuration
    /// The last fix published with a time, and with a position.
    private var lastTime: UTCTime?
    private var lastPosition: (latitude: Double, longitude: Double, time: UTCTime?, at: Duration)?
    /// Fixes dropped in a row for going backwards, the last of them.
    private var backwardsRun = 0
    private var lastBackwards: UTCTime?
    /// Positions dropped in a row for jumping, agreeing with each other; the last of them.
    private var jumpRun = 0
    private var lastJump: (latitude: Double, longitude: Double, time: UTCTime?, at: Duration)?

    /// - Parameter configuration: the rules' settings.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Forgets the receiver's history (it disconnected: what comes next may be another device).
    public mutating func reset() {
        self = FixPlausibility(configuration: configuration)
    }

    /// Vets one fix.
    /// - Parameters:
    ///   - fix: the receiver's fix.
    ///   - wallClock: the system's UTC time now, seconds since 1970-01-01 (`clock_gettime(CLOCK_REALTIME)`).
    ///   - now: the monotonic instant the fix arrived.
    /// - Returns: the fix to publish (possibly corrected or made a no-fix), nil to drop it, and what was done.
    public mutating func vet(_ fix: Fix, wallClock: Double, now: ContinuousClock.Instant) -> (fix: Fix?, findings: [Finding]) {
        vet(fix, wallClock: wallClock, now: now.sinceOrigin)
    }

    /// `vet(_:wallClock:now:)` with `now` as `ContinuousClock.Instant.sinceOrigin` (fixed layout: the
    /// history keeps its arrival times so).
    mutating func vet(_ fix: Fix, wallClock: Double, now: Duration) -> (fix: Fix?, findings: [Finding]) {
        var fix = fix
        var findings: [Finding] = []
        if fix.hasPosition, fix.latitude == 0, fix.longitude == 0 {
            findings.append(.nullIsland)
            fix = fix.withoutPosition()
        }
        if let speed = fix.speed, !(speed <= configuration.maximumSpeed) {
            findings.append(.impossibleSpeed(metersPerSecond: speed))
            fix.speed = nil
        }
        if configuration.checksTime, var time = fix.time {
            if configuration.checksDate, let date = time.date {
                switch Self.resolve(date, wallClock: wallClock, earliest: configuration.earliestDate) {
                case .plausible: break
                case .rolledOver(let periods, let corrected):
                    findings.append(.weekRolloverCorrected(periods: periods))
                    time.date = corrected
                    fix.time = time
                case .implausible:
                    findings.append(.implausibleDate(date))
                    fix = fix.withoutPosition()
                }
            }
            if isBackwards(time) {
                if let last = lastBackwards, !isBefore(time, last) { backwardsRun += 1 } else { backwardsRun = 1 }
                lastBackwards = time
                guard backwardsRun >= configuration.confirmations else {
                    findings.append(.timeWentBackwards)
                    return (nil, findings)
                }
                // The receiver keeps going from the older time: its new timeline.
                lastPosition = nil
            }
            backwardsRun = 0
            lastBackwards = nil
        }
        if configuration.checksMotion, fix.hasPosition, let latitude = fix.latitude, let longitude = fix.longitude {
            let here = (latitude: latitude, longitude: longitude, time: fix.time, at: now)
            if let last = lastPosition, let speed = Self.impliedSpeed(from: last, to: here, maximum: configuration.maximumSpeed) {
                if let previous = lastJump, Self.impliedSpeed(from: previous, to: here, maximum: configuration.maximumSpeed) == nil {
                    jumpRun += 1
                } else {
                    jumpRun = 1
                }
                lastJump = here
                guard jumpRun >= configuration.confirmations else {
                    findings.append(.impossibleJump(metersPerSecond: speed))
                    return (nil, findings)
                }
            }
            jumpRun = 0
            lastJump = nil
            lastPosition = here
        }
        if let time = fix.time { lastTime = time }
        return (fix, findings)
    }

    /// The speed from `a` to `b` when it is above `maximum` (beyond the slack), else nil. The time between
    /// them is the receiver's when both are dated (or undated on the same day) and apart, else their
    /// arrivals'.
    private static func impliedSpeed(from a: (latitude: Double, longitude: Double, time: UTCTime?, at: Duration),
                                     to b: (latitude: Double, longitude: Double, time: UTCTime?, at: Duration),
                                     maximum: Double) -> Double? {
        var seconds: Double
        if let t1 = b.time, let t0 = a.time, let dt = t1.seconds(since: t0), dt > 0 {
            seconds = dt
        } else {
            seconds = (b.at - a.at).inSeconds
        }
        seconds = max(seconds, 0)
        let allowed = maximum * seconds + jumpSlackMeters
        // Most fixes are metres apart: a bound settles them without the iterative geodesic.
        guard Geodesy.distanceUpperBound(latitude1: a.latitude, longitude1: a.longitude, latitude2: b.latitude, longitude2: b.longitude) > allowed else {
            return nil
        }
        let meters = Geodesy.distance(latitude1: a.latitude, longitude1: a.longitude, latitude2: b.latitude, longitude2: b.longitude)
        guard meters > allowed else { return nil }
        return seconds > 0 ? meters / seconds : .infinity
    }

    /// True when `time` is before the last published time (a leap second sorts in its place). Undated times
    /// of day compare across midnight: less than 12 h earlier is backwards, more is the next day.
    private func isBackwards(_ time: UTCTime) -> Bool {
        guard let last = lastTime else { return false }
        return isBefore(time, last)
    }

    private func isBefore(_ time: UTCTime, _ last: UTCTime) -> Bool {
        if time.date != nil, last.date != nil { return time < last }
        let back = last.millisecondsOfDay - time.millisecondsOfDay
        return back > 0 && back < UTCTime.millisecondsPerDay / 2
    }

    /// What a receiver's date is worth.
    enum DateVerdict: Equatable {
        case plausible
        case rolledOver(periods: Int, corrected: CivilDate)
        case implausible
    }

    /// Judges `date` against the wall clock when it is set (on or after `earliest`), else against `earliest`.
    ///
    /// Clock set: a date from `earliest` to a day after the clock is plausible (a receiver is not expected to
    /// agree with a clock that may have drifted, but GPS time never runs ahead of a set clock by days); one
    /// outside that is a rollover when whole 1024-week periods bring it within a day of the clock. Clock not
    /// set (before `earliest`, e.g. a board without a battery-backed clock): a date in the 1024 weeks from
    /// `earliest` is plausible, one before them is moved forward into them, one after them is implausible.
    static func resolve(_ date: CivilDate, wallClock: Double, earliest: CivilDate) -> DateVerdict {
        let day = date.daysSinceUnixEpoch
        let floor = earliest.daysSinceUnixEpoch
        let clockDay = Int((wallClock / 86_400).rounded(.down))
        if clockDay >= floor {
            if day >= floor && day <= clockDay + 1 { return .plausible }
            for periods in [1, -1, 2, -2, 3, -3] {
                let shifted = day + periods * rolloverDays
                if abs(shifted - clockDay) <= 1 {
                    return .rolledOver(periods: periods, corrected: CivilDate(daysSinceUnixEpoch: shifted))
                }
            }
            return .implausible
        }
        if day >= floor + rolloverDays { return .implausible }
        if day >= floor { return .plausible }
        let periods = (floor - day + rolloverDays - 1) / rolloverDays
        guard periods <= 3 else { return .implausible }
        return .rolledOver(periods: periods, corrected: CivilDate(daysSinceUnixEpoch: day + periods * rolloverDays))
    }
}

extension Fix {
    /// This fix as a no-fix: its time, satellites and DOPs, without position, motion or error estimates.
    func withoutPosition() -> Fix {
        var f = Fix(device: device, time: time, mode: .noFix)
        f.satellites = satellites
        f.satellitesUsed = satellitesUsed
        f.satellitesVisible = satellitesVisible
        f.dop = dop
        f.heading = heading
        return f
    }
}
