#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The agent's standard input, read on a thread of its own, as lines each tagged with the question
/// that was on screen when its first byte was read.
///
/// The rule (issue 33, item 3: a `d` typed while no question was shown answered the next one and stored
/// a refusal for a program nobody had read about):
/// - **At a terminal** an answer belongs to the question on screen. Each time a question is shown,
///   ``showingQuestion()`` discards what was typed and not yet read — the kernel's input queue, including
///   a line begun and not ended (`tcflush(TCIFLUSH)`) — and starts a new generation; a line read before
///   it carries the older generation and the agent drops it. The flush and each read are serialised by
///   one lock, so no line typed before the question can pass for one typed after it.
/// - **Off a terminal** (a pipe, a file) nothing can tell when a line was written: every line is kept
///   and answers the next question, in order, so that `printf 'o\nd\n' | locationctl agent` answers the
///   first two questions. A program that drives the agent through a pipe and must answer only what it
///   read writes each answer after reading its question.
final class AgentInput: Sendable {
    /// Whether standard input is a terminal (`isatty(0)`).
    let isTerminal: Bool
    /// The current generation: how many questions were shown. Held while reading and while flushing.
    private let generation = Mutex(0)

    init() {
        isTerminal = isatty(0) == 1
    }

    /// Called just before a new question is written to the screen: at a terminal, discards pending input
    /// and starts a new generation (before, not after: a key pressed as soon as the question shows is
    /// never lost). The corresponding C call is `tcflush(0, TCIFLUSH)`.
    /// - Returns: the generation of lines typed from now on; a line with a lower one was typed before.
    func showingQuestion() -> Int {
        guard isTerminal else { return 0 }
        return generation.withLock { current in
            tcflush(0, TCIFLUSH)
            current += 1
            return current
        }
    }

    /// Starts the reading thread.
    /// - Parameters:
    ///   - line: called with each line (without its `\n` or `\r\n`) and the generation its first byte was read in.
    ///   - end: called once, at the end of standard input or on a read error.
    func start(line: @escaping @Sendable (String, Int) -> Void, end: @escaping @Sendable () -> Void) {
        startThread { [self] in
            var pending: [UInt8] = []
            // The generation the line being read began in; nil before its first byte.
            var began: Int? = nil
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                guard let (count, readIn) = readChunk(into: &buffer), count > 0 else { break }
                for byte in buffer[..<count] {
                    if began == nil { began = readIn }
                    guard byte == UInt8(ascii: "\n") else {
                        pending.append(byte)
                        continue
                    }
                    if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
                    line(String(decoding: pending, as: UTF8.self), began ?? readIn)
                    pending.removeAll(keepingCapacity: true)
                    began = nil
                }
            }
            if let began, !pending.isEmpty { line(String(decoding: pending, as: UTF8.self), began) }
            end()
        }
    }

    /// One `read(2)` of standard input. At a terminal it waits with `poll(2)` outside the lock and reads
    /// under it, only if input is still there (a flush may have taken it meanwhile), so that a read never
    /// blocks while holding the lock and never straddles a flush.
    /// - Returns: the bytes read (0 at the end of input) and the generation they were read in; nil on an error.
    private func readChunk(into buffer: inout [UInt8]) -> (Int, Int)? {
        guard isTerminal else {
            while true {
                let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
                if count >= 0 { return (count, 0) }
                if errno != EINTR { return nil }
            }
        }
        while true {
            var waiting = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            let ready = poll(&waiting, 1, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return nil
            }
            enum Attempt { case chunk(Int, Int), flushedMeanwhile, failed }
            let attempt: Attempt = generation.withLock { current in
                var still = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
                guard poll(&still, 1, 0) == 1 else { return .flushedMeanwhile }
                let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
                if count >= 0 { return .chunk(count, current) }
                return errno == EINTR || errno == EAGAIN ? .flushedMeanwhile : .failed
            }
            switch attempt {
            case .chunk(let count, let readIn): return (count, readIn)
            case .flushedMeanwhile: continue
            case .failed: return nil
            }
        }
    }
}
