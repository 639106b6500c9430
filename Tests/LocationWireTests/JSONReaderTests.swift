import LocationWire
import Testing

/// `JSONReader` against RFC 8259: its §13 examples with their exact values, each rule the RFC makes
/// (and each way round it) as a concrete text with the problem and byte offset expected.
@Suite("JSON reader")
struct JSONReaderTests {
    static func read(_ text: String, maximumDepth: Int = JSONReader.defaultMaximumDepth) throws(JSONReadError) -> JSONValue {
        try JSONReader.read(Array(text.utf8), maximumDepth: maximumDepth)
    }

    // MARK: RFC 8259 §13

    @Test("§13's first example: an object with nested object, numbers, a string, false and an array")
    func rfcImage() throws {
        let text = """
            {
              "Image": {
                  "Width":  800,
                  "Height": 600,
                  "Title":  "View from 15th Floor",
                  "Thumbnail": {
                      "Url":    "http://www.example.com/image/481989943",
                      "Height": 125,
                      "Width":  100
                  },
                  "Animated" : false,
                  "IDs": [116, 943, 234, 38793]
                }
            }
            """
        let expected: JSONValue = .object(["Image": .object([
            "Width": .number("800"), "Height": .number("600"), "Title": .string("View from 15th Floor"),
            "Thumbnail": .object(["Url": .string("http://www.example.com/image/481989943"), "Height": .number("125"),
                                  "Width": .number("100")]),
            "Animated": .bool(false),
            "IDs": .array([.number("116"), .number("943"), .number("234"), .number("38793")]),
        ])])
        #expect(try Self.read(text) == expected)
    }

