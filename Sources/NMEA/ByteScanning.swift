/// Word-at-a-time byte scanning ("SWAR": SIMD within a register) for the framer and the capture filter.
///
/// Eight bytes are loaded as one `UInt64` and tested together with the zero-byte and less-than tricks of Sean
/// Eron Anderson's "Bit Twiddling Hacks" (graphics.stanford.edu/~seander/bithacks.html, "Determine if a
/// word has a zero byte" / "… has a byte less than n"). Each test answers "is there such a byte in the word"
/// exactly (no false negative, no false positive), except `hasSentenceBreak`, which may also flag a space or
/// `%`; the caller then finds the byte with a plain loop.
enum ByteScanning {
    /// 0x01 in every byte.
    static let ones: UInt64 = 0x0101_0101_0101_0101
    /// 0x80 in every byte.
    static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// True when some byte of `word` is zero.
    @inline(__always)
    static func hasZeroByte(_ word: UInt64) -> Bool {
        (word &- ones) & ~word & highBits != 0
    }

    /// The number of zero bytes in `word`, exactly (the carry-free form of the zero-byte test: adding 0x7F to
    /// the low seven bits of a byte sets its high bit unless they are all zero, and no carry leaves the byte).
    @inline(__always)
    static func zeroByteCount(_ word: UInt64) -> Int {
        let lowBits = ~highBits
        let nonzero = (((word & lowBits) &+ lowBits) | word) & highBits
        return 8 - nonzero.nonzeroBitCount
    }

    /// The number of bytes equal to `byte` in `base[start..<count]`, eight at a time.
    @inline(__always)
    static func count(of byte: UInt8, _ base: UnsafePointer<UInt8>, from start: Int, count: Int) -> Int {
        var n = 0
        var i = start
        let raw = UnsafeRawPointer(base)
        let pattern = ones &* UInt64(byte)
        while i + 8 <= count {
            n += zeroByteCount(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) ^ pattern)
            i += 8
        }
        while i < count {
            if base[i] == byte { n += 1 }
            i += 1
        }
        return n
    }

    /// True when some byte of `word` equals `byte`.
    @inline(__always)
    static func hasByte(_ word: UInt64, _ byte: UInt8) -> Bool {
        hasZeroByte(word ^ (ones &* UInt64(byte)))
    }

    /// True when some byte of `word` may not continue an NMEA sentence: always when one is a control byte
    /// (< 0x20, CR and LF included), DEL or a non-ASCII byte (≥ 0x7F), or a start character `$` / `!` (NMEA
    /// 0183 v4.11 §5.3); also for a space or `%`, which do continue one. Callers check the bytes of a word
    /// this answers true for one by one, so the false alarms (rare in NMEA) only cost speed.
    @inline(__always)
    static func hasSentenceBreak(_ word: UInt64) -> Bool {
        let control = (word &- ones &* 0x20) & ~word & highBits
        // ≥ 0x7F: adding 1 sets the high bit of 0x7F; a carry into the next byte only leaves a byte of 0xFF,
        // itself a hit.
        let highOrDelete = (word | (word &+ ones)) & highBits
        // `!` (0x21) and `$` (0x24) differ from 0x21 only in bits 0x05, as do space (0x20) and `%` (0x25).
        let start = hasZeroByte((word ^ (ones &* 0x21)) & ~(ones &* 0x05))
        return control | highOrDelete != 0 || start
    }

    /// True for a byte that continues a sentence: printable ASCII other than `$` and `!`.
    @inline(__always)
    static func continuesSentence(_ byte: UInt8) -> Bool {
        byte &- 0x20 < 0x5F && byte != UInt8(ascii: "$") && byte != UInt8(ascii: "!")
    }

    /// The XOR of the eight bytes of `word`.
    @inline(__always)
    static func xorOfBytes(_ word: UInt64) -> UInt8 {
        var w = word ^ (word >> 32)
        w ^= w >> 16
        w ^= w >> 8
        return UInt8(truncatingIfNeeded: w)
    }

    /// The end of the run of sentence bytes starting at `start` (the first byte that does not continue a
    /// sentence, or `count`), and the XOR of the run's bytes (the NMEA checksum of that run).
    @inline(__always)
    static func sentenceRun(_ base: UnsafePointer<UInt8>, from start: Int, count: Int) -> (end: Int, checksum: UInt8) {
        var i = start
        var words: UInt64 = 0
        let raw = UnsafeRawPointer(base)
        while i + 8 <= count {
            let word = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            if hasSentenceBreak(word) { break }
            words ^= word
            i += 8
        }
        var sum = xorOfBytes(words)
        while i < count, continuesSentence(base[i]) {
            sum ^= base[i]
            i += 1
        }
        return (i, sum)
    }

    /// The index of the first `byte` in `base[start..<count]`, or `count`.
    @inline(__always)
    static func firstIndex(of byte: UInt8, _ base: UnsafePointer<UInt8>, from start: Int, count: Int) -> Int {
        var i = start
        let raw = UnsafeRawPointer(base)
        while i + 8 <= count {
            if hasByte(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self), byte) { break }
            i += 8
        }
        while i < count, base[i] != byte { i += 1 }
        return i
    }
}
