import LocationCore
import NMEA

/// A receiver's NMEA decoder and what the decoders it replaced counted.
///
/// A receiver starts a fresh decoder on every reconnect (and at each loop of a replay, each autobaud
/// speed), so that no half sentence or half epoch of the old input joins the new one; the counts it
/// reports (`ReceiverEvent.counts`) add up what the replaced decoders counted, if the receiver wants them
/// (`replace()`), or drop it (`discard()`).
struct CountingDecoder: Sendable {
    /// Whether sentences without a checksum are refused (config `allow-missing-checksum` off).
    private let requiresChecksum: Bool
    private var decoder: NMEADecoder
    /// Sentences framed by the decoders replaced with `replace()`.
    private(set) var replacedSentences = 0
    /// Sentences rejected by the framer or malformed, in the decoders replaced with `replace()`.
    private(set) var replacedErrors = 0

    /// - Parameter requiresChecksum: whether sentences without a checksum are refused.
    init(requiresChecksum: Bool) {
        self.requiresChecksum = requiresChecksum
        decoder = NMEADecoder(requiresChecksum: requiresChecksum)
    }

    /// The current decoder's counts (`NMEADecoder.statistics`).
    var statistics: DecoderStatistics { decoder.statistics }

    /// Decodes a chunk of bytes; calls `emit` for each fix completed by it (`NMEADecoder.decode`).
    @inline(__always)
    mutating func decode<Bytes: Sequence>(_ bytes: Bytes, emit: (Fix) -> Void) where Bytes.Element == UInt8 {
        decoder.decode(bytes, emit: emit)
    }

    /// Decodes a chunk in memory (`NMEADecoder.decode(_:emit:)`'s non-generic path: a serial read's).
    mutating func decode(_ bytes: UnsafeBufferPointer<UInt8>, emit: (Fix) -> Void) {
        decoder.decode(bytes, emit: emit)
    }

    /// Ends the input: delivers the last epoch (`NMEADecoder.finish`).
    mutating func finish(emit: (Fix) -> Void) {
        decoder.finish(emit: emit)
    }

    /// Starts a fresh decoder, adding what the current one counted to the replaced counts.
    mutating func replace() {
        let s = decoder.statistics
        replacedSentences += s.framing.sentences
        replacedErrors += s.framing.rejectedSentences + s.malformedSentences
        decoder = NMEADecoder(requiresChecksum: requiresChecksum)
    }

    /// Starts a fresh decoder, dropping what the current one counted.
    mutating func discard() {
        decoder = NMEADecoder(requiresChecksum: requiresChecksum)
    }
}
