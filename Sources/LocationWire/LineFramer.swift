/// Splits a byte stream into lines ended by `\n` (docs/PROTOCOL.md: one JSON object per line), holding
/// at most one partial line of bounded size (swift-nio's `splitLines(maximumBufferSize:)`). Both ends of
/// the protocol use it: the server for requests, the client for the server's lines.
///
/// Feed it whatever read(2) returned; it hands back every complete line, without the `\n` (and without
/// a `\r` before it). Empty lines are skipped.
public struct LineFramer: Sendable {
    /// A line, or the unfinished tail of one, was longer than the cap.
    public struct LineTooLong: Error, Equatable, Sendable {
        /// The cap, bytes.
        public var maximumLineLength: Int

        public init(maximumLineLength: Int) {
            self.maximumLineLength = maximumLineLength
        }
    }

    /// What `feed` finds in the stream.
    public enum Event: Equatable, Sendable {
        /// A complete line, without its line end.
        case line([UInt8])
        /// A line longer than the cap: its bytes are dropped up to the next `\n`, where framing resumes.
        case tooLong
    }

    /// The longest line accepted, bytes, without the newline.
    public let maximumLineLength: Int
    private var partial: [UInt8] = []
    /// Dropping the rest of an over-long line.
    private var discarding = false

    /// - Parameter maximumLineLength: the longest line accepted, bytes.
    public init(maximumLineLength: Int) {
        self.maximumLineLength = maximumLineLength
    }

    /// Appends `bytes` and calls `emit` with each event, in order. An over-long line is reported once and
    /// skipped; the lines after it are framed as usual.
    public mutating func feed<Bytes: Collection<UInt8>>(_ bytes: Bytes, _ emit: (Event) -> Void) {
        var start = bytes.startIndex
        while let newline = bytes[start...].firstIndex(of: 10) {
            defer { start = bytes.index(after: newline) }
            if discarding {
                discarding = false
                continue
            }
            var line = partial
            line.append(contentsOf: bytes[start..<newline])
            partial.removeAll(keepingCapacity: true)
            if line.last == 13 { line.removeLast() }
            if line.count > maximumLineLength {
                emit(.tooLong)
            } else if !line.isEmpty {
                emit(.line(line))
            }
        }
        guard !discarding else { return }
        partial.append(contentsOf: bytes[start...])
        // One byte of slack for a `\r` that may precede the newline still to come.
        if partial.count > maximumLineLength + 1 {
            partial.removeAll()
            discarding = true
            emit(.tooLong)
        }
    }

    /// Appends `bytes` and calls `emit` with each line it completes, in order.
    /// - Throws: `LineTooLong` when a line exceeds the cap; the lines before it were emitted, and the
    ///   stream has lost its framing as far as a reader that treats this as fatal is concerned.
    public mutating func append<Bytes: Collection<UInt8>>(_ bytes: Bytes, emit: ([UInt8]) -> Void) throws(LineTooLong) {
        var tooLong = false
        feed(bytes) { event in
            guard !tooLong else { return }
            switch event {
            case .line(let line): emit(line)
            case .tooLong: tooLong = true
            }
        }
        if tooLong { throw LineTooLong(maximumLineLength: maximumLineLength) }
    }
}
