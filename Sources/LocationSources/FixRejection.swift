import LocationCore

/// Why a plausibility rule kept a receiver's fix from being published (docs/RECEIVERS.md "Bad receivers"):
/// the rule's name and a sentence for people, in `STATUS` (`lastRejection`, counts by rule in `rejected`)
/// and in the daemon's log, once each time the reason changes.
///
/// Issue 33: a capture from 2020 fed through a serial port gave no fix and only an `errors` count; nothing
/// said that `check-date` had rejected its dates.
public struct FixRejection: Hashable, Sendable {
    /// The rule: `check-date` (the receiver section's key that turns it off), `null-island`,
    /// `time-backwards` or `impossible-jump`.
    public var rule: String
    /// For people, e.g. `fix dated 2020-07-11 rejected: check-date; set check-date = no for captures`.
    public var reason: String

    /// - Parameters: as the properties.
    public init(rule: String, reason: String) {
        self.rule = rule
        self.reason = reason
    }
}

extension FixPlausibility.Finding {
    /// The rejection this finding is, when it kept the fix's position from being published (dropped, or
    /// made a no-fix); nil for a correction (a week rollover moved, an impossible speed removed).
    public var rejection: FixRejection? {
        switch self {
        case .implausibleDate(let date):
            return FixRejection(rule: "check-date", reason: "fix dated \(Self.text(date)) rejected: check-date; "
                                + "set check-date = no for captures")
        case .nullIsland:
            return FixRejection(rule: "null-island", reason: "fix at 0°, 0° rejected: null-island (the receiver has no position yet)")
        case .timeWentBackwards:
            return FixRejection(rule: "time-backwards", reason: "fix older than the last one published rejected: time-backwards")
        case .impossibleJump(let speed):
            let shown = speed.isFinite ? "\(Int(speed.rounded())) m/s" : "no time"
            return FixRejection(rule: "impossible-jump", reason: "fix rejected: impossible-jump (\(shown) from the last one published)")
        case .weekRolloverCorrected, .impossibleSpeed:
            return nil
        }
    }

    /// `2020-07-11`.
    private static func text(_ date: CivilDate) -> String {
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(date.year, 4))-\(padded(date.month, 2))-\(padded(date.day, 2))"
    }
}
