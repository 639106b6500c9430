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
        if value < 0 { out.append(UInt8(ascii: "-")) }
        PrintfDecimal.appendDigits(UInt64(value.magnitude), minimumCount: 1, to: &out)
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

    /// - Parameter escapingSolidus: `/` as `\/` too, as gpsd 3.22 quotes a client's unrecognized input (measured).
    mutating func string(_ name: StaticString, _ value: String?, escapingSolidus: Bool = false) {
        guard let value else { return }
        key(name)
        GpsdObject.appendQuoted(value, escapingSolidus: escapingSolidus, to: &out)
    }

    mutating func time(_ name: StaticString, _ value: UTCTime) {
        key(name)
        out.append(UInt8(ascii: "\""))
        value.appendISO8601(to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// Closes a top-level object with `}` CR LF and appends it to `buffer`.
    mutating func end(to buffer: inout [UInt8]) {
        out.append(UInt8(ascii: "}"))
        out.append(13)
        out.append(10)
        buffer.append(contentsOf: out)
    }

    /// Closes a nested object with `}` and appends it to `buffer`.
    mutating func close(to buffer: inout [UInt8]) {
        out.append(UInt8(ascii: "}"))
        buffer.append(contentsOf: out)
    }

    /// Opens an object nested in this one, written into the same buffer (after its key, or its array's
    /// `[`/`,`): the fields that follow are its, until `closeNested()`.
    mutating func openNested() {
        out.append(UInt8(ascii: "{"))
        first = true
    }

    /// Closes the object `openNested()` opened; fields that follow are this object's again.
    mutating func closeNested() {
        out.append(UInt8(ascii: "}"))
        first = false
    }

    /// Appends `"text"` with gpsd's escapes (`json_stringify()`: `\"`, `\\`, `\b \f \n \r \t`, other control
    /// and non-ASCII bytes as `\u00XX`).
    static func appendQuoted(_ text: String, escapingSolidus: Bool = false, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for b in text.utf8 {
            switch b {
            case 0x22, 0x5C: out.append(0x5C); out.append(b)
            case 0x2F where escapingSolidus: out.append(0x5C); out.append(b)
            case 0x08: out.append(0x5C); out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(0x5C); out.append(UInt8(ascii: "f"))
            case 0x0A: out.append(0x5C); out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(0x5C); out.append(UInt8(ascii: "r"))
            case 0x09: out.append(0x5C); out.append(UInt8(ascii: "t"))
            case 0..<0x20, 0x7F...:
                out.append(0x5C)
                out.append(UInt8(ascii: "u"))
                out.append(UInt8(ascii: "0"))
                out.append(UInt8(ascii: "0"))
                out.append(hexDigit(b >> 4))
                out.append(hexDigit(b & 15))
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// The lower-case hexadecimal digit of `nibble` (0...15).
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
