import LocationCore

private let decimalScales: [Double] = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]
/// The same powers of ten as integers.
private let decimalDivisors: [UInt] = [1, 10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000,
                                       1_000_000_000]
/// For N decimals, the smallest scaled magnitude whose value is at least 1e-4 (below it, `description`
/// switches to exponent notation): 10^(N−4), or 1.
private let decimalFloors: [UInt] = [1, 1, 1, 1, 1, 10, 100, 1000, 10_000, 100_000]

/// A small, fast writer of one JSON object at a time into a byte buffer (no Foundation).
///
/// Numbers are written in the shortest form that reads back as the same Double (Swift's `description`),
/// so nothing is lost in transit; non-finite values are never written.
final class ByteBuffer {
    var base: UnsafeMutablePointer<UInt8>
    var capacity: Int
    var count = 0
    init(capacity: Int) { self.capacity = max(capacity, 64); base = .allocate(capacity: self.capacity) }
    deinit { base.deallocate() }
    @inline(__always) func ensure(_ n: Int) {
        if count + n > capacity { grow(count + n) }
    }
    @inline(never) func grow(_ needed: Int) {
        var c = capacity * 2
        while c < needed { c *= 2 }
        let b = UnsafeMutablePointer<UInt8>.allocate(capacity: c)
        b.update(from: base, count: count)
        base.deallocate()
        base = b
        capacity = c
    }
    @inline(__always) func append(_ byte: UInt8) { ensure(1); base[count] = byte; count += 1 }
    @inline(__always) func append(_ p: UnsafePointer<UInt8>, _ n: Int) {
        ensure(n); (base + count).update(from: p, count: n); count += n
    }
}

public struct JSONObjectWriter {
    /// The object written so far (internal: fixed-layout encoders in this module write into it directly).
    let buffer: ByteBuffer
    private var scratch: [UInt8] = []
    public var bytes: [UInt8] { Array(UnsafeBufferPointer(start: buffer.base, count: buffer.count)) }
    /// True until the current object or array has a member (no comma before the first one).
    var first = true

    public init(reservingCapacity capacity: Int = 256) {
        buffer = ByteBuffer(capacity: capacity)
    }

