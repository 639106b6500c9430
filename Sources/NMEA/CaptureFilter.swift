/// Removes the comment lines of a capture file (lines whose first byte is `#`), incrementally.
///
/// gpsd's regression captures (`test/daemon/*.log`) start with `#` header lines and may carry `#` comment
/// lines between sentences; a receiver never sends a line that starts with `#`, so such lines are dropped
/// (with the CR or LF that ends them) before framing. Everything else passes through unchanged, whatever
/// the chunking.
public struct CaptureFilter: Sendable {
    private var atLineStart = true
    private var inComment = false

    public init() {}

    /// Filters one chunk into `out` (cleared first).
    public mutating func filter(_ chunk: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        forEachRun(in: chunk) { out.append(contentsOf: $0) }
    }

    /// Calls `body` with each run of `chunk` that is not part of a comment line, in order, without copying.
    ///
    /// A chunk without a `#` at a line start is passed whole, in one call. The runs are only valid during
    /// the call.
    public mutating func forEachRun(in chunk: UnsafeBufferPointer<UInt8>,
                                    _ body: (UnsafeBufferPointer<UInt8>) throws -> Void) rethrows
    {
        guard let base = chunk.baseAddress else { return }
        let n = chunk.count
        var i = 0
        while i < n {
            if inComment {
                while i < n, base[i] != 10, base[i] != 13 { i += 1 }
                if i == n { return }
                inComment = false
                atLineStart = true
                i += 1
                continue
            }
            // The next `#` that starts a line.
            var hash = ByteScanning.firstIndex(of: UInt8(ascii: "#"), base, from: i, count: n)
            while hash < n {
                let lineStart = hash == i ? atLineStart : (base[hash - 1] == 10 || base[hash - 1] == 13)
                if lineStart { break }
                hash = ByteScanning.firstIndex(of: UInt8(ascii: "#"), base, from: hash + 1, count: n)
            }
            if hash > i { try body(UnsafeBufferPointer(start: base + i, count: hash - i)) }
            if hash == n {
                atLineStart = base[n - 1] == 10 || base[n - 1] == 13
                return
            }
            inComment = true
            i = hash + 1
        }
    }
}
