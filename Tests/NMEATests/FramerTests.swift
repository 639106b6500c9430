import LocationCore
import NMEA
import Testing

// MARK: - Helpers shared by the NMEA unit tests (FramerTests, SentenceParserTests, FixAssemblerTests)

/// Builds sentences the way NMEA 0183 v4.11 §5.3 defines them, independently of the decoder.
enum TestNMEA {
    /// The checksum of a sentence given from its start character (`$`/`!`) up to, not including, `*`:
    /// the XOR of every byte after the start character, as two upper-case hex digits.
    static func checksum(_ sentence: String) -> String {
        let sum = sentence.utf8.dropFirst().reduce(UInt8(0)) { $0 ^ $1 }
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(sum >> 4)], digits[Int(sum & 0x0F)]])
    }

    /// `sentence` (no `*hh`) with its checksum appended: `$GPGGA,...*hh`.
    static func checksummed(_ sentence: String) -> String {
        sentence + "*" + checksum(sentence)
    }

    /// One line as a receiver sends it: the sentence, its checksum (computed when it has none) and `ending`.
    static func line(_ sentence: String, ending: String = "\r\n") -> String {
        (sentence.contains("*") ? sentence : checksummed(sentence)) + ending
    }

    /// Bytes of several sentences, each made a line by `line(_:)`.
    static func bytes(_ sentences: [String], ending: String = "\r\n") -> [UInt8] {
        Array(sentences.map { line($0, ending: ending) }.joined().utf8)
    }

    /// Milliseconds since midnight of `hh:mm:ss.mmm`.
    static func ms(_ h: Int, _ m: Int, _ s: Int, _ milli: Int = 0) -> Int {
        ((h * 60 + m) * 60 + s) * 1000 + milli
    }
}

/// `|actual − expected| ≤ tolerance`, false when `actual` is absent.
func isClose(_ actual: Double?, _ expected: Double, _ tolerance: Double = 1e-9) -> Bool {
    guard let actual else { return false }
    return abs(actual - expected) <= tolerance
}

/// Feeds `chunks` to `framer` and returns the delivered sentences as text.
func frame(_ chunks: [[UInt8]], with framer: inout SentenceFramer) -> [String] {
    var out: [String] = []
    for chunk in chunks {
        framer.feed(chunk) { out.append(String(decoding: $0, as: UTF8.self)) }
    }
    return out
}

/// Feeds `bytes` in one chunk to a fresh framer.
func frame(_ bytes: [UInt8], requiresChecksum: Bool = true, maximumSentenceLength: Int = 256)
    -> (sentences: [String], statistics: FramingStatistics)
{
    var framer = SentenceFramer(maximumSentenceLength: maximumSentenceLength, requiresChecksum: requiresChecksum)
    let sentences = frame([bytes], with: &framer)
    return (sentences, framer.statistics)
}

/// Splits `bytes` into chunks of `size` bytes (the last one shorter).
func chunked(_ bytes: [UInt8], size: Int) -> [[UInt8]] {
    stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min($0 + size, bytes.count)]) }
}

// MARK: - Framer

@Suite("SentenceFramer: framing and checksums")
struct FramerTests {
    /// Real sentences (Telit HE910, /work/shared/nmea-logs/telit-he910.log).
    static let gga = "$GPGGA,105153.71,5050.4122,N,00420.8266,E,1,04,2.25,109.44,M,,M,,*77"
    static let rmc = "$GPRMC,105153.71,A,5050.4122,N,00420.8266,E,0.14,303.60,120319,,,A*59"
    static let gll = "$GPGLL,5050.4122,N,00420.8266,E,105153.71,A,A*65"
    static let vtg = "$GPVTG,303.60,T,,M,0.14,N,0.26,K,A*3A"

    /// The sentence as the framer delivers it: without `*hh`.
    static func body(_ sentence: String) -> String {
        String(sentence[..<sentence.lastIndex(of: "*")!])
    }

