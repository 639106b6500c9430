private let decimalScales: [Double] = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]

/// A small, fast writer of one JSON object at a time into a byte buffer (no Foundation).
///
/// Numbers are written in the shortest form that reads back as the same Double (Swift's `description`),
/// so nothing is lost in transit; non-finite values are never written.
public struct JSONObjectWriter {
    public private(set) var bytes: [UInt8]
    private var first = true

    public init(reservingCapacity capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Starts an object.
    public mutating func begin() {
        bytes.append(UInt8(ascii: "{"))
        first = true
    }

    /// Ends the object and appends a newline (one object per line, as gpsd's protocol).
    public mutating func end(newline: Bool = true) {
        bytes.append(UInt8(ascii: "}"))
        if newline { bytes.append(10) }
    }

    /// Clears the buffer, keeping its capacity.
    public mutating func reset() { bytes.removeAll(keepingCapacity: true) }

    mutating func key(_ name: StaticString) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
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
        bytes.append(contentsOf: value ? Array("true".utf8) : Array("false".utf8))
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
        bytes.append(UInt8(ascii: "\""))
        write(&bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Starts an array of objects named `name`; write each with `beginElement()` … `endElement()`.
    public mutating func beginArray(_ name: StaticString) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        first = true
    }

    /// Starts one object inside an array.
    public mutating func beginElement() {
        if !first { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "{"))
        first = true
    }

    /// Ends one object inside an array.
    public mutating func endElement() {
        bytes.append(UInt8(ascii: "}"))
        first = false
    }

    /// Ends the array.
    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        first = false
    }

    mutating func appendInteger(_ value: Int) {
        if value < 0 {
            bytes.append(UInt8(ascii: "-"))
            appendUnsigned(UInt(value.magnitude))
        } else {
            appendUnsigned(UInt(value))
        }
    }

    mutating func appendUnsigned(_ value: UInt) {
        if value < 10 {
            bytes.append(UInt8(48 + value))
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
            for i in stride(from: count - 1, through: 0, by: -1) { bytes.append(d[i]) }
        }
    }

    mutating func appendDouble(_ value: Double) {
        // Whole numbers of moderate size print without a fraction's noise; others shortest round-trip.
        if value == value.rounded(), abs(value) < 1e15 {
            appendInteger(Int(value))
            return
        }
        bytes.append(contentsOf: value.description.utf8)
    }

    mutating func appendString(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [92, 34])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [92, 92])
            case 10: bytes.append(contentsOf: [92, UInt8(ascii: "n")])
            case 13: bytes.append(contentsOf: [92, UInt8(ascii: "r")])
            case 9: bytes.append(contentsOf: [92, UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