    @Test("§13's second example: an array of two objects; numbers keep their text")
    func rfcZipCodes() throws {
        let text = """
            [
              {
                 "precision": "zip",
                 "Latitude":  37.7668,
                 "Longitude": -122.3959,
                 "Address":   "",
                 "City":      "SAN FRANCISCO",
                 "State":     "CA",
                 "Zip":       "94107",
                 "Country":   "US"
              },
              {
                 "precision": "zip",
                 "Latitude":  37.371991,
                 "Longitude": -122.026020,
                 "Address":   "",
                 "City":      "SUNNYVALE",
                 "State":     "CA",
                 "Zip":       "94085",
                 "Country":   "US"
              }
            ]
            """
        func place(_ lat: String, _ lon: String, _ city: String, _ zip: String) -> JSONValue {
            .object(["precision": .string("zip"), "Latitude": .number(lat), "Longitude": .number(lon), "Address": .string(""),
                     "City": .string(city), "State": .string("CA"), "Zip": .string(zip), "Country": .string("US")])
        }
        let value = try Self.read(text)
        #expect(value == .array([place("37.7668", "-122.3959", "SAN FRANCISCO", "94107"),
                                 place("37.371991", "-122.026020", "SUNNYVALE", "94085")]))
        guard case .array(let places) = value else { return }
        #expect(places[1]["Longitude"]?.doubleValue == -122.02602)
        #expect(places[0]["Latitude"]?.doubleValue == 37.7668)
    }

    @Test("§13's texts of a single value: a string, a number, a literal")
    func rfcScalars() throws {
        #expect(try Self.read("\"Hello world!\"") == .string("Hello world!"))
        #expect(try Self.read("42") == .number("42"))
        #expect(try Self.read("true") == .bool(true))
        #expect(try Self.read(" false ") == .bool(false))
        #expect(try Self.read("\r\n\tnull\n") == .null)
    }

    // MARK: What is accepted

    @Test("every escape of §7, and raw UTF-8 of every length")
    func strings() throws {
        #expect(try Self.read(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{08}\u{0C}\n\r\t"))
        #expect(try Self.read(#""\u0041\u00e9\u00E9\u20AC\u0000""#) == .string("Aéé€\u{0}"))
        #expect(try Self.read("\"aé€𝄞\"") == .string("aé€𝄞"))
        #expect(try Self.read("\"\u{7F}\"") == .string("\u{7F}"))  // DEL needs no escape
        #expect(try Self.read("\"\"") == .string(""))
    }

    @Test("a surrogate pair is one scalar: \\uD834\\uDD1E is U+1D11E (§7's own example)")
    func surrogatePair() throws {
        #expect(try Self.read(#""\uD834\uDD1E""#) == .string("\u{1D11E}"))
        #expect(try Self.read(#""x\ud834\udd1ey""#) == .string("x\u{1D11E}y"))
        #expect(try Self.read(#""\uDBFF\uDFFF""#) == .string("\u{10FFFF}"))
    }

    @Test("numbers of §6's grammar", arguments: [
        ("0", 0.0), ("-0", -0.0), ("7", 7), ("-12", -12), ("0.5", 0.5), ("-0.25", -0.25), ("1e3", 1000), ("1E3", 1000),
        ("1e+3", 1000), ("25e-1", 2.5), ("1.5E-2", 0.015), ("123456789012345678901234567890", 1.2345678901234568e29),
        ("1.7976931348623157e308", .greatestFiniteMagnitude), ("5e-324", .leastNonzeroMagnitude), ("0e5", 0),
    ])
    func numbers(text: String, value: Double) throws {
        let read = try Self.read(text)
        #expect(read == .number(text))
        #expect(read.doubleValue == value)
        #expect(read.doubleValue?.sign == value.sign)
    }

    @Test("a number a Double cannot hold has no doubleValue: too large, or nonzero yet read as zero")
    func unrepresentableNumbers() throws {
        for text in ["1e400", "-1e400", "2e-324", "-1e-400", "0.1e-400"] {
            #expect(try Self.read(text).doubleValue == nil, "\(text)")
        }
        #expect(JSONValue.string("1").doubleValue == nil)
    }

    @Test("empty containers, nesting, and whitespace (space, tab, LF, CR) around every token")
    func structure() throws {
        #expect(try Self.read("[]") == .array([]))
        #expect(try Self.read("{}") == .object([:]))
        #expect(try Self.read(" \t\r\n[ \t\r\n1 \t\r\n, \t\r\n{ \"a\" \t\r\n: \t\r\n[ ] } \t\r\n] \t\r\n")
            == .array([.number("1"), .object(["a": .array([])])]))
        #expect(try Self.read(#"[null,true,false,"",[],{}]"#) == .array([.null, .bool(true), .bool(false), .string(""), .array([]), .object([:])]))
    }

    @Test("a name given twice keeps its first value, as Foundation's JSONDecoder does")
    func duplicateNames() throws {
        let value = try Self.read(#"{"a":1,"b":2,"a":3}"#)
        #expect(value == .object(["a": .number("1"), "b": .number("2")]))
        #expect(value["a"] == .number("1"))
        #expect(try Self.read(#"{"a":null,"a":true}"#)["a"] == .null)
    }

    @Test("names are compared after escapes are resolved")
    func escapedNames() throws {
        #expect(try Self.read(#"{"cl\u0061ss":"WATCH"}"#)["class"] == .string("WATCH"))
    }

    @Test("a leading UTF-8 byte order mark is skipped (§8.1 allows it); elsewhere it is refused")
    func byteOrderMark() throws {
        #expect(try JSONReader.read([0xEF, 0xBB, 0xBF] + Array("[1]".utf8)) == .array([.number("1")]))
        #expect(throws: JSONReadError(.unexpectedByte(0xEF), at: 1)) { try JSONReader.read(Array(" ".utf8) + [0xEF, 0xBB, 0xBF]) }
    }

    @Test("nesting up to the limit is read; one level more is refused at the bracket that passes it")
    func depthLimit() throws {
        let limit = JSONReader.defaultMaximumDepth
        #expect(limit == 64)
        let deepest = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        #expect(throws: Never.self) { try Self.read(deepest) }
        let tooDeep = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
        #expect(throws: JSONReadError(.tooDeep(limit: limit), at: limit)) { try Self.read(tooDeep) }
        let objects = String(repeating: #"{"a":"#, count: limit + 1) + "1" + String(repeating: "}", count: limit + 1)
        #expect(throws: JSONReadError(.tooDeep(limit: limit), at: 5 * limit)) { try Self.read(objects) }
        #expect(throws: Never.self) { try Self.read("[1]", maximumDepth: 1) }
        #expect(throws: JSONReadError(.tooDeep(limit: 1), at: 1)) { try Self.read("[{}]", maximumDepth: 1) }
        // A hostile line can be deep; the limit keeps the reader's stack small.
        let hostile = String(repeating: "[", count: 100_000)
        #expect(throws: JSONReadError(.tooDeep(limit: limit), at: limit)) { try Self.read(hostile) }
    }

    // MARK: What is refused

    static let refused: [(text: String, problem: JSONReadError.Problem, offset: Int)] = [
        // §2: one value, JSON's four whitespace bytes only, no comments.
        ("", .unexpectedEnd, 0),
        ("  \n", .unexpectedEnd, 3),
        ("{} {}", .trailingData, 3),
        ("1 2", .trailingData, 2),
        ("\u{0B}1", .unexpectedByte(0x0B), 0),
        ("\u{0C}1", .unexpectedByte(0x0C), 0),
        ("1\u{0}", .trailingData, 1),
        ("/* c */ 1", .unexpectedByte(UInt8(ascii: "/")), 0),
        // §3: literals are lower case and whole.
        ("True", .unexpectedByte(UInt8(ascii: "T")), 0),
        ("tru", .unexpectedEnd, 3),
        ("nulL", .unexpectedByte(UInt8(ascii: "L")), 3),
        ("nulll", .trailingData, 4),
        ("NaN", .unexpectedByte(UInt8(ascii: "N")), 0),
        ("Infinity", .unexpectedByte(UInt8(ascii: "I")), 0),
        // §4 and §5: separators where they belong, names are strings in double quotes.
        ("[1,]", .unexpectedByte(UInt8(ascii: "]")), 3),
        ("[,1]", .unexpectedByte(UInt8(ascii: ",")), 1),
        ("[1 2]", .unexpectedByte(UInt8(ascii: "2")), 3),
        ("[1", .unexpectedEnd, 2),
        (#"{"a":1,}"#, .unexpectedByte(UInt8(ascii: "}")), 7),
        (#"{"a" 1}"#, .unexpectedByte(UInt8(ascii: "1")), 5),
        (#"{"a":}"#, .unexpectedByte(UInt8(ascii: "}")), 5),
        ("{a:1}", .unexpectedByte(UInt8(ascii: "a")), 1),
        ("{'a':1}", .unexpectedByte(UInt8(ascii: "'")), 1),
        ("{1:1}", .unexpectedByte(UInt8(ascii: "1")), 1),
        (#"{"a":1"#, .unexpectedEnd, 6),
        // §6: numbers.
        ("01", .invalidNumber, 0),
        ("-01", .invalidNumber, 0),
        ("[00]", .invalidNumber, 1),
        ("+1", .unexpectedByte(UInt8(ascii: "+")), 0),
        (".5", .unexpectedByte(UInt8(ascii: ".")), 0),
        ("-.5", .invalidNumber, 0),
        ("1.", .invalidNumber, 0),
        ("1.e3", .invalidNumber, 0),
        ("1e", .invalidNumber, 0),
        ("1e+", .invalidNumber, 0),
        ("[-]", .invalidNumber, 1),
        ("-Infinity", .invalidNumber, 0),
        ("0x10", .trailingData, 1),
        ("1_000", .trailingData, 1),
        // §7: strings.
        (#""abc"#, .unexpectedEnd, 4),
        (#""\x""#, .invalidEscape, 1),
        (#""\'""#, .invalidEscape, 1),
        (#""\u12G4""#, .invalidEscape, 1),
        (#""\u12""#, .invalidEscape, 1),
        (#""a\uD800""#, .loneSurrogate, 2),
        (#""\uDC00""#, .loneSurrogate, 1),
        (#""\uD800\u0041""#, .loneSurrogate, 1),
        (#""\uD800\uD800""#, .loneSurrogate, 1),
        (#""\uD800x""#, .loneSurrogate, 1),
        (#""\uDD1E\uD834""#, .loneSurrogate, 1),
        ("\"a\u{01}b\"", .controlCharacterInString, 2),
        ("\"a\tb\"", .controlCharacterInString, 2),
        ("\"a\nb\"", .controlCharacterInString, 2),
        ("\"\u{0}\"", .controlCharacterInString, 1),
    ]

    @Test("texts outside RFC 8259 are refused with the problem and its byte offset", arguments: refused)
    func refusals(text: String, problem: JSONReadError.Problem, offset: Int) {
        #expect(throws: JSONReadError(problem, at: offset)) { try Self.read(text) }
    }

    @Test("invalid UTF-8 in a string is refused at its first byte (RFC 3629)", arguments: [
        [0xFF], [0x80], [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF0, 0x80, 0x80, 0x80],
        [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xE2, 0x82], [0xE2, 0x82, 0x41], [0xC3, 0x28],
    ] as [[UInt8]])
    func invalidUTF8(sequence: [UInt8]) {
        let text = Array("[\"ab".utf8) + sequence + Array("\"]".utf8)
        #expect(throws: JSONReadError(.invalidUTF8, at: 4)) { try JSONReader.read(text) }
        // Cut short by the end of the text, too.
        #expect(throws: JSONReadError.self) { try JSONReader.read(Array("\"ab".utf8) + sequence) }
    }

    @Test("an error says what is wrong and where")
    func errorDescription() {
        #expect(JSONReadError(.invalidNumber, at: 12).description == "invalid number at byte 12")
        #expect(JSONReadError(.unexpectedByte(UInt8(ascii: "}")), at: 7).description == "unexpected '}' at byte 7")
        #expect(JSONReadError(.unexpectedByte(0x0B), at: 0).description == "unexpected byte 0x0B at byte 0")
        #expect(JSONReadError(.tooDeep(limit: 64), at: 64).description == "arrays and objects nested deeper than 64 at byte 64")
        #expect(JSONReadError(.loneSurrogate, at: 3).description == "unpaired UTF-16 surrogate in \\u escape at byte 3")
    }

    // MARK: Writing

    @Test("compact and pretty-printed text; names sorted; strings escaped; reads back equal")
    func writing() throws {
        let value: JSONValue = .object([
            "z": .array([.number("1"), .bool(true), .null]), "a": .string("q\"\\/\n\u{1}é"), "m": .object([:]), "e": .array([]),
            "n": JSONValue(0.1),
        ])
        let compact = String(decoding: value.encoded(), as: UTF8.self)
        #expect(compact == #"{"a":"q\"\\/\n\u0001é","e":[],"m":{},"n":0.1,"z":[1,true,null]}"#)
        let pretty = String(decoding: value.encoded(prettyPrinted: true), as: UTF8.self)
        #expect(pretty == """
            {
              "a" : "q\\"\\\\/\\n\\u0001é",
              "e" : [],
              "m" : {},
              "n" : 0.1,
              "z" : [
                1,
                true,
                null
              ]
            }
            """)
        #expect(try JSONReader.read(value.encoded()) == value)
        #expect(try JSONReader.read(value.encoded(prettyPrinted: true)) == value)
    }

    @Test("a Double is written in the shortest text that reads back as it", arguments: [
        0.0, 1, -3, 1_700_000_000, 1_700_000_123.25, 0.1, 1e16, -2.5e-8, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 0x1p53 + 2,
    ])
    func doubles(value: Double) throws {
        let json = JSONValue(value)
        #expect(try JSONReader.read(json.encoded()).doubleValue == value)
    }
}