    /// Appends the object to `out`.
    public func append(to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: buffer.base, count: buffer.count))
    }

    /// Starts an object.
    public mutating func begin() {
        buffer.append(UInt8(ascii: "{"))
        first = true
    }

    /// Ends the object and appends a newline (one object per line, as gpsd's protocol).
    public mutating func end(newline: Bool = true) {
        buffer.append(UInt8(ascii: "}"))
        if newline { buffer.append(10) }
    }

    /// Clears the buffer, keeping its capacity.
    public mutating func reset() { buffer.count = 0 }

    /// Writes `,"name":` (no comma before the first member). Names are short: a byte loop beats `memcpy`.
    @inline(__always)
    mutating func key(_ name: StaticString) {
        let n = name.utf8CodeUnitCount
        buffer.ensure(n + 4)
        var p = buffer.base + buffer.count
        if !first { p[0] = UInt8(ascii: ","); p += 1 }
        p[0] = UInt8(ascii: "\"")
        let text = name.utf8Start
        for i in 0..<n { p[1 + i] = text[i] }
        p[n + 1] = UInt8(ascii: "\"")
        p[n + 2] = UInt8(ascii: ":")
        buffer.count = p + n + 3 - buffer.base
        first = false
    }

    public mutating func field(_ name: StaticString, _ value: Int) {
        key(name)
        appendInteger(value)
    }

    public mutating func field(_ name: StaticString, _ value: Int?) {
        if let value { field(name, value) }
    }

    public mutating func field(_ name: StaticString, _ value: Double?) {
        guard let value, value.isFinite else { return }
        key(name)
        appendDouble(value)
    }

    /// A number rounded to `decimals` places (at most 9), printed in its shortest form: `400.9`, not
    /// `400.90000000000003`. gpsd prints lat/lon to 9 places, metres to 3–4.
    public mutating func field(_ name: StaticString, _ value: Double?, decimals: Int) {
        guard let value, value.isFinite else { return }
        key(name)
        appendDouble(value, decimals: decimals)
    }

    public mutating func field(_ name: StaticString, _ value: Bool) {
        key(name)
        let text: StaticString = value ? "true" : "false"
        buffer.append(text.utf8Start, text.utf8CodeUnitCount)
    }

    /// A string field; escapes quotes, backslashes and control characters.
    public mutating func field(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        key(name)
        appendString(value)
    }

    /// A string field whose value is constant ASCII text without characters that need escaping (a class name
    /// such as `"TPV"`): copied as it is.
    public mutating func field(_ name: StaticString, constant value: StaticString) {
        key(name)
        let n = value.utf8CodeUnitCount
        buffer.ensure(n + 2)
        buffer.base[buffer.count] = UInt8(ascii: "\"")
        (buffer.base + buffer.count + 1).update(from: value.utf8Start, count: n)
        buffer.base[buffer.count + 1 + n] = UInt8(ascii: "\"")
        buffer.count += n + 2
    }

    /// A string field whose value is already ASCII without characters that need escaping.
    public mutating func rawStringField(_ name: StaticString, _ write: (inout [UInt8]) -> Void) {
        key(name)
        scratch.removeAll(keepingCapacity: true)
        write(&scratch)
        buffer.append(UInt8(ascii: "\""))
        scratch.withUnsafeBufferPointer { buffer.append($0.baseAddress!, $0.count) }
        buffer.append(UInt8(ascii: "\""))
    }

    /// Starts an array of objects named `name`; write each with `beginElement()` … `endElement()`.
    public mutating func beginArray(_ name: StaticString) {
        key(name)
        buffer.append(UInt8(ascii: "["))
        first = true
    }

    /// Starts one object inside an array.
    public mutating func beginElement() {
        if !first { buffer.append(UInt8(ascii: ",")) }
        buffer.append(UInt8(ascii: "{"))
        first = true
    }

    /// Ends one object inside an array.
    public mutating func endElement() {
        buffer.append(UInt8(ascii: "}"))
        first = false
    }

    /// Ends the array.
    public mutating func endArray() {
        buffer.append(UInt8(ascii: "]"))
        first = false
    }

    /// An array member of objects, one per item in order, each item's members written by `writeMembers`;
    /// `"name":[]` for none. The one loop behind every array of objects the server's messages carry.
    mutating func objects<Item>(_ name: StaticString, _ items: [Item],
                                _ writeMembers: (Item, inout JSONObjectWriter) -> Void) {
        beginArray(name)
        for item in items {
            beginElement()
            writeMembers(item, &self)
            endElement()
        }
        endArray()
    }

    /// Starts an object member named `name`; its members follow, then `endObject()`.
    mutating func beginObject(_ name: StaticString) {
        key(name)
        buffer.append(UInt8(ascii: "{"))
        first = true
    }

    /// Ends an object member.
    mutating func endObject() {
        buffer.append(UInt8(ascii: "}"))
        first = false
    }

    /// A time member as ISO 8601 text (`UTCTime.appendISO8601`); nil is left out.
    mutating func field(_ name: StaticString, _ time: UTCTime?) {
        guard let time else { return }
        rawStringField(name) { time.appendISO8601(to: &$0) }
    }

    mutating func appendInteger(_ value: Int) {
        if value < 0 {
            buffer.append(UInt8(ascii: "-"))
            appendUnsigned(UInt(value.magnitude))
        } else {
            appendUnsigned(UInt(value))
        }
    }

    mutating func appendUnsigned(_ value: UInt) {
        if value < 10 {
            buffer.append(UInt8(48 + value))
            return
        }
        let digits = Self.decimalDigitCount(value)
        buffer.ensure(digits)
        writeDigits(value, count: digits, at: buffer.base + buffer.count)
        buffer.count += digits
    }

    /// "00" to "99": two digits per division (the classic table of fast integer printers, e.g. fmt's).
    private static var digitPairs: StaticString {
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"
    }

    /// Number of decimal digits of `value` (1 for 0).
    @inline(__always)
    static func decimalDigitCount(_ value: UInt) -> Int {
        var digits = 1
        var v = value
        while v >= 10_000 { v /= 10_000; digits += 4 }
        if v >= 1000 { return digits + 3 }
        if v >= 100 { return digits + 2 }
        if v >= 10 { return digits + 1 }
        return digits
    }

    /// Writes the `count` last decimal digits of `value` (zero-padded) at `p`.
    @inline(__always)
    func writeDigits(_ value: UInt, count: Int, at p: UnsafeMutablePointer<UInt8>) {
        let pairs = Self.digitPairs.utf8Start
        var v = value
        var i = count
        while i >= 2 {
            let pair = Int(v % 100) * 2
            v /= 100
            i -= 2
            p[i] = pairs[pair]
            p[i + 1] = pairs[pair + 1]
        }
        if i == 1 { p[0] = UInt8(truncatingIfNeeded: 48 + v % 10) }
    }

    mutating func appendDouble(_ value: Double) {
        // Whole numbers of moderate size print without a fraction's noise; others shortest round-trip.
        if value == value.rounded(), abs(value) < 1e15 {
            appendInteger(Int(value))
            return
        }
        var d = value.description
        d.withUTF8 { buffer.append($0.baseAddress!, $0.count) }
    }

    /// Writes `value` rounded to `decimals` places (at most 9, half away from zero) in its shortest form.
    ///
    /// The result is the text `appendDouble(rounded / 10^decimals)` would give, where `rounded` is
    /// `(value × 10^decimals).rounded()`, computed with integers: when `rounded` has at most 15 digits, the
    /// decimal number it stands for has at most 15 significant digits, so it is the shortest text that reads
    /// back as the nearest Double, which is the one `description` prints (IEEE 754 binary64 keeps 15 decimal
    /// digits exactly). Very small magnitudes (under 1e-4, printed with an exponent) and very large ones take
    /// the Double path.
    mutating func appendDouble(_ value: Double, decimals: Int) {
        // Whole numbers (most satellite elevations, azimuths and SNRs) print as integers: below 1e6,
        // value × 10^decimals is exact, so rounding leaves it whole.
        if abs(value) < 1e6 {
            let whole = Int(value)
            if Double(whole) == value {
                appendInteger(whole)
                return
            }
        }
        let scale = decimalScales[decimals]
        let product = value * scale
        if abs(product) < 1e15 {
            // (product).rounded(): truncate, then step away from zero when the dropped part is ≥ 0.5
            // (exact: the difference of a Double below 2^53 and its integer part is a Double).
            var rounded = Int(product)
            let rest = product - Double(rounded)
            if rest >= 0.5 { rounded += 1 } else if rest <= -0.5 { rounded -= 1 }
            let magnitude = rounded.magnitude
            if magnitude < 1_000_000_000_000_000 && (magnitude == 0 || magnitude >= decimalFloors[decimals]) {
                appendFixed(negative: rounded < 0, magnitude: magnitude, decimals: decimals)
                return
            }
        }
        let scaled = product.rounded()
        appendDouble(abs(scaled) < 9e15 ? scaled / scale : value)
    }

    /// Writes `magnitude / 10^decimals` with its sign, without trailing zeros in the fraction.
    @inline(__always)
    private mutating func appendFixed(negative: Bool, magnitude: UInt, decimals: Int) {
        let divisor = decimalDivisors[decimals]
        let whole = magnitude / divisor
        var fraction = magnitude % divisor
        if negative && magnitude != 0 { buffer.append(UInt8(ascii: "-")) }
        appendUnsigned(whole)
        guard fraction != 0 else { return }
        var digits = decimals
        while fraction % 10 == 0 { fraction /= 10; digits -= 1 }
        buffer.ensure(digits + 1)
        let p = buffer.base + buffer.count
        p[0] = UInt8(ascii: ".")
        writeDigits(fraction, count: digits, at: p + 1)
        buffer.count += digits + 1
    }

    mutating func appendString(_ value: String) {
        buffer.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): buffer.append(92); buffer.append(34)
            case UInt8(ascii: "\\"): buffer.append(92); buffer.append(92)
            case 10: buffer.append(92); buffer.append(UInt8(ascii: "n"))
            case 13: buffer.append(92); buffer.append(UInt8(ascii: "r"))
            case 9: buffer.append(92); buffer.append(UInt8(ascii: "t"))
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                for b in [92, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]] { buffer.append(b) }
            default: buffer.append(byte)
            }
        }
        buffer.append(UInt8(ascii: "\""))
    }
}
