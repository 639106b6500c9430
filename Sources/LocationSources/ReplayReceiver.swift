#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationPosix
import NMEA

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
    /// Configured `stale-after`; nil = 3 cycles (`FixSelector` judges).
    public let staleAfter: Duration?
    let file: String
    /// 1 = capture pace; nil = as fast as possible.
    let rate: Double?
    let loop: Bool
    private let configuration: ReceiverConfiguration
    private let core: ReceiverCore

    private var capture = OwnedFileDescriptor()
    private var pacer: ReadabilityThread?
    private var decoder: NMEADecoder
    private var filter = CaptureFilter()
    private var pending: [Fix] = []
    private var pendingIndex = 0
    /// True when `pending[pendingIndex]` waits for its time (the pacer's deadline).
    private var pendingIsDue = false
    private var previousFixTime: UTCTime?
    /// The last interval between fix times, seconds of capture time.
    private var previousInterval = 1.0
    private var chunk = [UInt8](repeating: 0, count: 1 << 16)
    private var filtered: [UInt8] = []
    private var countedSentences = 0
    private var countedErrors = 0
    private var atEnd = false

    public init(_ configuration: ReceiverConfiguration) {
        guard case let .replay(file, rate, loop) = configuration.source else {
            preconditionFailure("ReplayReceiver needs a replay configuration")
        }
        self.configuration = configuration
        self.name = configuration.name
        self.priority = configuration.priority
        self.staleAfter = configuration.staleAfter
        self.file = file
        self.rate = rate
        self.loop = loop
        self.core = ReceiverCore(configuration: configuration, type: "replay", path: file)
        self.decoder = NMEADecoder(requiresChecksum: !configuration.allowMissingChecksum)
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
            capture.replace(with: try OwnedFileDescriptor(opening: file, flags: O_RDONLY))
        } catch {
            core.setState(.unavailable(reason: "cannot open \(file): \(error)"))
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
            core.setState(.unavailable(reason: "cannot pace \(file): \(error)"))
            core.retryLater { [weak self] in self?.open() }
        }
    }

    private func resetDecoding() {
        let s = decoder.statistics
        countedSentences += s.framing.sentences
        countedErrors += s.framing.rejectedSentences + s.malformedSentences
        decoder = NMEADecoder(requiresChecksum: !configuration.allowMissingChecksum)
        filter = CaptureFilter()
        previousFixTime = nil
        atEnd = false
    }

    private func closeFile() {
        pacer?.cancel {}
        pacer = nil
        capture.close()
        pending.removeAll()
        pendingIndex = 0
        pendingIsDue = false
    }

    /// Delivers the fixes that are due, reading more of the file as needed. Returns when the pacer should
    /// call again: at the next fix's time, after the loop's pause or the end-of-file backoff; nil when
    /// the file was closed.
    private func step() -> Duration? {
        if pendingIsDue {
            pendingIsDue = false
            pendingIndex += 1
            core.deliver(pending[pendingIndex - 1])
        }
        var delivered = 0
        while capture.isOpen {
            if pendingIndex >= pending.count {
                pending.removeAll(keepingCapacity: true)
                pendingIndex = 0
                switch readMore() {
                case .decoded: continue
                case .wait(let delay): return delay
                case .closed: return nil
                }
            }
            let fix = pending[pendingIndex]
            let delay = delayBefore(fix)
            if delay > .microseconds(500) {
                pendingIsDue = true
                return delay
            }
            pendingIndex += 1
            core.deliver(fix)
            delivered += 1
            // As fast as possible, but let stop() and status in between.
            if delivered >= 256 { return .zero }
        }
        return nil
    }

    /// How long to wait before `fix`: the interval since the previous fix time, divided by the rate.
    private func delayBefore(_ fix: Fix) -> Duration {
        guard let rate else { return .zero }
        var interval = previousInterval
        if let t = fix.time, let p = previousFixTime, let dt = t.seconds(since: p) {
            interval = dt > 0 && dt <= 10 ? dt : (dt <= 0 ? 0 : previousInterval)
            if dt > 0 && dt <= 10 { previousInterval = dt }
        }
        if let t = fix.time { previousFixTime = t }
        return .seconds(interval / rate)
    }

    /// What reading the next chunk came to.
    private enum ReadOutcome {
        /// Fixes (possibly none) were decoded into `pending`: go on.
        case decoded
        /// Nothing to deliver now: try again after this long (the loop's pause, the end-of-file backoff).
        case wait(Duration)
        /// The file is closed (a read error; reopening is scheduled).
        case closed
    }

    /// Reads and decodes the next chunk into `pending`.
    private func readMore() -> ReadOutcome {
        guard capture.isOpen else { return .closed }
        let result = chunk.withUnsafeMutableBytes { FileDescriptorOps.read(capture.rawValue, into: $0) }
        switch result {
        case .success(0):
            if !atEnd {
                atEnd = true
                decoder.finish { pending.append($0) }
                countStatistics()
                if !pending.isEmpty { return .decoded }
            }
            if loop {
                _ = FileDescriptorOps.seek(capture.rawValue, toOffset: 0)
                resetDecoding()
                // One cycle's pause between the end and the start, as a receiver would.
                return .wait(rate.map { .seconds(previousInterval / $0) } ?? .zero)
            }
            core.setState(.unavailable(reason: "end of file \(file)"))
            // Watch for more with backoff.
            return .wait(core.backoff.nextDelay())
        case .success(let n):
            if atEnd {
                // The file grew after its end was reported.
                atEnd = false
                core.backoff.reset()
                core.setState(.connected)
                decoder = NMEADecoder(requiresChecksum: !configuration.allowMissingChecksum)
            }
            chunk.withUnsafeBufferPointer { filter.filter(UnsafeBufferPointer(rebasing: $0[0..<n]), into: &filtered) }
            decoder.decode(filtered) { pending.append($0) }
            countStatistics()
            return .decoded
        case .failure(let e):
            closeFile()
            core.setState(.unavailable(reason: "read \(file): \(e)"))
            core.retryLater { [weak self] in self?.open() }
            return .closed
        }
    }

    private func countStatistics() {
        let s = decoder.statistics
        core.count(sentences: countedSentences + s.framing.sentences,
                   errors: countedErrors + s.framing.rejectedSentences + s.malformedSentences)
    }
}
