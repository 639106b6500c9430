/// Why `JSONReader` refused a text, and where.
public struct JSONReadError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong (a closed set).
    public enum Problem: Hashable, Sendable {
        /// The text ended inside a value, or held no value at all.
        case unexpectedEnd
        /// A byte that cannot start or continue what is being read here.
        case unexpectedByte(UInt8)
        /// A number outside RFC 8259 §6's grammar: a leading zero, `+`, `.5`, `1.`, `1e`, a lone `-`.
        case invalidNumber
        /// A backslash not followed by one of `" \ / b f n r t u` (RFC 8259 §7), or `\u` without four
        /// hex digits.
        case invalidEscape
        /// A `\u` escape of a UTF-16 surrogate that is not half of a high–low pair (RFC 8259 §7).
        case loneSurrogate
        /// A byte sequence in a string that is not UTF-8 (RFC 8259 §8.1, RFC 3629).
        case invalidUTF8
        /// A raw byte below 0x20 in a string; it must be escaped (RFC 8259 §7).
        case controlCharacterInString
        /// Arrays and objects nested deeper than the limit given to the reader.
        case tooDeep(limit: Int)
        /// Something other than whitespace after the value (RFC 8259 §2: one value per text).
        case trailingData
    }

    public var problem: Problem
    /// Where, in bytes from the start of the text.
    public var offset: Int

    public init(_ problem: Problem, at offset: Int) {
        self.problem = problem
        self.offset = offset
    }

    public var description: String {
        let what: String
        switch problem {
        case .unexpectedEnd: what = "unexpected end of text"
        case .unexpectedByte(let b):
            what = b >= 0x20 && b < 0x7F ? "unexpected '\(Character(Unicode.Scalar(b)))'"
                : "unexpected byte 0x\(b < 0x10 ? "0" : "")\(String(b, radix: 16, uppercase: true))"
        case .invalidNumber: what = "invalid number"
        case .invalidEscape: what = "invalid escape sequence"
        case .loneSurrogate: what = "unpaired UTF-16 surrogate in \\u escape"
        case .invalidUTF8: what = "invalid UTF-8"
        case .controlCharacterInString: what = "unescaped control character in string"
        case .tooDeep(let limit): what = "arrays and objects nested deeper than \(limit)"
        case .trailingData: what = "data after the JSON value"
        }
        return "\(what) at byte \(offset)"
    }
}

/// A strict reader of JSON texts (RFC 8259), standard library only.
///
/// It accepts exactly RFC 8259's grammar: any value at the top level (§2), whitespace only as space,
/// tab, line feed and carriage return (§2), numbers per §6, strings per §7 in UTF-8 (§8.1), `true`,
/// `false` and `null` in lower case (§3). Everything else is refused with the byte offset of the first
/// fault: comments, trailing commas, single quotes, `NaN`, a second value after the first. A leading
/// UTF-8 byte order mark is skipped, as §8.1 allows.
public enum JSONReader {
    /// How deeply arrays and objects may nest by default. Every level is a stack frame of the reader,
    /// so the bound keeps a hostile text from exhausting the stack.
    public static let defaultMaximumDepth = 64

    /// Reads one JSON text.
    /// - Parameters:
    ///   - bytes: The text, UTF-8.
    ///   - maximumDepth: The most arrays and objects that may enclose a value (1: `[1]` is fine, `[[1]]`
    ///     is not).
    /// - Returns: The value; objects keep the first value of a repeated name.
    /// - Throws: `JSONReadError` naming the first problem and its byte offset.
    public static func read(_ bytes: [UInt8], maximumDepth: Int = defaultMaximumDepth) throws(JSONReadError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { (buffer) throws(JSONReadError) -> JSONValue in
            var parser = Parser(bytes: buffer, maximumDepth: maximumDepth)
            if buffer.starts(with: [0xEF, 0xBB, 0xBF]) { parser.offset = 3 }
            let value = try parser.value(depth: 0)
            parser.skipWhitespace()
            guard parser.offset == buffer.count else { throw JSONReadError(.trailingData, at: parser.offset) }
            return value
        }
    }
}

/// A recursive-descent parser over one buffer; `offset` is the next byte to read.
private struct Parser {
    let bytes: UnsafeBufferPointer<UInt8>
    let maximumDepth: Int
    var offset = 0

