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
