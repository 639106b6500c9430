/// A civil date in the proleptic Gregorian calendar (UTC).
public struct CivilDate: Hashable, Comparable, Sendable {
    /// Four-digit year, e.g. 2019.
    public var year: Int
    /// Month, 1...12.
    public var month: Int
    /// Day of month, 1...31.
    public var day: Int

    /// Creates a date; returns nil when the fields do not name a real day of the years 1–9999 (the range
    /// ISO 8601 writes with four digits; anything else from a receiver is garbage).
    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month), day >= 1,
              day <= CivilDate.daysInMonth(year: year, month: month) else {
            return nil
        }
        self.year = year
        self.month = month
        self.day = day
    }

    /// Days since 1970-01-01 (negative before). Algorithm: H. Hinnant, "chrono-compatible low-level date algorithms".
    public var daysSinceUnixEpoch: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The date `daysSinceUnixEpoch` days after 1970-01-01.
    public init(daysSinceUnixEpoch z0: Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        self.year = yoe + era * 400 + (m <= 2 ? 1 : 0)
        self.month = m
        self.day = d
    }

    /// Number of days in `month` of `year` (Gregorian leap years).
    public static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    public static func < (a: CivilDate, b: CivilDate) -> Bool {
        (a.year, a.month, a.day) < (b.year, b.month, b.day)
    }
}

/// A UTC instant with millisecond resolution that can name a leap second (`23:59:60.xxx`).
///
/// Receivers report time of day and, in some sentences, the date; a fix may therefore know only the
/// time of day (`date == nil`) until a dated sentence (RMC, ZDA) has been seen.
public struct UTCTime: Hashable, Comparable, Sendable {
    /// The UTC date, when known.
    public var date: CivilDate?
    /// Milliseconds since 00:00:00 UTC of `date`, 0 ..< 86_401_000 (the last second is a leap second).
    public var millisecondsOfDay: Int

    public static let millisecondsPerDay = 86_400_000

    public init(date: CivilDate?, millisecondsOfDay: Int) {
        self.date = date
        self.millisecondsOfDay = millisecondsOfDay
    }

    /// Hour 0...23.
    public var hour: Int { min(millisecondsOfDay / 3_600_000, 23) }
    /// Minute 0...59.
    public var minute: Int { millisecondsOfDay >= UTCTime.millisecondsPerDay ? 59 : millisecondsOfDay / 60_000 % 60 }
    /// Second 0...60 (60 only during a leap second).
    public var second: Int {
        millisecondsOfDay >= UTCTime.millisecondsPerDay ? 60 : millisecondsOfDay / 1000 % 60
    }
    /// Millisecond 0...999.
    public var millisecond: Int { millisecondsOfDay % 1000 }
    /// True during an inserted leap second (`23:59:60`).
    public var isLeapSecond: Bool { millisecondsOfDay >= UTCTime.millisecondsPerDay }

    /// Milliseconds since 1970-01-01T00:00:00Z in POSIX time (a leap second maps onto the following
    /// second's first millisecond count, as POSIX does); nil without a date.
    public var unixMilliseconds: Int? {
        guard let date else { return nil }
        return date.daysSinceUnixEpoch * UTCTime.millisecondsPerDay + millisecondsOfDay
    }

    /// Orders by date (an undated time sorts before any dated one), then by time of day; a leap second sorts
    /// between 23:59:59.999 and the next day's 00:00:00.000.
    public static func < (a: UTCTime, b: UTCTime) -> Bool {
        switch (a.date, b.date) {
        case let (x?, y?) where x != y: return x < y
        case (nil, _?): return true
        case (_?, nil): return false
        default: return a.millisecondsOfDay < b.millisecondsOfDay
        }
    }

    /// Seconds from `earlier` to `self`, nil when either lacks a date and the dates could differ.
    public func seconds(since earlier: UTCTime) -> Double? {
        if date == earlier.date {
            return Double(millisecondsOfDay - earlier.millisecondsOfDay) / 1000
        }
        guard let a = unixMilliseconds, let b = earlier.unixMilliseconds else { return nil }
        return Double(a - b) / 1000
    }

    /// ISO 8601 text, `YYYY-MM-DDTHH:MM:SS.sssZ` (gpsd_json(5) TPV.time), or `HH:MM:SS.sssZ` without a date.
    public var iso8601: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        appendISO8601(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `iso8601` as ASCII bytes.
    public func appendISO8601(to out: inout [UInt8]) {
        @inline(__always) func two(_ v: Int) {
            out.append(UInt8(48 + v / 10 % 10))
            out.append(UInt8(48 + v % 10))
        }
        if let date {
            let y = date.year
            if y < 0 || y > 9999 {
                out.append(contentsOf: String(y).utf8)
            } else {
                two(y / 100)
                two(y % 100)
            }
            out.append(UInt8(ascii: "-"))
            two(date.month)
            out.append(UInt8(ascii: "-"))
            two(date.day)
            out.append(UInt8(ascii: "T"))
        }
        two(hour)
        out.append(UInt8(ascii: ":"))
        two(minute)
        out.append(UInt8(ascii: ":"))
        two(second)
        out.append(UInt8(ascii: "."))
        let ms = millisecond
        out.append(UInt8(48 + ms / 100))
        two(ms % 100)
        out.append(UInt8(ascii: "Z"))
    }
}