    init(bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    /// The next byte, or nil at the end.
    var peek: UInt8? { offset < bytes.count ? bytes[offset] : nil }

    func fail(_ problem: JSONReadError.Problem, at position: Int? = nil) -> JSONReadError {
        JSONReadError(problem, at: position ?? offset)
    }

    /// The error for the byte at `offset`: an unexpected byte, or the end.
    func unexpected() -> JSONReadError {
        if let b = peek { return fail(.unexpectedByte(b)) }
        return fail(.unexpectedEnd)
    }

    mutating func skipWhitespace() {
        while let b = peek, b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { offset += 1 }
    }

    /// A value after optional whitespace; `depth` is the number of arrays and objects around it.
    mutating func value(depth: Int) throws(JSONReadError) -> JSONValue {
        skipWhitespace()
        guard let b = peek else { throw fail(.unexpectedEnd) }
        switch b {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            guard depth < maximumDepth else { throw fail(.tooDeep(limit: maximumDepth)) }
            offset += 1
            return b == UInt8(ascii: "{") ? try object(depth: depth + 1) : try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw unexpected()
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONReadError) {
        for i in 0..<word.utf8CodeUnitCount {
            guard peek == word.utf8Start[i] else { throw unexpected() }
            offset += 1
        }
    }

    /// After `[`.
    mutating func array(depth: Int) throws(JSONReadError) -> JSONValue {
        var items: [JSONValue] = []
        skipWhitespace()
        if peek == UInt8(ascii: "]") { offset += 1; return .array(items) }
        while true {
            items.append(try value(depth: depth))
            skipWhitespace()
            switch peek {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "]"): offset += 1; return .array(items)
            default: throw unexpected()
            }
        }
    }

    /// After `{`.
    mutating func object(depth: Int) throws(JSONReadError) -> JSONValue {
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if peek == UInt8(ascii: "}") { offset += 1; return .object(members) }
        while true {
            skipWhitespace()
            guard peek == UInt8(ascii: "\"") else { throw unexpected() }
            let key = try string()
            skipWhitespace()
            guard peek == UInt8(ascii: ":") else { throw unexpected() }
            offset += 1
            let member = try value(depth: depth)
            if members[key] == nil { members[key] = member }
            skipWhitespace()
            switch peek {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "}"): offset += 1; return .object(members)
            default: throw unexpected()
            }
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` (RFC 8259 §6); returns its text.
    mutating func number() throws(JSONReadError) -> String {
        let start = offset
        if peek == UInt8(ascii: "-") { offset += 1 }
        if peek == UInt8(ascii: "0") {
            offset += 1
            if let b = peek, isDigit(b) { throw fail(.invalidNumber, at: start) }
        } else if digits() == 0 {
            throw fail(.invalidNumber, at: start)
        }
        if peek == UInt8(ascii: ".") {
            offset += 1
            guard digits() > 0 else { throw fail(.invalidNumber, at: start) }
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            offset += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { offset += 1 }
            guard digits() > 0 else { throw fail(.invalidNumber, at: start) }
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
    }

    /// Skips decimal digits; returns how many.
    mutating func digits() -> Int {
        let start = offset
        while let b = peek, isDigit(b) { offset += 1 }
        return offset - start
    }

    func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

    /// A string from its opening quote (RFC 8259 §7), its escapes resolved and its UTF-8 checked.
    mutating func string() throws(JSONReadError) -> String {
        offset += 1
        var start = offset
        var decoded: [UInt8] = []  // used only once an escape is met
        var escaped = false
        while true {
            guard let b = peek else { throw fail(.unexpectedEnd) }
            switch b {
            case UInt8(ascii: "\""):
                let run = UnsafeBufferPointer(rebasing: bytes[start..<offset])
                offset += 1
                if !escaped { return String(decoding: run, as: UTF8.self) }
                decoded.append(contentsOf: run)
                return String(decoding: decoded, as: UTF8.self)
            case UInt8(ascii: "\\"):
                decoded.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<offset]))
                escaped = true
                try escape(into: &decoded)
                start = offset
            case 0..<0x20:
                throw fail(.controlCharacterInString)
            case 0x80...:
                try skipUTF8Sequence()
            default:
                offset += 1
            }
        }
    }

    /// One escape sequence from its backslash, appended as UTF-8.
    mutating func escape(into out: inout [UInt8]) throws(JSONReadError) {
        let start = offset
        offset += 1
        guard let b = peek else { throw fail(.unexpectedEnd) }
        offset += 1
        switch b {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(b)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try hexQuad(escapeAt: start))
            if (0xDC00...0xDFFF).contains(scalar) { throw fail(.loneSurrogate, at: start) }
            if (0xD800...0xDBFF).contains(scalar) {
                // A high surrogate must be followed at once by `\u` and a low one.
                guard peek == UInt8(ascii: "\\"), offset + 1 < bytes.count, bytes[offset + 1] == UInt8(ascii: "u") else {
                    throw fail(.loneSurrogate, at: start)
                }
                let lowStart = offset
                offset += 2
                let low = UInt32(try hexQuad(escapeAt: lowStart))
                guard (0xDC00...0xDFFF).contains(low) else { throw fail(.loneSurrogate, at: start) }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            out.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
        default:
            throw fail(.invalidEscape, at: start)
        }
    }

    /// Four hex digits after `\u`; `escapeAt` is the backslash's offset, for errors.
    mutating func hexQuad(escapeAt: Int) throws(JSONReadError) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard let b = peek else { throw fail(.unexpectedEnd) }
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw fail(.invalidEscape, at: escapeAt)
            }
            value = value << 4 | UInt16(digit)
            offset += 1
        }
        return value
    }

    /// Skips one multi-byte UTF-8 sequence (RFC 3629 §4: no overlong forms, no surrogates, nothing
    /// above U+10FFFF).
    mutating func skipUTF8Sequence() throws(JSONReadError) {
        let lead = bytes[offset]
        // The continuation bytes needed and the allowed range of the first one (RFC 3629's table).
        let count: Int, low: UInt8, high: UInt8
        switch lead {
        case 0xC2...0xDF: (count, low, high) = (1, 0x80, 0xBF)
        case 0xE0: (count, low, high) = (2, 0xA0, 0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (count, low, high) = (2, 0x80, 0xBF)
        case 0xED: (count, low, high) = (2, 0x80, 0x9F)
        case 0xF0: (count, low, high) = (3, 0x90, 0xBF)
        case 0xF1...0xF3: (count, low, high) = (3, 0x80, 0xBF)
        case 0xF4: (count, low, high) = (3, 0x80, 0x8F)
        default: throw fail(.invalidUTF8)
        }
        for i in 1...count {
            let at = offset + i
            guard at < bytes.count else { throw fail(.invalidUTF8) }
            let b = bytes[at]
            guard i == 1 ? (low...high).contains(b) : (0x80...0xBF).contains(b) else { throw fail(.invalidUTF8) }
        }
        offset += count + 1
    }
}
