import LocationCore
import NMEA
import Testing

/// `NMEADecoder.decode` takes any byte sequence: memory in place (a serial read's buffer), or a sequence
/// with no contiguous storage, copied through 4 KiB chunks whose ends cut sentences. Both must decode the
/// same fixes, sentence for sentence.
@Suite("NMEA decoder input shapes")
struct DecoderInputTests {
    @Test("a capture decodes to the same fixes from an array, a buffer and a non-contiguous sequence",
          arguments: ["telit-he910.log", "haicom-305N.log"])
    func sameFixes(capture: String) throws {
        let bytes = try Captures.bytes(capture)
        #expect(bytes.count > 3 * 4096, "the chunks must cut sentences: \(bytes.count) bytes")
        var fromArray = NMEADecoder(), fromBuffer = NMEADecoder(), fromLazy = NMEADecoder()
        var a: [Fix] = [], b: [Fix] = [], c: [Fix] = []
        fromArray.decode(bytes) { a.append($0) }
        fromArray.finish { a.append($0) }
        bytes.withUnsafeBufferPointer { buffer in fromBuffer.decode(buffer) { b.append($0) } }
        fromBuffer.finish { b.append($0) }
        fromLazy.decode(bytes.lazy.map { $0 }) { c.append($0) }
        fromLazy.finish { c.append($0) }
        // As many as with the capture's comment lines dropped first (Captures.decode): they hold no sentence.
        #expect(a.count == Captures.decode(bytes).count)
        #expect(!a.isEmpty)
        #expect(a == b)
        #expect(a == c)
        #expect(fromArray.statistics == fromLazy.statistics && fromArray.statistics == fromBuffer.statistics)
    }
}
