import LocationCore

extension UTCTime {
    /// Reads the protocol's time format, ISO 8601 UTC `YYYY-MM-DDTHH:MM:SS[.fff]Z` (gpsd_json(5)
    /// TPV.time; docs/PROTOCOL.md "Conventions"), keeping milliseconds (further digits are truncated).
    /// Accepts a leap second, `23:59:60`.
    /// - Parameter text: the time as the server writes it, e.g. `"2007-04-08T09:53:05.802Z"`.
    /// - Returns: nil when the text is not in that form or names no real instant.
    public init?(iso8601 text: String) {
        let b = Array(text.utf8)
        guard b.count >= 20, b.last == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for i in range {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                value = value * 10 + Int(b[i] - 48)
            }
            return value
        }
        guard b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T"),
              b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              let date = CivilDate(year: year, month: month, day: day),
              hour < 24, minute < 60, second < 60 || (second == 60 && hour == 23 && minute == 59)
        else { return nil }
        var milliseconds = 0
        let end = b.count - 1
        if end > 19 {
            // Only the first three digits are read; the rest must be digits and are dropped. Reading them all
            // overflowed an Int from the 19th digit and trapped: FuzzWire found a TPV time with 100 crashing
            // the client library.
            let kept = min(end, 23)
            guard b[19] == UInt8(ascii: "."), end > 20, let fraction = number(20..<kept),
                  b[kept..<end].allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            var scaled = fraction
            for _ in (kept - 20)..<3 { scaled *= 10 }
            milliseconds = scaled
        }
        self.init(date: date, millisecondsOfDay: ((hour * 60 + minute) * 60 + second) * 1000 + milliseconds)
    }

    /// The time of a Unix timestamp, truncated to the millisecond.
    /// - Parameter unixSeconds: seconds since 1970-01-01T00:00:00Z (finite).
    public init(unixSeconds: Double) {
        let ms = Int((unixSeconds * 1000).rounded(.down))
        let day = UTCTime.millisecondsPerDay
        let days = ms >= 0 ? ms / day : (ms - day + 1) / day
        self.init(date: CivilDate(daysSinceUnixEpoch: days), millisecondsOfDay: ms - days * day)
    }
}

/// Reads parts of a JSON line as the text it was written with, for callers that hand on what the
/// daemon sent (`LocationClient`'s `json` properties).
public enum JSONText {
    /// Every element of the array member `member` of the JSON object in `line`, as written, when all
    /// of them are objects (the `events` of an `AUDIT` reply exactly as the daemon stored them, the
    /// `tpv` of a `POLL`). Strings (and the brackets inside them) are skipped correctly.
    /// - Returns: nil when there is no such member or an element is not an object.
    public static func objectElements(ofArrayMember member: String, in line: [UInt8]) -> [ArraySlice<UInt8>]? {
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
        let target = Array(member.utf8)
        var depth = 0
        var index = 0
        var lastString: ArraySlice<UInt8> = []
        var lastKey: ArraySlice<UInt8> = []
        var insideTarget = false
        var elementStart: Int? = nil
        var elements: [ArraySlice<UInt8>] = []
        while index < line.count {
            let byte = line[index]
            switch byte {
            case quote:
                let start = index + 1
                index += 1
                while index < line.count, line[index] != quote {
                    index += line[index] == backslash ? 2 : 1
                }
                guard index < line.count else { return nil }
                if insideTarget && depth == 2 { return nil }  // a string element
                lastString = line[start..<index]
            case UInt8(ascii: ":"):
                if depth == 1 { lastKey = lastString }
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                if insideTarget && depth == 2 {
                    guard byte == UInt8(ascii: "{") else { return nil }
                    elementStart = index
                }
                depth += 1
                if byte == UInt8(ascii: "["), depth == 2, lastKey.elementsEqual(target) { insideTarget = true }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if insideTarget {
                    if depth == 2, let start = elementStart {
                        elements.append(line[start...index])
                        elementStart = nil
                    }
                    if depth == 1 { return elements }
                }
            case UInt8(ascii: ","), 32, 9, 10, 13:
                break
            default:
                if insideTarget && depth == 2 { return nil }  // a number, true, false or null element
            }
            index += 1
        }
        return nil
    }
}
