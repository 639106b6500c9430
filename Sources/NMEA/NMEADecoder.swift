import LocationCore

/// Counts kept by `NMEADecoder`: framing plus sentence decoding.
public struct DecoderStatistics: Hashable, Sendable {
    /// What the framer delivered and rejected.
    public var framing = FramingStatistics()
    /// Checksummed sentences whose fields did not decode (skipped).
    public var malformedSentences = 0
    /// Sentences recognised and deliberately not used (AIS, other proprietary or standard sentences).
    public var ignoredSentences = 0
    /// Fixes delivered (one per epoch, whatever its mode).
    public var fixes = 0

    public init() {}
}

/// Bytes in, one `Fix` per epoch out: `SentenceFramer` → `SentenceParser` → `FixAssembler`.
///
/// Feed it whatever a serial read or a file read returns; it keeps a bounded buffer between calls.
/// Bad input never stops it: each garbled or malformed sentence is counted in `statistics` and skipped.
public struct NMEADecoder: Sendable {
    private var framer: SentenceFramer
    private var assembler = FixAssembler()
    private var malformed = 0
    private var ignored = 0
    private var fixes = 0

    /// - Parameters:
    ///   - requiresChecksum: reject sentences without `*hh` (gpsd ≥ 3.25 behaviour); default true.
    ///   - maximumSentenceLength: longest sentence accepted, bytes; default 256.
    public init(requiresChecksum: Bool = true, maximumSentenceLength: Int = 256) {
        framer = SentenceFramer(maximumSentenceLength: maximumSentenceLength, requiresChecksum: requiresChecksum)
    }

    /// Counts so far.
    public var statistics: DecoderStatistics {
        var s = DecoderStatistics()
        s.framing = framer.statistics
        s.malformedSentences = malformed
        s.ignoredSentences = ignored
        s.fixes = fixes
        return s
    }

    /// Decodes a chunk of bytes; calls `emit` for each fix completed by it.
    public mutating func decode<Bytes: Sequence>(_ bytes: Bytes, emit: (Fix) throws -> Void) rethrows
        where Bytes.Element == UInt8
    {
        let handled: Void?? = try bytes.withContiguousStorageIfAvailable { chunk in try decode(chunk, emit: emit) }
        guard handled == nil else { return }
        // Not contiguous (a lazy filter, say): through a bounded buffer, whose chunks may cut sentences.
        var chunk: [UInt8] = []
        chunk.reserveCapacity(4096)
        for byte in bytes {
            chunk.append(byte)
            if chunk.count == 4096 {
                try chunk.withUnsafeBufferPointer { try decode($0, emit: emit) }
                chunk.removeAll(keepingCapacity: true)
            }
        }
        try chunk.withUnsafeBufferPointer { try decode($0, emit: emit) }
    }

    /// Decodes a chunk in memory; calls `emit` for each fix completed by it. The same as `decode(_:emit:)`
    /// without the generic `Sequence`: a receiver in another module calls this compiled path directly, where
    /// the generic one, not specialized across modules, went through `Sequence`'s witness table per chunk.
    public mutating func decode(_ bytes: UnsafeBufferPointer<UInt8>, emit: (Fix) throws -> Void) rethrows {
        var malformed = 0, ignored = 0, fixes = 0
        defer {
            self.malformed += malformed
            self.ignored += ignored
            self.fixes += fixes
        }
        try framer.feed(bytes) { sentence in
            let decoded: DecodedSentence
            do {
                decoded = try SentenceParser.parse(sentence)
            } catch {
                malformed += 1
                return
            }
            if case .ignored = decoded.sentence { ignored += 1; return }
            try assembler.add(decoded) { fix in
                fixes += 1
                try emit(fix)
            }
        }
    }

    /// Ends the input: delivers the last epoch.
    public mutating func finish(emit: (Fix) throws -> Void) rethrows {
        framer.finish()
        var count = 0
        try assembler.finish { fix in
            count += 1
            try emit(fix)
        }
        fixes += count
    }
}
