/// Removes the comment lines of a capture file (lines whose first byte is `#`), incrementally.
///
/// gpsd's regression captures (`test/daemon/*.log`) start with `#` header lines and may carry `#` comment
/// lines between sentences; a receiver never sends a line that starts with `#`, so such lines are dropped
/// before framing. Everything else passes through unchanged, whatever the chunking.
public struct CaptureFilter: Sendable {
    private var atLineStart = true
    private var inComment = false

    public init() {}

    /// Filters one chunk into `out` (cleared first).
    public mutating func filter(_ chunk: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        for byte in chunk {
            if inComment {
                if byte == 10 || byte == 13 { inComment = false; atLineStart = true }
                continue
            }
            if atLineStart && byte == UInt8(ascii: "#") {
                inComment = true
                continue
            }
            atLineStart = byte == 10 || byte == 13
            out.append(byte)
        }
    }
}
