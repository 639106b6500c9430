import LocationCore

/// Why a checksummed sentence could not be decoded.
public enum SentenceError: Error, Hashable, Sendable {
    /// The address field is not `$TTSSS` / `$PXXX...` / `!TTSSS`.
    case malformedAddress
    /// A field does not hold what the sentence definition says (e.g. letters in a number, minutes ≥ 60).
    /// `field` counts from 1 after the address, as NMEA 0183 tables do.
    case malformedField(sentence: String, field: Int)
    /// Fields the sentence cannot do without are missing (e.g. a GSV without its message counters).
    case missingField(sentence: String, field: Int)
}

/// One comma-separated field of a sentence: a view into the framer's buffer, valid while it lives.
struct Field {
    let base: UnsafePointer<UInt8>?
    let count: Int

    static var absent: Field { Field(base: nil, count: 0) }

    @inline(__always) var isEmpty: Bool { count == 0 }

    @inline(__always) subscript(i: Int) -> UInt8 { base![i] }

    /// The single character of a one-character field, nil when empty.
    @inline(__always) var character: UInt8? { count == 0 ? nil : self[0] }

    /// True when the field is exactly `text`.
    func equals(_ text: StaticString) -> Bool {
        guard count == text.utf8CodeUnitCount else { return false }
        let t = text.utf8Start
        for i in 0..<count where self[i] != t[i] { return false }
        return true
    }

    var string: String {
        guard let base else { return "" }
        return String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self)
    }

    /// The field as a decimal number; nil when empty or not a number.
    @inline(__always)
    var decimalValue: Double? {
        guard let p = decimalParts() else { return nil }
        var value = Double(p.integer)
        if p.fractionDigits > 0 { value += Double(p.fraction) / powersOfTen[p.fractionDigits] }
        return p.negative ? -value : value
    }

    /// Parses `[+-]digits[.digits]` into its decimal parts; nil when the field is not of that form.
    @inline(__always)
    func decimalParts() -> (negative: Bool, integer: UInt64, fraction: UInt64, fractionDigits: Int)? {
        var i = 0
        var negative = false
        if count > 0 && (self[0] == UInt8(ascii: "-") || self[0] == UInt8(ascii: "+")) {
            negative = self[0] == UInt8(ascii: "-")
            i = 1
        }
        var integer: UInt64 = 0
        var integerDigits = 0
        while i < count, self[i] &- 48 < 10 {
            if integerDigits < 18 { integer = integer &* 10 &+ UInt64(self[i] &- 48) } else { return nil }
            integerDigits += 1
            i += 1
        }
        var fraction: UInt64 = 0
        var fractionDigits = 0
        if i < count, self[i] == UInt8(ascii: ".") {
            i += 1
            while i < count, self[i] &- 48 < 10 {
                if fractionDigits < 15 {
                    fraction = fraction &* 10 &+ UInt64(self[i] &- 48)
                    fractionDigits += 1
                }
                i += 1
            }
        }
        guard i == count, integerDigits + fractionDigits > 0 else { return nil }
        return (negative, integer, fraction, fractionDigits)
    }
}

/// Exact powers of ten as Doubles (all exactly representable up to 1e22).
let powersOfTen: [Double] = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16]

/// Walks the fields of one sentence from left to right. Reading past the last field yields empty fields,
/// which is how NMEA treats the trailing fields that older protocol versions do not send.
struct FieldCursor {
    let sentence: StaticString
    private let base: UnsafePointer<UInt8>
    private let end: Int
    private var position: Int
    /// Number of the field that `next()` returns next, counting from 1 after the address.
    private(set) var index = 1

    /// - Parameters:
    ///   - bytes: the sentence after its address field's comma (or at its end).
    init(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, sentence: StaticString) {
        self.sentence = sentence
        self.base = bytes.baseAddress!
        self.end = bytes.count
        self.position = start
    }

    /// True while fields remain.
    var hasMore: Bool { position <= end }

    /// Fields not yet read.
    var remaining: Int {
        guard position <= end else { return 0 }
        var n = 1
        var i = position
        while i < end {
            if base[i] == UInt8(ascii: ",") { n += 1 }
            i += 1
        }
        return n
    }

    @inline(__always)
    mutating func next() -> Field {
        index += 1
        guard position <= end else { return .absent }
        var i = position
        while i < end && base[i] != UInt8(ascii: ",") { i += 1 }
        let field = Field(base: base + position, count: i - position)
        position = i + 1
        return field
    }

