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
