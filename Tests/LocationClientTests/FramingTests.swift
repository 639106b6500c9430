import LocationCore
import Testing
@testable import LocationClient
import LocationWire

@Suite("Reading server lines")
struct FramingTests {
    static let stream: [UInt8] = Array((CannedLines.noFix + "\n" + CannedLines.first3D + "\r\n\n" + CannedLines.withHeading + "\n").utf8)
    static let expected = [CannedLines.noFix, CannedLines.first3D, CannedLines.withHeading]

    private func lines(_ chunks: [ArraySlice<UInt8>], maximum: Int = 1024) throws -> [String] {
        var framer = LineFramer(maximumLineLength: maximum)
        var out: [String] = []
        for chunk in chunks {
            try framer.append(chunk) { out.append(String(decoding: $0, as: UTF8.self)) }
        }
        return out
    }

    @Test("the same lines whole, byte by byte and in random chunks")
    func chunking() throws {
        let bytes = Self.stream
        #expect(try lines([bytes[...]]) == Self.expected)
        #expect(try lines(bytes.indices.map { bytes[$0...$0] }) == Self.expected)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            var chunks: [ArraySlice<UInt8>] = []
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + Int.random(in: 1...40, using: &generator))
                chunks.append(bytes[start..<end])
                start = end
            }
            #expect(try lines(chunks) == Self.expected)
        }
    }

    @Test("a line over the cap is refused, whole or still unfinished")
    func overlong() throws {
        #expect(throws: LineFramer.LineTooLong(maximumLineLength: 10)) {
            _ = try lines([Array("0123456789A\n".utf8)[...]], maximum: 10)
        }
        #expect(throws: LineFramer.LineTooLong(maximumLineLength: 10)) {
            _ = try lines([Array("0123456789AB".utf8)[...]], maximum: 10)
        }
        #expect(try lines([Array("0123456789\r\n".utf8)[...]], maximum: 10) == ["0123456789"])
    }

    @Test("protocol times", arguments: [
        ("2007-04-08T09:53:05.802Z", "2007-04-08T09:53:05.802Z"),
        ("2007-04-08T09:53:05Z", "2007-04-08T09:53:05.000Z"),
        ("2007-04-08T09:53:05.8Z", "2007-04-08T09:53:05.800Z"),
        ("2007-04-08T09:53:05.802999Z", "2007-04-08T09:53:05.802Z"),
        ("2016-12-31T23:59:60.500Z", "2016-12-31T23:59:60.500Z"),
    ])
    func times(text: String, expected: String) {
        #expect(parseISO8601(text)?.iso8601 == expected)
    }

    @Test("malformed times", arguments: [
        "", "2007-04-08 09:53:05.802Z", "2007-04-08T09:53:05.802", "2007-02-30T09:53:05.802Z",
        "2007-04-08T24:00:00.000Z", "2007-04-08T09:53:60.000Z", "2007-04-08T09:53:05.Z", "2007-04-08T09:5a:05Z",
    ])
    func badTimes(text: String) {
        #expect(parseISO8601(text) == nil)
    }

    @Test("the TPV inside a POLL reply, as written")
    func pollElement() {
        let tpv = #"{"class":"TPV","device":"a]b{\"c","mode":3,"lat":1,"lon":2}"#
        let line = Array((#"{"class":"POLL","x":"tpv","tpv":[ "# + tpv + #" , {"class":"TPV"}]}"#).utf8)
        #expect(firstObjectElement(ofArrayMember: "tpv", in: line).map { String(decoding: $0, as: UTF8.self) } == tpv)
        #expect(firstObjectElement(ofArrayMember: "tpv", in: Array(#"{"class":"POLL","tpv":[]}"#.utf8)) == nil)
        #expect(firstObjectElement(ofArrayMember: "tpv", in: Array(#"{"class":"POLL"}"#.utf8)) == nil)
    }
}
