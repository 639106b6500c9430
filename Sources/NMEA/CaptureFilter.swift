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
        let n = chunk.count
        var i = 0
        while i < n {
            if inComment {
                while i < n, chunk[i] != 10, chunk[i] != 13 { i += 1 }
                if i == n { break }
                inComment = false; atLineStart = true; i += 1
                continue
            }
            var j = i
            var lineStart = atLineStart
            while j < n {
                let b = chunk[j]
                if lineStart && b == 35 { break }
                lineStart = b == 10 || b == 13
                j += 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[i..<j]))
            atLineStart = lineStart
            if j < n { inComment = true; i = j + 1 } else { i = j }
        }
    }
}