    @Test("the test helper's checksum matches real receivers' checksums", arguments: [
        "$GPGGA,105153.71,5050.4122,N,00420.8266,E,1,04,2.25,109.44,M,,M,,*77",
        "$GPRMC,105153.71,A,5050.4122,N,00420.8266,E,0.14,303.60,120319,,,A*59",
        "$GPVTG,303.60,T,,M,0.14,N,0.26,K,A*3A",
        "$GPGSA,A,1,,,,,,,,,,,,,,,*1E",
        "$GNRMC,120213.000,A,5957.0062,N,01100.6429,E,0.00,0.00,310722,,,D,V*0A",
        "!AIVDM,1,1,,A,B3KLehP0B@LTN6`Vl;rrBE063P06,0*5A",
        "$PGRME,15.0,M,22.5,M,27.0,M*1A",
    ])
    func helperChecksum(sentence: String) {
        let star = sentence.lastIndex(of: "*")!
        #expect(TestNMEA.checksum(String(sentence[..<star])) == String(sentence[sentence.index(after: star)...]))
    }

    @Test("hand-computed checksum: $GPAB,1 → 'G'^'P'^'A'^'B'^','^'1'")
    func handChecksum() {
        // 0x47 ^ 0x50 = 0x17; ^ 0x41 = 0x56; ^ 0x42 = 0x14; ^ 0x2C = 0x38; ^ 0x31 = 0x09.
        #expect(TestNMEA.checksum("$GPAB,1") == "09")
        let (sentences, stats) = frame(Array("$GPAB,1*09\r\n".utf8))
        #expect(sentences == ["$GPAB,1"])
        #expect(stats.sentences == 1)
    }

    @Test("a valid sentence is delivered without its checksum")
    func validSentence() {
        let (sentences, stats) = frame(Array((Self.gga + "\r\n").utf8))
        #expect(sentences == [Self.body(Self.gga)])
        #expect(stats.sentences == 1)
        #expect(stats.rejectedSentences == 0)
        #expect(stats.discardedBytes == 0)
    }

    @Test("the delivered bytes decode with SentenceParser")
    func framedBytesParse() throws {
        var framer = SentenceFramer()
        var decoded: [DecodedSentence] = []
        var errors: [SentenceError] = []
        framer.feed(Array((Self.gga + "\r\n" + Self.rmc + "\r\n").utf8)) { bytes in
            do throws(SentenceError) { decoded.append(try SentenceParser.parse(bytes)) } catch { errors.append(error) }
        }
        #expect(errors.isEmpty)
        try #require(decoded.count == 2)
        guard case .gga(let gga) = decoded[0].sentence else { Issue.record("not GGA"); return }
        #expect(isClose(gga.latitude, 50 + 50.4122 / 60))
        guard case .rmc(let rmc) = decoded[1].sentence else { Issue.record("not RMC"); return }
        #expect(rmc.date == CivilDate(year: 2019, month: 3, day: 12))
    }

    enum Rejection: String, Sendable { case checksumMismatch, missingChecksum }

    @Test("bad, malformed and missing checksums are rejected and counted", arguments: [
        ("$GPGGA,105153.71,5050.4122,N,00420.8266,E,1,04,2.25,109.44,M,,M,,*78", Rejection.checksumMismatch),
        ("$GPGGA,105153.71,5050.4122,N,00420.8266,E,1,04,2.25,109.45,M,,M,,*77", .checksumMismatch),
        ("$GPGGA,105153.71,5050.4122,N,00420.8266,E,1,04,2.25,109.44,M,,M,,*7G", .checksumMismatch),
        ("$GPGGA,105153.71,5050.4122,N,00420.8266,E,1,04,2.25,109.44,M,,M,,*7", .checksumMismatch),
        ("$GPGGA,105153.71,5050.4122,N,00420.8266,E,1,04,2.25,109.44,M,,M,,*777", .checksumMismatch),
        ("$GPGGA,105153.71,5050.4122,N,00420.8266,E,1,04,2.25,109.44,M,,M,,", .missingChecksum),
    ])
    func rejected(sentence: String, reason: Rejection) {
        let (sentences, stats) = frame(Array((sentence + "\r\n" + Self.rmc + "\r\n").utf8))
        // The next sentence is unaffected.
        #expect(sentences == [Self.body(Self.rmc)])
        #expect(stats.sentences == 1)
        #expect(stats.rejectedSentences == 1)
        switch reason {
        case .checksumMismatch: #expect(stats.checksumMismatches == 1)
        case .missingChecksum: #expect(stats.missingChecksums == 1)
        }
    }

