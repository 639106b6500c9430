import FuzzMain
import FuzzSupport
import LocationCore
import LocationWire
import NMEA

/// libFuzzer entry point: arbitrary bytes as a serial line would deliver them.
///
/// Checks, beyond "no crash, no hang": the decoder gives the same fixes whether the input comes whole or in
/// random chunks (STYLE.md 5, swift-nio's `ByteToMessageDecoderVerifier`); every fix encodes as the clients get
/// it (gpsd-style TPV and SKY, gpsd's error model, the gpsd front's TPV and SKY); the NMEA the gpsd front
/// synthesizes from a fix frames again with no checksum, length or parse error.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNMEA(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))

    var whole = NMEADecoder()
    var fixes: [Fix] = []
    whole.decode(bytes) { fixes.append($0) }
    whole.finish { fixes.append($0) }

    var chunked = NMEADecoder()
    var chunkedFixes: [Fix] = []
    for chunk in randomChunks(bytes, maximumChunk: 48) { chunked.decode(chunk) { chunkedFixes.append($0) } }
    chunked.finish { chunkedFixes.append($0) }
    require(fixes == chunkedFixes, "chunking changed the fixes: \(fixes.count) whole, \(chunkedFixes.count) in chunks")
    require(whole.statistics == chunked.statistics, "chunking changed the counts")

    // Lenient framing (sentences without a checksum accepted) walks other paths.
    var lenient = NMEADecoder(requiresChecksum: false, maximumSentenceLength: 82)
    lenient.decode(bytes) { fixes.append($0) }
    lenient.finish { fixes.append($0) }

    var encoder = GPSDEncoder()
    var model = GpsdErrorModel()
    var out: [UInt8] = []
    for fix in fixes {
        out.removeAll(keepingCapacity: true)
        encoder.appendTPV(fix, accuracy: "full", to: &out)
        encoder.appendSKY(fix, to: &out)
        let estimates = model.estimates(for: fix)
        GpsdReports.appendTPV(fix, estimates: estimates, device: "/dev/fuzz", to: &out)
        GpsdReports.appendSKY(fix, dop: estimates.dop, device: "/dev/fuzz", to: &out)

        var nmea: [UInt8] = []
        NMEASynthesizer.appendEpoch(fix, satellites: true, to: &nmea)
        var again = NMEADecoder()
        again.decode(nmea) { _ in }
        again.finish { _ in }
        let s = again.statistics
        require(s.framing.rejectedSentences == 0 && s.malformedSentences == 0,
                "synthesized NMEA does not decode: \(String(decoding: nmea, as: UTF8.self))")
    }
    return 0
}
