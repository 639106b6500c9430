import LocationWire
import Testing

/// Client text shown on a terminal or a log line (the security review's forged agent prompt).
@Suite("DisplayText")
struct DisplayTextTests {
    @Test("control, format and separator characters become visible escapes", arguments: [
        ("Maps\"\n  user:     root (uid 0)", #"Maps"\u{A}  user:     root (uid 0)"#),
        ("\u{1B}[1A\u{1B}[2K\u{1B}]0;pwned\u{07}", #"\u{1B}[1A\u{1B}[2K\u{1B}]0;pwned\u{7}"#),
        ("abc\u{202E}gpj.exe", #"abc\u{202E}gpj.exe"#),            // right-to-left override (Cf)
        ("tab\there\rDEL\u{7F}C1\u{9B}", #"tab\u{9}here\u{D}DEL\u{7F}C1\u{9B}"#),
        ("line\u{2028}para\u{2029}", #"line\u{2028}para\u{2029}"#),
    ])
    func escapes(input: String, shown: String) {
        #expect(DisplayText.escaped(input) == shown)
    }

    @Test("everything else is kept, backslashes and non-ASCII letters included")
    func keeps() {
        for text in ["Navit", "/usr/bin/navit", #"C:\path"#, "Zürich Straßenkarte", "東京 マップ", "🚗 Route", ""] {
            #expect(DisplayText.escaped(text) == text)
        }
    }
}

/// Issue 12, hole 1: a declared name is capped in Unicode scalars and bytes, not in grapheme clusters
/// (one cluster of combining marks can be kilobytes).
@Suite("DisplayText: capped names")
struct DisplayTextCapTests {
    /// (input, expected scalars of the input kept, expected UTF-8 bytes of the result).
    @Test("combining marks, zero-width characters and escapes are cut at 200 scalars or 400 bytes, whichever first", arguments: [
        // One grapheme cluster: "a" and 5000 combining acute accents (2 bytes each): the bytes run out
        // first, at "a" and 198 accents.
        ("a" + String(repeating: "\u{301}", count: 5000), 199, 1 + 198 * 2 + 3),
        // Zero-width spaces (Cf) escape to 8 bytes each ("\u{200B}"): 49 fit in 400 bytes with "…".
        (String(repeating: "\u{200B}", count: 3000), 49, 49 * 8 + 3),
        // Emoji, 4 bytes: 99 fit before the ellipsis.
        (String(repeating: "🚗", count: 150), 99, 99 * 4 + 3),
        // ASCII: 200 scalars, then the ellipsis.
        (String(repeating: "x", count: 250), 200, 203),
        // Short names are kept whole, exactly at the bounds too.
        ("My Navigator", 12, 12),
        (String(repeating: "x", count: 200), 200, 200),
        (String(repeating: "\u{200B}", count: 50), 50, 400),
    ])
    func capped(input: String, keptScalars: Int, bytes: Int) {
        let out = DisplayText.escaped(input, maximumScalars: DisplayText.maximumNameScalars, maximumBytes: DisplayText.maximumNameBytes)
        #expect(out.utf8.count == bytes)
        #expect(out.utf8.count <= 400)
        let whole = keptScalars == input.unicodeScalars.count
        #expect(out.hasSuffix("…") == !whole)
        // What is kept is the escaped prefix of the input's scalars.
        var prefix = String.UnicodeScalarView()
        prefix.append(contentsOf: input.unicodeScalars.prefix(keptScalars))
        #expect(out == DisplayText.escaped(String(prefix)) + (whole ? "" : "…"))
        // Cutting again (the daemon bounds a stored name's bytes once more) changes nothing.
        #expect(DisplayText.escaped(out, maximumScalars: .max, maximumBytes: DisplayText.maximumNameBytes) == out)
    }
}