    @Test("lower-case and mixed-case hex checksums are accepted", arguments: [
        "$GPVTG,303.60,T,,M,0.14,N,0.26,K,A*3a",
        "$GPVTG,,T,,M,,N,,K,N*2c",
        "$GPGSA,A,1,,,,,,,,,,,,,,,*1e",
        "$GPGSA,A,3,15,17,24,28,,,,,,,,,4.00,2.25,3.25*09",
    ])
    func lowerCaseHex(sentence: String) {
        let (sentences, stats) = frame(Array((sentence + "\r\n").utf8))
        #expect(sentences == [Self.body(sentence)])
        #expect(stats.checksumMismatches == 0)
    }

    @Test("a sentence without checksum is rejected by default, accepted with requiresChecksum: false")
    func missingChecksum() {
        let plain = Self.body(Self.gll)
        let input = Array((plain + "\r\n").utf8)

        let strict = frame(input)
        #expect(strict.sentences.isEmpty)
        #expect(strict.statistics.missingChecksums == 1)
        #expect(strict.statistics.sentences == 0)

        let lenient = frame(input, requiresChecksum: false)
        #expect(lenient.sentences == [plain])
        #expect(lenient.statistics.missingChecksums == 0)
        #expect(lenient.statistics.sentences == 1)

        // A checksum that is present is still checked.
        let bad = frame(Array("$GPGLL,5050.4122,N,00420.8266,E,105153.71,A,A*66\r\n".utf8), requiresChecksum: false)
        #expect(bad.sentences.isEmpty)
        #expect(bad.statistics.checksumMismatches == 1)
    }

    @Test("the same sentences whatever the chunking (1-byte chunks included)", arguments: [1, 2, 3, 5, 7, 13, 64, 4096])
    func chunking(size: Int) {
        var garbage: [UInt8] = [0x00, 0xFF, 0x80]
        garbage += Array("junk".utf8)
        let input = Array((Self.gga + "\r\n" + Self.rmc + "\n").utf8) + garbage
            + Array((Self.gll + "\r" + "$GPGGA,1051" + Self.vtg + "\r\n").utf8)
        var framer = SentenceFramer()
        let sentences = frame(chunked(input, size: size), with: &framer)
        #expect(sentences == [Self.gga, Self.rmc, Self.gll, Self.vtg].map(Self.body))
        #expect(framer.statistics.sentences == 4)
        #expect(framer.statistics.truncatedSentences == 1)
        #expect(framer.statistics.discardedBytes == garbage.count)
    }

    enum LineEnding: String, CaseIterable, Sendable {
        case crlf = "\r\n", lf = "\n", cr = "\r", lfcr = "\n\r", blankLines = "\r\n\r\n"
    }

    @Test("CR LF, LF only, CR only and LF CR end a sentence", arguments: LineEnding.allCases)
    func lineEndings(ending: LineEnding) {
        let e = ending.rawValue
        let input = Array((Self.gga + e + Self.rmc + e + Self.gll + e).utf8)
        let (sentences, stats) = frame(input)
        #expect(sentences == [Self.gga, Self.rmc, Self.gll].map(Self.body))
        #expect(stats.sentences == 3)
        // CR and LF between sentences are not garbage.
        #expect(stats.discardedBytes == 0)
        #expect(stats.rejectedSentences == 0)
    }

    @Test("NUL bytes and binary garbage between sentences are skipped and counted", arguments: [
        [0x00] as [UInt8],
        [0x00, 0x00, 0x00, 0x00],
        [0x80, 0x81, 0xA5, 0xC3, 0xA9, 0xFE, 0xFF],
        Array(UInt8(0x80)...UInt8(0xFF)),
        [0x00, 0xB5, 0x62, 0x01, 0x07, 0x5C, 0x00, 0xFF, 0x1B],  // a UBX-like binary frame
    ])
    func garbageBetweenSentences(garbage: [UInt8]) {
        let input = Array((Self.gga + "\r\n").utf8) + garbage + Array((Self.rmc + "\r\n").utf8)
        let (sentences, stats) = frame(input)
        #expect(sentences == [Self.body(Self.gga), Self.body(Self.rmc)])
        #expect(stats.discardedBytes == garbage.count)
        #expect(stats.rejectedSentences == 0)
    }

