import LocationCore
import LocationPosix

/// Plays a capture file (NMEA bytes; `#` header and comment lines skipped) as if a receiver sent it:
/// at the capture's own pace (the intervals between fix times), N× faster, or as fast as possible;
/// optionally looping. It is the demo input and the benchmark input.
///
/// At the end of a non-looping file it reports `unavailable` ("end of file") and keeps watching the
/// file with backoff, resuming if more is appended; a file that cannot be opened is retried likewise.
///
/// Paced as the other receivers read: by a `ReadabilityThread`, here with no descriptor to watch (a
/// regular file is always readable), only the deadlines of the next fix, the loop's pause and the
/// end-of-file backoff.
///
/// `@unchecked Sendable`: everything it changes is changed on `core.queue` only (the pacing thread runs
/// its handler there); the rest never changes.
public final class ReplayReceiver: Receiver, @unchecked Sendable {
    /// The config section name; every fix's `device`.
    public let name: String
    /// Configured priority: higher wins while it has a valid fix.
    public let priority: Int
    /// A recording of any year at any pace, looped: the 0,0 and speed rules only.
    public var plausibility: FixPlausibility.Configuration { .replay }
    /// Configured `stale-after`; nil = 3 cycles (`FixSelector` judges).
    public let staleAfter: Duration?
    private let core: ReceiverCore

    /// The capture file being read.
    private var capture: Capture
    /// The thread that calls `step()` at each fix's time.
    private var pacer: ReadabilityThread?
    /// The decoder, with the counts of those replaced at each reopen and loop.
    private var decoding: CountingDecoder
    /// The decoded fixes not yet delivered and when each is due.
    private var pacing: Pacing

    public init(_ configuration: ReceiverConfiguration) {
        guard case let .replay(file, rate, loop) = configuration.source else {
            preconditionFailure("ReplayReceiver needs a replay configuration")
        }
        self.name = configuration.name
        self.priority = configuration.priority
        self.staleAfter = configuration.staleAfter
        self.core = ReceiverCore(configuration: configuration, type: "replay", path: file)
        self.capture = Capture(path: file, loops: loop, paced: rate != nil)
        self.decoding = CountingDecoder(requiresChecksum: !configuration.allowMissingChecksum)
        self.pacing = Pacing(rate: rate)
    }

    public var status: ReceiverStatus { core.status }

    public func start(_ handler: @escaping @Sendable (ReceiverEvent) -> Void) {
        core.start(handler) { self.open() }
    }

    public func stop() {
        core.stop { closeFile() }
    }

    // MARK: - On core.queue

    private func open() {
        do {
            try capture.open()
        } catch {
            core.setState(.unavailable(reason: "cannot open \(capture.path): \(error)"))
            core.retryLater { [weak self] in self?.open() }
            return
        }
        resetDecoding()
        core.backoff.reset()
        core.setState(.connected)
        do {
            pacer = try ReadabilityThread(fileDescriptor: -1, queue: core.queue, firstDeadline: .zero) { [weak self] _ in
                self?.step()
            }
        } catch {
            closeFile()
            core.setState(.unavailable(reason: "cannot pace \(capture.path): \(error)"))
            core.retryLater { [weak self] in self?.open() }
        }
    }

    /// Reads the capture anew (opened or looped): a fresh decoder, keeping the counts; a fresh filter.
    private func resetDecoding() {
        decoding.replace()
        capture.restart()
        pacing.forgetPreviousTime()
    }

    private func closeFile() {
        pacer?.cancel {}
        pacer = nil
        capture.close()
        pacing.removeAll()
    }

    /// Delivers the fixes that are due, reading more of the file as needed. Returns when the pacer should
    /// call again: at the next fix's time, after the loop's pause or the end-of-file backoff; nil when
    /// the file was closed.
    private func step() -> Duration? {
        if let fix = pacing.takeDueFix() { core.deliver(fix) }
        var delivered = 0
        while capture.isOpen {
            switch pacing.next() {
            case .exhausted:
                switch readMore() {
                case .decoded: continue
                case .wait(let delay): return delay
                case .closed: return nil
                }
            case .wait(let delay):
                return delay
            case .deliver(let fix):
                core.deliver(fix)
                delivered += 1
                // As fast as possible, but let stop() and status in between.
                if delivered >= 256 { return .zero }
            }
        }
        return nil
    }

    /// What reading the next chunk came to.
    private enum ReadOutcome {
        /// Fixes (possibly none) were decoded into `pacing`: go on.
        case decoded
        /// Nothing to deliver now: try again after this long (the loop's pause, the end-of-file backoff).
        case wait(Duration)
        /// The file is closed (a read error; reopening is scheduled).
        case closed
    }

    /// Reads and decodes the next chunk into `pacing`.
    private func readMore() -> ReadOutcome {
        guard capture.isOpen else { return .closed }
        switch capture.read() {
        case .success(0):
            if !capture.atEnd {
                capture.atEnd = true
                decoding.finish { pacing.append($0) }
                countStatistics()
                if pacing.hasFixes { return .decoded }
            }
            if capture.loops {
                capture.rewind()
                resetDecoding()
                // One cycle's pause between the end and the start, as a receiver would.
                return .wait(pacing.loopPause)
            }
            core.setState(.unavailable(reason: "end of file \(capture.path)"))
            // Watch for more with backoff.
            return .wait(core.backoff.nextDelay())
        case .success:
            if capture.atEnd {
                // The file grew after its end was reported.
                capture.atEnd = false
                core.backoff.reset()
                core.setState(.connected)
                decoding.discard()
            }
            decoding.decode(capture.filtered) { pacing.append($0) }
            countStatistics()
            return .decoded
        case .failure(let e):
            closeFile()
            core.setState(.unavailable(reason: "read \(capture.path): \(e)"))
            core.retryLater { [weak self] in self?.open() }
            return .closed
        }
    }

    /// Reports the counts of all decoders so far.
    private func countStatistics() {
        let s = decoding.statistics
        core.count(sentences: decoding.replacedSentences + s.framing.sentences,
                   errors: decoding.replacedErrors + s.framing.rejectedSentences + s.malformedSentences)
    }
}
