import LocationCore

/// Writes one JSON object the way gpsd's `str_appendf` calls do: members in call order, numbers through
/// `PrintfDecimal`, strings escaped as gpsd's `json_stringify()`, no spaces, CR LF after a top-level object.
struct GpsdObject {
    /// The text so far.
    var out: [UInt8] = []
    private var first = true

    /// A top-level object, `{"class":"NAME"` so far.
    init(class name: StaticString) {
        out.reserveCapacity(384)
        out.append(UInt8(ascii: "{"))
        key("class")
        out.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(UInt8(ascii: "\""))
    }

    /// A nested object, `{` so far.
    init() {
        out.append(UInt8(ascii: "{"))
    }

    mutating func key(_ name: StaticString) {
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        out.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: ":"))
    }

    mutating func integer(_ name: StaticString, _ value: Int?) {
        guard let value else { return }
        key(name)
        out.append(contentsOf: Array(String(value).utf8))
    }

    mutating func number(_ name: StaticString, _ value: Double?, _ decimals: Int) {
        guard let value, value.isFinite else { return }
        key(name)
        PrintfDecimal.append(value, decimals: decimals, to: &out)
    }

    mutating func bool(_ name: StaticString, _ value: Bool) {
        key(name)
        let text: StaticString = value ? "true" : "false"
        text.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    mutating func string(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        key(name)
        GpsdObject.appendQuoted(value, to: &out)
    }

    mutating func time(_ name: StaticString, _ value: UTCTime) {
        key(name)
        out.append(UInt8(ascii: "\""))
        value.appendISO8601(to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// Closes a top-level object with `}` CR LF and appends it to `buffer`.
    mutating func end(to buffer: inout [UInt8]) {
        out.append(contentsOf: [UInt8(ascii: "}"), 13, 10])
        buffer.append(contentsOf: out)
    }

    /// Closes a nested object with `}` and appends it to `buffer`.
    mutating func close(to buffer: inout [UInt8]) {
        out.append(UInt8(ascii: "}"))
        buffer.append(contentsOf: out)
    }

    /// Appends `"text"` with gpsd's escapes (`json_stringify()`: `\"`, `\\`, `\b \f \n \r \t`, other control
    /// and non-ASCII bytes as `\u00XX`).
    static func appendQuoted(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        let hex = Array("0123456789abcdef".utf8)
        for b in text.utf8 {
            switch b {
            case 0x22, 0x5C: out.append(0x5C); out.append(b)
            case 0x08: out.append(contentsOf: Array("\\b".utf8))
            case 0x0C: out.append(contentsOf: Array("\\f".utf8))
            case 0x0A: out.append(contentsOf: Array("\\n".utf8))
            case 0x0D: out.append(contentsOf: Array("\\r".utf8))
            case 0x09: out.append(contentsOf: Array("\\t".utf8))
            case 0..<0x20, 0x7F...:
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 15)])
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
