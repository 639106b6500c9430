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
}
