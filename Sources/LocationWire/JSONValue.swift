/// A JSON value (RFC 8259 §3), as `JSONReader` reads it and `encoded(prettyPrinted:)` writes it.
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    /// A number, as the text that stands for it (RFC 8259 §6 grammar), so no digit is lost before the
    /// caller picks a type; `JSONValue(_ number: Double)` makes one from a Double.
    case number(String)
    case string(String)
    case array([JSONValue])
    /// An object's members by name. A name given twice keeps its first value (as Foundation's
    /// `JSONDecoder` does); RFC 8259 §4 leaves the choice to the reader.
    case object([String: JSONValue])

    /// A number in the shortest text that reads back as `number` (whole numbers under 10^15 without a
    /// fraction).
    /// - Precondition: `number` is finite (JSON has no NaN or infinity, RFC 8259 §6).
    public init(_ number: Double) {
        precondition(number.isFinite, "JSON numbers are finite")
        var writer = JSONObjectWriter(reservingCapacity: 24)
        writer.appendDouble(number)
        self = .number(String(decoding: writer.bytes, as: UTF8.self))
    }

    /// The member named `key` of an object; nil when absent or when this is not an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] } else { return nil }
    }

    /// The value as text: compact, or pretty-printed (two spaces per level, `"name" : value`, as
    /// Foundation's `JSONEncoder` writes with `.prettyPrinted`). Object members are written sorted by
    /// name, so equal values give equal text. No newline at the end.
    public func encoded(prettyPrinted: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        write(to: &out, indent: prettyPrinted ? 0 : nil)
        return out
    }

    /// Appends the value; `indent` is the current level when pretty-printing, nil for compact text.
    private func write(to out: inout [UInt8], indent: Int?) {
        switch self {
        case .null: out += "null".utf8
        case .bool(let b): out += (b ? "true" : "false").utf8
        case .number(let text): out += text.utf8
        case .string(let s): Self.writeString(s, to: &out)
        case .array(let items):
            writeContainer(open: "[", close: "]", items.map { (nil, $0) }, to: &out, indent: indent)
        case .object(let members):
            let sorted = members.sorted { $0.key < $1.key }.map { (Optional($0.key), $0.value) }
            writeContainer(open: "{", close: "}", sorted, to: &out, indent: indent)
        }
    }

    private func writeContainer(open: Unicode.Scalar, close: Unicode.Scalar, _ items: [(String?, JSONValue)],
                                to out: inout [UInt8], indent: Int?) {
        out.append(UInt8(ascii: open))
        for (i, (key, value)) in items.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            if let indent { Self.newline(indent + 1, &out) }
            if let key {
                Self.writeString(key, to: &out)
                out += (indent == nil ? ":" : " : ").utf8
            }
            value.write(to: &out, indent: indent.map { $0 + 1 })
        }
        if let indent, !items.isEmpty { Self.newline(indent, &out) }
        out.append(UInt8(ascii: close))
    }

    private static func newline(_ level: Int, _ out: inout [UInt8]) {
        out.append(10)
        out += repeatElement(UInt8(ascii: " "), count: 2 * level)
    }

    private static func writeString(_ s: String, to out: inout [UInt8]) {
        var writer = JSONObjectWriter(reservingCapacity: s.utf8.count + 2)
        writer.appendString(s)
        writer.append(to: &out)
    }
}

extension JSONValue {
    /// The number as the nearest Double; nil for other values.
    ///
    /// Like Foundation's `JSONDecoder`, refuses what a Double cannot stand for: a magnitude too large
    /// (it would be infinite) or a nonzero number so small it would read as zero.
    public var doubleValue: Double? {
        guard case .number(let text) = self, let value = Double(text), value.isFinite else { return nil }
        if value == 0, text.utf8.prefix(while: { $0 != UInt8(ascii: "e") && $0 != UInt8(ascii: "E") })
            .contains(where: { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") }) {
            return nil
        }
        return value
    }
}

// Typed reading of an object's members, shared by `RequestParser` and `ServerMessage.decode`; each
// words a failure its own way.
extension JSONValue {
    /// The string; nil for other values.
    var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }

    /// The boolean; nil for other values.
    var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }

    /// The number as an Int, however written (`7`, `7.0`, `7e0`; `RequestParser.integer`); nil for other
    /// values and for numbers that are not a whole Int.
    var integerValue: Int? { if case .number(let text) = self { return RequestParser.integer(text) } else { return nil } }

    /// True for a number, whether or not a Swift type can hold it.
    var isNumber: Bool { if case .number = self { return true } else { return false } }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// The member named `key`; nil when absent or `null` (both protocols read `null` as "none").
    func present(_ key: String) -> JSONValue? {
        guard let v = self[key], v != .null else { return nil }
        return v
    }
}