    @Test("stray printable text between sentences is discarded and counted")
    func strayText() {
        let input = Array(("hello" + Self.gga + "\r\nAT+OK\r\n" + Self.rmc + "\r\n").utf8)
        let (sentences, stats) = frame(input)
        #expect(sentences == [Self.body(Self.gga), Self.body(Self.rmc)])
        #expect(stats.discardedBytes == 5 + 5)
    }

    @Test("a sentence cut off by the next start character is counted as truncated", arguments: [
        "$GPGGA,105153.71,5050.41",
        "$GPGGA,105153.71,5050.4122,N,00420.8266,E,1,04,2.25,109.44,M,,M,,*7",
        "$",
        "!AIVDM,1,1,,A,B3KLeh",
    ])
    func truncatedByStart(prefix: String) {
        let (sentences, stats) = frame(Array((prefix + Self.rmc + "\r\n").utf8))
        #expect(sentences == [Self.body(Self.rmc)])
        #expect(stats.truncatedSentences == 1)
        #expect(stats.checksumMismatches == 0)
    }

    @Test("a sentence cut off by a NUL byte is truncated; the next one decodes")
    func truncatedByControlByte() {
        let input = Array("$GPGGA,105153.71,5050".utf8) + [0x00, 0x00] + Array((Self.rmc + "\r\n").utf8)
        let (sentences, stats) = frame(input)
        #expect(sentences == [Self.body(Self.rmc)])
        #expect(stats.truncatedSentences == 1)
        #expect(stats.discardedBytes == 2)
    }

    @Test("finish() counts a sentence left without line end as truncated")
    func finishTruncates() {
        var framer = SentenceFramer()
        let sentences = frame([Array(Self.gga.utf8)], with: &framer)
        #expect(sentences.isEmpty)
        framer.finish()
        #expect(framer.statistics.truncatedSentences == 1)
        #expect(framer.statistics.sentences == 0)
        // finish() between sentences does nothing.
        framer.finish()
        #expect(framer.statistics.truncatedSentences == 1)
    }

    @Test("a line longer than 82 characters but within the limit is accepted")
    func longerThanStandard() {
        // A u-blox-style text sentence of 140 characters.
        let text = "$GPTXT,01,01,02," + String(repeating: "LONG LINE ", count: 12)
        let sentence = TestNMEA.checksummed(text)
        #expect(sentence.utf8.count > 82)
        let (sentences, stats) = frame(Array((sentence + "\r\n").utf8))
        #expect(sentences == [text])
        #expect(stats.overlongSentences == 0)
    }

    /// A checksummed sentence of exactly `length` bytes from `$` to the last checksum digit.
    static func sentence(ofLength length: Int) -> String {
        let head = "$GPTXT,"
        let text = head + String(repeating: "A", count: length - head.utf8.count - 3)
        let result = TestNMEA.checksummed(text)
        precondition(result.utf8.count == length)
        return result
    }

    @Test("maximumSentenceLength is inclusive: that many bytes pass, one more is overlong", arguments: [16, 64, 82, 256])
    func lengthLimit(limit: Int) {
        let fits = Self.sentence(ofLength: limit)
        let tooLong = Self.sentence(ofLength: limit + 1)
        let input = Array((fits + "\r\n" + tooLong + "\r\n" + fits + "\r\n").utf8)
        let (sentences, stats) = frame(input, maximumSentenceLength: limit)
        #expect(sentences == [Self.body(fits), Self.body(fits)])
        #expect(stats.overlongSentences == 1)
        #expect(stats.rejectedSentences == 1)
    }

