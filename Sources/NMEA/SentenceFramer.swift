/// Counts of what the framer rejected or passed over, by kind.
public struct FramingStatistics: Hashable, Sendable {
    /// Sentences delivered (checksum valid, or absent and allowed).
    public var sentences = 0
    /// Sentences whose checksum did not match their bytes.
    public var checksumMismatches = 0
    /// Sentences without `*hh` while checksums are required.
    public var missingChecksums = 0
    /// Sentences longer than the framer's limit.
    public var overlongSentences = 0
    /// Sentences cut off by the start of another (`$`/`!` before the line ended) or by a control byte.
    public var truncatedSentences = 0
    /// Bytes outside any sentence: NUL, binary data, stray text. CR and LF between sentences are not counted.
    public var discardedBytes = 0

    public init() {}

    /// Every rejected sentence, whatever the reason.
    public var rejectedSentences: Int {
        checksumMismatches + missingChecksums + overlongSentences + truncatedSentences
    }
}

/// Incremental NMEA 0183 framer: turns arbitrary byte chunks into checksummed sentences.
///
/// A sentence starts with `$` (parametric) or `!` (encapsulated, e.g. AIS), holds printable ASCII, ends
/// with `*hh` (two hex digits, either case: the XOR of the bytes between the start character and `*`) and
/// then CR LF, LF or CR (NMEA 0183 v4.11 §5.3). Anything else — NUL bytes, binary data, a line cut off by the
/// next `$` — is counted and skipped, and the framer resynchronises at the next start character. The buffer
/// is bounded by `maximumSentenceLength`, so a receiver that never sends a line end cannot grow memory.
///
/// Feeding the same bytes whole, byte by byte or in any chunks yields the same sentences.
public struct SentenceFramer: Sendable {
    /// The longest sentence accepted, in bytes from the start character to the last checksum digit.
    /// The standard says 82 with CR LF; real receivers send longer (u-blox PUBX, GSV with signal ids).
    public let maximumSentenceLength: Int
    /// When false, a sentence without `*hh` is accepted (old receivers omit it); gpsd ≥ 3.25 rejects them.
    public let requiresChecksum: Bool
    /// What was delivered and rejected so far.
    public private(set) var statistics = FramingStatistics()

    private var buffer: [UInt8] = []
    private var inSentence = false
    private var overlong = false

    /// - Parameters:
    ///   - maximumSentenceLength: bytes from `$` to the end of the checksum; default 256.
    ///   - requiresChecksum: reject sentences that carry no checksum; default true.
    public init(maximumSentenceLength: Int = 256, requiresChecksum: Bool = true) {
        precondition(maximumSentenceLength >= 8, "a sentence needs room for its address and checksum")
        self.maximumSentenceLength = maximumSentenceLength
        self.requiresChecksum = requiresChecksum
        buffer.reserveCapacity(maximumSentenceLength)
    }

    /// Feeds bytes; calls `body` once for each complete, valid sentence, in order.
    ///
    /// The closure receives the sentence's bytes from the start character up to, not including, `*` (or
    /// the line end when no checksum is present and allowed); the buffer is only valid during the call.
    public mutating func feed<Bytes: Sequence>(_ bytes: Bytes, _ body: (UnsafeBufferPointer<UInt8>) throws -> Void)
        rethrows where Bytes.Element == UInt8
    {
        let handled: Void?? = try bytes.withContiguousStorageIfAvailable { chunk in try feed(chunk, body) }
        if handled == nil {
            for byte in bytes { try consume(byte, body) }
        }
    }

    /// Feeds a chunk in memory (`feed(_:_:)` without the generic `Sequence`: a caller in another module
    /// reaches this compiled path directly, not through the protocol's witness table).
    public mutating func feed(_ chunk: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        if let base = chunk.baseAddress { try feed(base, count: chunk.count, body) }
    }