    @inline(__always)
    mutating func skip(_ n: Int) {
        for _ in 0..<n { _ = next() }
    }

    private func malformed() -> SentenceError { .malformedField(sentence: sentence.description, field: index - 1) }

    /// Next field as a decimal number; nil when empty.
    @inline(__always)
    mutating func decimal() throws(SentenceError) -> Double? {
        let f = next()
        if f.isEmpty { return nil }
        guard let value = f.decimalValue else { throw malformed() }
        return value
    }

    /// Next field as a whole number; nil when empty. A decimal with a zero fraction ("08.0") is accepted.
    @inline(__always)
    mutating func integer() throws(SentenceError) -> Int? {
        let f = next()
        if f.isEmpty { return nil }
        guard let p = f.decimalParts(), p.fraction == 0 else { throw malformed() }
        return p.negative ? -Int(p.integer) : Int(p.integer)
    }

    /// Next field as one character; nil when empty.
    @inline(__always)
    mutating func character() -> UInt8? { next().character }

    /// Next field as UTC time of day `hhmmss[.s…]`, in milliseconds (fraction truncated to ms); nil when empty.
    /// A second of 60 is accepted (leap second). Source: NMEA 0183 v4.11 §6.1 "UTC time".
    mutating func timeOfDay() throws(SentenceError) -> Int? {
        let f = next()
        if f.isEmpty { return nil }
        // Exactly six digits `hhmmss` before the optional fraction: no sign, no fewer digits.
        guard f.count >= 6, f[0] &- 48 < 10, f.count == 6 || f[6] == UInt8(ascii: "."),
              let p = f.decimalParts(), !p.negative else { throw malformed() }
        let hh = Int(p.integer / 10_000), mm = Int(p.integer / 100 % 100), ss = Int(p.integer % 100)
        guard hh < 24, mm < 60, ss <= 60, ss < 60 || (hh == 23 && mm == 59) else { throw malformed() }
        var ms = 0
        if p.fractionDigits > 0 {
            let scaled = p.fractionDigits >= 3
                ? p.fraction / UInt64(powersOfTen[p.fractionDigits - 3])
                : p.fraction * UInt64(powersOfTen[3 - p.fractionDigits])
            ms = Int(scaled)
        }
        return ((hh * 60 + mm) * 60 + ss) * 1000 + ms
    }

    /// Next two fields as `(d)ddmm.mmmm` and a hemisphere letter; degrees, negative south/west. nil when
    /// either field is empty. Source: NMEA 0183 v4.11 §6.2 "Latitude"/"Longitude".
    mutating func angle(positive: UInt8, negative: UInt8, limit: Double) throws(SentenceError) -> Double? {
        let value = next()
        let hemisphere = next()
        if value.isEmpty || hemisphere.isEmpty { return nil }
        guard let p = value.decimalParts(), !p.negative else {
            throw SentenceError.malformedField(sentence: sentence.description, field: index - 2)
        }
        let degrees = p.integer / 100
        let wholeMinutes = p.integer % 100
        var minutes = Double(wholeMinutes)
        if p.fractionDigits > 0 { minutes += Double(p.fraction) / powersOfTen[p.fractionDigits] }
        let result = Double(degrees) + minutes / 60
        guard minutes < 60, result <= limit else {
            throw SentenceError.malformedField(sentence: sentence.description, field: index - 2)
        }
        switch hemisphere[0] {
        case positive where hemisphere.count == 1: return result
        case negative where hemisphere.count == 1: return -result
        default: throw malformed()
        }
    }

    /// Next field as `ddmmyy` (RMC date); nil when empty. Two-digit years 80–99 are 19xx, 00–79 20xx.
    mutating func dateDDMMYY() throws(SentenceError) -> CivilDate? {
        let f = next()
        if f.isEmpty { return nil }
        guard f.count == 6, f[0] &- 48 < 10, let p = f.decimalParts(), p.fractionDigits == 0, !p.negative else {
            throw malformed()
        }
        let dd = Int(p.integer / 10_000), mm = Int(p.integer / 100 % 100), yy = Int(p.integer % 100)
        guard let date = CivilDate(year: yy >= 80 ? 1900 + yy : 2000 + yy, month: mm, day: dd) else {
            throw malformed()
        }
        return date
    }
}