    @Test("a line longer than maximumSentenceLength is rejected as overlong; the next sentence decodes")
    func overlong() {
        let long = Self.sentence(ofLength: 300)
        let (sentences, stats) = frame(Array((long + "\r\n" + Self.gga + "\r\n").utf8))
        #expect(sentences == [Self.body(Self.gga)])
        #expect(stats.overlongSentences == 1)
        #expect(stats.truncatedSentences == 0)
        #expect(stats.checksumMismatches == 0)
    }

    /// The framer's internal buffer, read by reflection (it is private) to check that memory stays bounded.
    static func bufferCapacity(_ framer: SentenceFramer) -> (count: Int, capacity: Int)? {
        guard let buffer = Mirror(reflecting: framer).children.first(where: { $0.label == "buffer" })?.value
            as? [UInt8] else { return nil }
        return (buffer.count, buffer.capacity)
    }

    @Test("1 MB without a line end stays bounded; the following sentence still decodes", arguments: [true, false])
    func megabyteWithoutNewline(insideSentence: Bool) throws {
        var framer = SentenceFramer()
        let megabyte = 1 << 20
        var delivered: [String] = []
        if insideSentence { delivered += frame([Array("$GPTXT,01,01,02,".utf8)], with: &framer) }
        let chunk = [UInt8](repeating: UInt8(ascii: "A"), count: 1 << 16)
        var largestCount = 0, largestCapacity = 0
        for _ in 0..<(megabyte / chunk.count) {
            delivered += frame([chunk], with: &framer)
            let buffer = try #require(Self.bufferCapacity(framer), "SentenceFramer has no [UInt8] 'buffer' any more")
            largestCount = max(largestCount, buffer.count)
            largestCapacity = max(largestCapacity, buffer.capacity)
        }
        // Bounded by the limit (capacity: allocator rounding allowed), not by the input.
        #expect(largestCount <= framer.maximumSentenceLength)
        #expect(largestCapacity <= 4 * framer.maximumSentenceLength)
        delivered += frame([Array((Self.gga + "\r\n").utf8)], with: &framer)
        #expect(delivered == [Self.body(Self.gga)])
        if insideSentence {
            #expect(framer.statistics.overlongSentences == 1)
            #expect(framer.statistics.discardedBytes == 0)
        } else {
            #expect(framer.statistics.overlongSentences == 0)
            #expect(framer.statistics.discardedBytes == megabyte)
        }
        #expect(framer.statistics.sentences == 1)
    }

    @Test("an overlong line is counted once, whether a line end or a new sentence ends it")
    func overlongCountedOnce() {
        let long = "$GPTXT," + String(repeating: "B", count: 1000)
        for next in ["\r\n" + Self.gga + "\r\n", Self.gga + "\r\n", "\u{0}" + Self.gga + "\r\n"] {
            let (sentences, stats) = frame(Array((long + next).utf8))
            #expect(sentences == [Self.body(Self.gga)])
            #expect(stats.overlongSentences == 1)
            #expect(stats.truncatedSentences == 0)
        }
    }

    @Test("AIS !AIVDM sentences are framed with their checksum and parse as .ignored", arguments: [
        "!AIVDM,1,1,,A,B3KLehP0B@LTN6`Vl;rrBE063P06,0*5A",
        "!AIVDM,1,1,,A,H3KLehQ=DtddT00000000000000,0*5F",
        "!AIVDM,1,1,,A,H3KLehdt00000000?6ekkjm000000,0*2C",
    ])
    func ais(sentence: String) throws {
        var framer = SentenceFramer()
        var results: [DecodedSentence] = []
        framer.feed(Array((sentence + "\r\n").utf8)) { bytes in
            if let d = try? SentenceParser.parse(bytes) { results.append(d) }
        }
        #expect(framer.statistics.sentences == 1)
        #expect(results.map(\.sentence) == [.ignored])
        #expect(results.first?.talker == nil)

        // A corrupted AIS payload is caught by the checksum.
        let corrupted = sentence.replacing(",0*", with: ",1*")
        let (bad, stats) = frame(Array((corrupted + "\r\n").utf8))
        #expect(bad.isEmpty)
        #expect(stats.checksumMismatches == 1)
    }
}
