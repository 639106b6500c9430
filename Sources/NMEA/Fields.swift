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
        decimalParts()?.value
    }

    /// Parses `[+-]digits[.digits]` into its decimal parts; nil when the field is not of that form.
    @inline(__always)
    func decimalParts() -> DecimalParts? {
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
        return DecimalParts(negative: negative, integer: integer, fraction: fraction, fractionDigits: fractionDigits)
    }
}

/// A field read as `[+-]digits[.digits]`: its sign, its integer part, and up to 15 fraction digits.
struct DecimalParts {
    var negative: Bool
    /// The integer part (at most 18 digits).
    var integer: UInt64
    /// The first `fractionDigits` fraction digits as an integer (`.0450` → 450, 4 digits).
    var fraction: UInt64
    var fractionDigits: Int

    /// The number as a Double.
    @inline(__always)
    var value: Double {
        var value = Double(integer)
        if fractionDigits > 0 { value += Double(fraction) / powersOfTen[fractionDigits] }
        return negative ? -value : value
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
    /// The address a cursor over an empty buffer uses (one byte, allocated once, never written or read:
    /// every read checks `i < end`), so sharing it between threads is sound.
    nonisolated(unsafe) private static let noBytes = UnsafePointer(UnsafeMutablePointer<UInt8>.allocate(capacity: 1))
    /// Number of the field that `next()` returns next, counting from 1 after the address.
    private(set) var index = 1

    /// - Parameters:
    ///   - bytes: the sentence after its address field's comma (or at its end).
    init(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, sentence: StaticString) {
        self.sentence = sentence
        // An empty buffer may have no address: then there is nothing to read, and `hasMore` holds only
        // for `start` 0, where `next()` reads no byte (i < end fails at once).
        self.base = bytes.baseAddress ?? FieldCursor.noBytes
        self.end = bytes.count
        self.position = start
    }

    /// True while fields remain.
    var hasMore: Bool { position <= end }

    /// Fields not yet read.
    var remaining: Int {
        guard position <= end else { return 0 }
        return 1 + ByteScanning.count(of: UInt8(ascii: ","), base, from: position, count: end)
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

    /// Next field, and its decimal parts parsed in the same pass: the digits are read while looking for
    /// the comma, so a numeric field is scanned once. `parts` is exactly `field.decimalParts()`: nil when
    /// the field is empty or not `[+-]digits[.digits]`.
    @inline(__always)
    mutating func nextNumber() -> (field: Field, parts: DecimalParts?) {
        index += 1
        guard position <= end else { return (.absent, nil) }
        let start = position
        var i = start
        var negative = false
        if i < end && (base[i] == UInt8(ascii: "-") || base[i] == UInt8(ascii: "+")) {
            negative = base[i] == UInt8(ascii: "-")
            i += 1
        }
        var integer: UInt64 = 0
        var integerDigits = 0
        var fits = true
        while i < end, base[i] &- 48 < 10 {
            if integerDigits < 18 { integer = integer &* 10 &+ UInt64(base[i] &- 48) } else { fits = false }
            integerDigits += 1
            i += 1
        }
        var fraction: UInt64 = 0
        var fractionDigits = 0
        if i < end, base[i] == UInt8(ascii: ".") {
            i += 1
            while i < end, base[i] &- 48 < 10 {
                if fractionDigits < 15 {
                    fraction = fraction &* 10 &+ UInt64(base[i] &- 48)
                    fractionDigits += 1
                }
                i += 1
            }
        }
        var parts: DecimalParts? = nil
        if i == end || base[i] == UInt8(ascii: ",") {
            if fits && integerDigits + fractionDigits > 0 {
                parts = DecimalParts(negative: negative, integer: integer, fraction: fraction,
                                     fractionDigits: fractionDigits)
            }
        } else {
            // Not a number: find the comma.
            while i < end && base[i] != UInt8(ascii: ",") { i += 1 }
        }
        position = i + 1
        return (Field(base: base + start, count: i - start), parts)
    }

    @inline(__always)
    mutating func skip(_ n: Int) {
        for _ in 0..<n { _ = next() }
    }

    private func malformed() -> SentenceError { .malformedField(sentence: sentence.description, field: index - 1) }

    /// Next field when it is empty or one to nine plain digits — most GSV and GSA fields, and the small
    /// numbers of other sentences: −1 for empty, else the number. nil, with the cursor not moved, for any
    /// other field (absent, signed, with a fraction, longer, not a number): the caller reads it with
    /// `nextNumber()`. One short loop per field, without the sign, fraction and overflow cases.
    @inline(__always)
    mutating func nextSmallUnsigned() -> Int? {
        guard position <= end else { return nil }
        var i = position
        var value = 0
        while i < end {
            let digit = base[i] &- 48
            if digit >= 10 { break }
            value = value &* 10 &+ Int(digit)
            i += 1
        }
        guard i == end || base[i] == UInt8(ascii: ","), i - position <= 9 else { return nil }
        let empty = i == position
        index += 1
        position = i + 1
        return empty ? -1 : value
    }

    /// Next field as a decimal number; nil when empty.
    @inline(__always)
    mutating func decimal() throws(SentenceError) -> Double? {
        if let plain = nextPlainDecimal() { return plain.isEmpty ? nil : plain.value }
        return try generalDecimal()
    }

    /// Next field when it is empty or `digits[.digits]` with at most nine digits on each side — nearly every
    /// decimal field (DOPs, altitudes, speeds, SNRs): its value, the one `decimalValue` gives. nil, with the
    /// cursor not moved, for any other field, which `generalDecimal()` then reads. One pass, no sign or
    /// overflow cases.
    @inline(__always)
    mutating func nextPlainDecimal() -> (value: Double, isEmpty: Bool)? {
        guard position <= end else { return nil }
        var i = position
        var integer = 0
        while i < end {
            let digit = base[i] &- 48
            if digit >= 10 { break }
            integer = integer &* 10 &+ Int(digit)
            i += 1
        }
        let integerDigits = i - position
        var value = Double(integer)
        if i < end && base[i] == UInt8(ascii: ".") {
            i += 1
            let fractionStart = i
            var fraction = 0
            while i < end {
                let digit = base[i] &- 48
                if digit >= 10 { break }
                fraction = fraction &* 10 &+ Int(digit)
                i += 1
            }
            let fractionDigits = i - fractionStart
            guard fractionDigits <= 9, integerDigits + fractionDigits > 0 else { return nil }
            if fractionDigits > 0 { value += Double(fraction) / powersOfTen[fractionDigits] }
        }
        guard i == end || base[i] == UInt8(ascii: ","), integerDigits <= 9 else { return nil }
        let empty = i == position
        index += 1
        position = i + 1
        return (value, empty)
    }

    /// `decimal()` for the fields `nextSmallUnsigned()` leaves: kept out of line so that the short path
    /// inlines into the sentence parsers.
    @inline(never)
    private mutating func generalDecimal() throws(SentenceError) -> Double? {
        let (f, parts) = nextNumber()
        if let parts { return parts.value }
        if f.isEmpty { return nil }
        throw malformed()
    }

    /// `decimal()` for fields that are nearly always small whole numbers (GSV elevation, azimuth and SNR):
    /// tries `nextSmallUnsigned()`'s shorter loop first.
    @inline(__always)
    mutating func wholeOrDecimal() throws(SentenceError) -> Double? {
        if let small = nextSmallUnsigned() { return small < 0 ? nil : Double(small) }
        return try decimal()
    }

    /// Next field as a whole number; nil when empty. A decimal with a zero fraction ("08.0") is accepted.
    @inline(__always)
    mutating func integer() throws(SentenceError) -> Int? {
        if let small = nextSmallUnsigned() { return small < 0 ? nil : small }
        return try generalInteger()
    }

    /// `integer()` for the fields `nextSmallUnsigned()` leaves (out of line, as `generalDecimal()`).
    @inline(never)
    private mutating func generalInteger() throws(SentenceError) -> Int? {
        let (f, parts) = nextNumber()
        if f.isEmpty { return nil }
        guard let p = parts, p.fraction == 0 else { throw malformed() }
        return p.negative ? -Int(p.integer) : Int(p.integer)
    }

    /// Next field as one character; nil when empty.
    @inline(__always)
    mutating func character() -> UInt8? { next().character }

    /// Next field as UTC time of day `hhmmss[.s…]`, in milliseconds (fraction truncated to ms); nil when empty.
    /// A second of 60 is accepted (leap second). Source: NMEA 0183 v4.11 §6.1 "UTC time".
    mutating func timeOfDay() throws(SentenceError) -> Int? {
        let (f, parts) = nextNumber()
        if f.isEmpty { return nil }
        // Exactly six digits `hhmmss` before the optional fraction: no sign, no fewer digits.
        guard f.count >= 6, f[0] &- 48 < 10, f.count == 6 || f[6] == UInt8(ascii: "."),
              let p = parts, !p.negative else { throw malformed() }
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
        let (value, parts) = nextNumber()
        let hemisphere = next()
        if value.isEmpty || hemisphere.isEmpty { return nil }
        guard let p = parts, !p.negative else {
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
        let (f, parts) = nextNumber()
        if f.isEmpty { return nil }
        guard f.count == 6, f[0] &- 48 < 10, let p = parts, p.fractionDigits == 0, !p.negative else {
            throw malformed()
        }
        let dd = Int(p.integer / 10_000), mm = Int(p.integer / 100 % 100), yy = Int(p.integer % 100)
        guard let date = CivilDate(year: yy >= 80 ? 1900 + yy : 2000 + yy, month: mm, day: dd) else {
            throw malformed()
        }
        return date
    }
}
