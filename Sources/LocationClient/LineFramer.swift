/// Splits a byte stream into lines ended by `\n` (docs/PROTOCOL.md: one JSON object per line), holding
/// at most one partial line of bounded size (swift-nio's `splitLines(maximumBufferSize:)`).
///
/// Feed it whatever read(2) returned; it hands back every complete line, without the `\n` (and without
/// a `\r` before it). Empty lines are skipped.
struct LineFramer {
    /// A line, or the unfinished tail of one, was longer than the cap.
    struct LineTooLong: Error, Equatable {
        /// The cap, bytes.
        var maximumLineLength: Int
    }

    /// The longest line accepted, bytes, without the newline.
    let maximumLineLength: Int
    private var partial: [UInt8] = []

    /// - Parameter maximumLineLength: the longest line accepted, bytes.
    init(maximumLineLength: Int) {
        self.maximumLineLength = maximumLineLength
    }

    /// Appends `bytes` and calls `emit` with each line it completes, in order.
    /// - Throws: `LineTooLong` when a line exceeds the cap; the framer is then unusable (the stream has
    ///   lost its framing as far as this reader is concerned).
    mutating func append<Bytes: Collection<UInt8>>(_ bytes: Bytes, emit: ([UInt8]) -> Void) throws(LineTooLong) {
        var start = bytes.startIndex
        while let newline = bytes[start...].firstIndex(of: 10) {
            var line = partial
            line.append(contentsOf: bytes[start..<newline])
            partial.removeAll(keepingCapacity: true)
            start = bytes.index(after: newline)
            if line.last == 13 { line.removeLast() }
            guard line.count <= maximumLineLength else { throw LineTooLong(maximumLineLength: maximumLineLength) }
            if !line.isEmpty { emit(line) }
        }
        partial.append(contentsOf: bytes[start...])
        // One byte of slack for a `\r` that may precede the newline still to come.
        guard partial.count <= maximumLineLength + 1 else { throw LineTooLong(maximumLineLength: maximumLineLength) }
    }
}