    /// The contiguous path: a sentence that lies wholly inside the chunk is checked and delivered in place,
    /// its checksum computed while it is scanned; only a sentence cut by the chunk's end goes to `buffer`.
    private mutating func feed(_ base: UnsafePointer<UInt8>, count n: Int,
                               _ body: (UnsafeBufferPointer<UInt8>) throws -> Void) rethrows
    {
        var i = 0
        while i < n {
            let byte = base[i]
            if inSentence {
                // The rest of a sentence begun in an earlier chunk: append its run, then handle what ends it.
                if !overlong && ByteScanning.continuesSentence(byte) {
                    let end = ByteScanning.sentenceRun(base, from: i, count: n).end
                    if end - i <= maximumSentenceLength - buffer.count {
                        buffer.append(contentsOf: UnsafeBufferPointer(start: base + i, count: end - i))
                        i = end
                        continue
                    }
                }
                try consume(byte, body)
                i += 1
                continue
            }
            switch byte {
            case UInt8(ascii: "$"), UInt8(ascii: "!"):
                let (end, sum) = ByteScanning.sentenceRun(base, from: i + 1, count: n)
                let length = end - i
                if end == n {
                    // Cut by the end of the chunk: keep it for the next one.
                    inSentence = true
                    buffer.removeAll(keepingCapacity: true)
                    if length <= maximumSentenceLength {
                        buffer.append(contentsOf: UnsafeBufferPointer(start: base + i, count: length))
                    } else {
                        overlong = true
                    }
                    return
                }
                let next = base[end]
                let endsLine = next == 13 || next == 10
                if length > maximumSentenceLength {
                    statistics.overlongSentences += 1
                } else if endsLine {
                    try complete(UnsafeBufferPointer(start: base + i, count: length), checksum: sum, body)
                } else {
                    // Cut off by another start character or by a control or binary byte.
                    statistics.truncatedSentences += 1
                }
                if next == UInt8(ascii: "$") || next == UInt8(ascii: "!") {
                    i = end
                } else {
                    if !endsLine { statistics.discardedBytes += 1 }
                    i = end + 1
                }
            case 13, 10:
                i += 1
            default:
                statistics.discardedBytes += 1
                i += 1
            }
        }
    }

    /// Signals the end of input: a sentence still open had no line end; it is counted as truncated.
    public mutating func finish() {
        if inSentence {
            statistics.truncatedSentences += 1
            reset()
        }
    }

    @inline(__always)
    private mutating func reset() {
        buffer.removeAll(keepingCapacity: true)
        inSentence = false
        overlong = false
    }

    @inline(__always)
    private mutating func consume(_ byte: UInt8, _ body: (UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        switch byte {
        case UInt8(ascii: "$"), UInt8(ascii: "!"):
            if inSentence {
                if overlong { statistics.overlongSentences += 1 } else { statistics.truncatedSentences += 1 }
            }
            buffer.removeAll(keepingCapacity: true)
            buffer.append(byte)
            inSentence = true
            overlong = false
        case UInt8(ascii: "\r"), UInt8(ascii: "\n"):
            if inSentence {
                if overlong {
                    statistics.overlongSentences += 1
                } else {
                    try complete(body)
                }
                reset()
            }
        case 0x20...0x7E:
            if inSentence {
                if overlong { return }
                if buffer.count >= maximumSentenceLength {
                    overlong = true
                    buffer.removeAll(keepingCapacity: true)
                } else {
                    buffer.append(byte)
                }
            } else {
                statistics.discardedBytes += 1
            }
        default:
            // NUL, binary data, other control bytes: a sentence cannot contain them.
            if inSentence {
                if overlong { statistics.overlongSentences += 1 } else { statistics.truncatedSentences += 1 }
                reset()
            }
            statistics.discardedBytes += 1
        }
    }

    private mutating func complete(_ body: (UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        try buffer.withUnsafeBufferPointer { sentence in
            var sum: UInt8 = 0
            for i in 1..<sentence.count { sum ^= sentence[i] }
            try complete(sentence, checksum: sum, body)
        }
    }

    /// Checks one line-terminated sentence and delivers it.
    /// - Parameters:
    ///   - sentence: the bytes from the start character to the line end, exclusive.
    ///   - checksum: the XOR of all of them but the start character (`*hh` included).
    private mutating func complete(_ sentence: UnsafeBufferPointer<UInt8>, checksum: UInt8,
                                   _ body: (UnsafeBufferPointer<UInt8>) throws -> Void) rethrows
    {
        let count = sentence.count
        // Find the checksum delimiter: it must be followed by exactly two hex digits.
        if count >= 4, sentence[count - 3] == UInt8(ascii: "*") {
            guard let high = hexValue(sentence[count - 2]), let low = hexValue(sentence[count - 1]) else {
                statistics.checksumMismatches += 1
                return
            }
            // The XOR of the bytes between the start character and `*`.
            let sum = checksum ^ sentence[count - 3] ^ sentence[count - 2] ^ sentence[count - 1]
            guard sum == high << 4 | low else {
                statistics.checksumMismatches += 1
                return
            }
            statistics.sentences += 1
            try body(UnsafeBufferPointer(rebasing: sentence[0..<(count - 3)]))
        } else if !requiresChecksum, count >= 2, !sentence.contains(UInt8(ascii: "*")) {
            statistics.sentences += 1
            try body(sentence)
        } else if sentence.contains(UInt8(ascii: "*")) {
            statistics.checksumMismatches += 1
        } else {
            statistics.missingChecksums += 1
        }
    }
}

@inline(__always)
func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte &- UInt8(ascii: "0")
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte &- UInt8(ascii: "A") &+ 10
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte &- UInt8(ascii: "a") &+ 10
    default: return nil
    }
}
