/// The one grammar for durations written by people — the config file (`once-lifetime = 1h`,
/// `stale-after = 500ms`) and locationctl's options (`--expires 7d`, `--since "1h 30min"`).
///
/// One or more numbers, each with a unit: `ms`; `s`, `sec`, `second(s)`; `m`, `min`, `minute(s)`; `h`,
/// `hr`, `hour(s)`; `d`, `day(s)`; `w`, `week(s)` — e.g. `500ms`, `30s`, `15min`, `1h 30min`, `7d`. A bare
/// number alone is seconds. Numbers are decimal, not negative.
public enum DurationText {
    static let units: [String: Double] = [
        "ms": 0.001,
        "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
        "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
        "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
        "d": 86_400, "day": 86_400, "days": 86_400,
        "w": 604_800, "week": 604_800, "weeks": 604_800,
    ]

    /// Parses `text`; nil when it is not of the form above, or is longer than about 30 million years.
    public static func parse(_ text: String) -> Duration? {
        var rest = Substring(text).drop { $0 == " " }
        while rest.last == " " { rest = rest.dropLast() }
        guard !rest.isEmpty else { return nil }
        var total = 0.0
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " }
            let number = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            guard !number.isEmpty, let value = Double(number) else { return nil }
            rest = rest.dropFirst(number.count).drop { $0 == " " }
            let unit = rest.prefix { $0.isLetter }
            rest = rest.dropFirst(unit.count)
            if unit.isEmpty {
                guard rest.isEmpty, total == 0 else { return nil }
                total = value
            } else {
                guard let scale = units[String(unit)] else { return nil }
                total += value * scale
            }
        }
        guard total.isFinite, total < 1e15 else { return nil }
        return .seconds(total)
    }

    /// A value as the config file writes it and reads it back (`locationd --check-config`): `30` for 30.0,
    /// `0.5` for 0.5 — a duration's seconds, before its `s`, or a distance's metres.
    public static func configNumber(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : "\(value)"
    }

    /// A duration as the config file writes it and reads it back (`locationd --check-config`), in the largest
    /// units that give it exactly, as people write durations: `1h` for 3600 s (not `3600s`), `15min`,
    /// `1h 30min`, `30s`, `1.5s`, `500ms`, `0s`. A value written `90s` prints `1min 30s`: the same duration.
    /// - Parameter seconds: the duration, seconds (not negative).
    public static func configText(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds > 0, seconds < 1e15 else { return configNumber(max(0, seconds)) + "s" }
        if seconds < 1 {
            let milliseconds = seconds * 1000
            return milliseconds == milliseconds.rounded() ? "\(Int(milliseconds))ms" : configNumber(seconds) + "s"
        }
        var whole = Int(seconds.rounded(.down))
        let fraction = seconds - Double(whole)
        var words: [String] = []
        for (scale, unit) in [(86_400, "d"), (3600, "h"), (60, "min")] where whole >= scale {
            words.append("\(whole / scale)\(unit)")
            whole %= scale
        }
        if whole > 0 || fraction > 0 {
            words.append(fraction > 0 ? configNumber(Double(whole) + fraction) + "s" : "\(whole)s")
        }
        return words.joined(separator: " ")
    }

    /// A duration as messages and logs write it, to the millisecond: "2 s", "0.5 s", "2.828 s" (a reduced POLL's wait,
    /// which ends at a moment of the cadence, printed "2.827927243 s").
    public static func seconds(_ d: Duration) -> String {
        let s = ((Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18) * 1000).rounded() / 1000
        return s == s.rounded() ? "\(Int(s)) s" : "\(s) s"
    }

    /// Whole seconds as messages write a longer wait: "40 s", "12 min 3 s", "1 h 0 min 5 s".
    public static func minutesAndSeconds(_ seconds: Int) -> String {
        let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60)
        if h > 0 { return "\(h) h \(m) min \(s) s" }
        return m > 0 ? "\(m) min \(s) s" : "\(s) s"
    }
}
