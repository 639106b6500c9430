/// Text from a client (a declared name, an executable path, a unit name) made safe to show on a terminal
/// or write on a log line: every control character (C0, DEL, C1), format character (Unicode category Cf:
/// bidirectional overrides, zero-width joiners) and line or paragraph separator becomes a visible
/// `\u{XX}` escape, so that the text cannot start a new line, move the cursor, retitle a terminal or
/// reorder what follows it. Everything else, backslashes included, is kept as it is.
public enum DisplayText {
    /// `text` with its control, format and separator characters escaped, e.g. "a\nb" → `a\u{A}b`.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        out.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            if needsEscape(scalar) {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }
}

extension DisplayText {
    /// The most Unicode scalars of a declared name kept (`AUTHORIZE.name`).
    public static let maximumNameScalars = 200
    /// The most UTF-8 bytes of a declared name once escaped.
    public static let maximumNameBytes = 400

    /// `text` escaped (`escaped(_:)`) and cut to at most `maximumScalars` of its Unicode scalars and
    /// `maximumBytes` UTF-8 bytes after escaping, whichever comes first; a cut text ends in "…" (counted
    /// in the bound); a text whose escaped form is within both bounds comes back whole, so cutting an
    /// already cut text changes nothing. Scalars, not characters: a grapheme cluster has no size limit
    /// (one "character" of combining marks can be kilobytes), a scalar is at most 4 bytes, escaped at
    /// most 10 (`\u{10FFFF}`).
    /// - Parameters:
    ///   - maximumScalars: scalars of `text` kept, at least 1.
    ///   - maximumBytes: UTF-8 bytes of the result, at least 13 (room for one escape and "…").
    /// - Returns: the escaped text, at most `maximumBytes` bytes.
    public static func escaped(_ text: String, maximumScalars: Int, maximumBytes: Int) -> String {
        let ellipsis = "…"
        var out = ""
        var bytes = 0
        var kept = 0
        // The bytes of `out` when it last left room for the ellipsis: a cut text ends there.
        var cut: Int? = nil
        for scalar in text.unicodeScalars {
            let piece = needsEscape(scalar) ? "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}" : String(scalar)
            if kept == maximumScalars || bytes + piece.utf8.count > maximumBytes {
                return String(decoding: out.utf8.prefix(cut ?? bytes), as: UTF8.self) + ellipsis
            }
            if cut == nil, bytes + piece.utf8.count > maximumBytes - ellipsis.utf8.count { cut = bytes }
            out += piece
            bytes += piece.utf8.count
            kept += 1
        }
        return out
    }
}
