private let decimalScales: [Double] = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]

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
    private let buffer: ByteBuffer
    private var scratch: [UInt8] = []
    public var bytes: [UInt8] { Array(UnsafeBufferPointer(start: buffer.base, count: buffer.count)) }
    private var first = true

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

    mutating func key(_ name: StaticString) {
        if !first { buffer.append(UInt8(ascii: ",")) }
        first = false
        let n = name.utf8CodeUnitCount
        buffer.ensure(n + 3)
        let p = buffer.base + buffer.count
        p[0] = UInt8(ascii: "\"")
        (p + 1).update(from: name.utf8Start, count: n)
        p[n + 1] = UInt8(ascii: "\"")
        p[n + 2] = UInt8(ascii: ":")
        buffer.count += n + 3
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
        let scale = decimalScales[decimals]
        let scaled = (value * scale).rounded()
        key(name)
        appendDouble(abs(scaled) < 9e15 ? scaled / scale : value)
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
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = value
        var count = 0
        withUnsafeMutableBytes(of: &digits) { d in
            while n > 0 {
                d[count] = UInt8(48 + n % 10)
                n /= 10
                count += 1
            }
            buffer.ensure(count)
            for i in stride(from: count - 1, through: 0, by: -1) { buffer.base[buffer.count] = d[i]; buffer.count += 1 }
        }
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
