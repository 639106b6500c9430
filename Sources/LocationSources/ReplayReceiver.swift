#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import LocationCore
import LocationPosix
import NMEA

/// Plays a capture file (NMEA bytes; `#` header and comment lines skipped) as if a receiver sent it:
/// at the capture's own pace (the intervals between fix times), N× faster, or as fast as possible;
/// optionally looping. It is the demo input and the benchmark input.
///
/// At the end of a non-looping file it reports `unavailable` ("end of file") and keeps watching the
/// file with backoff, resuming if more is appended; a file that cannot be opened is retried likewise.
public final class ReplayReceiver: Receiver, @unchecked Sendable {
    public let name: String
    public let priority: Int
    let file: String
    /// 1 = capture pace; nil = as fast as possible.
    let rate: Double?
    let loop: Bool
    private let configuration: ReceiverConfiguration
    private let core: ReceiverCore

    private var fd: Int32 = -1
    private var decoder: NMEADecoder
    private var filter = CaptureFilter()
    private var pending: [Fix] = []
    private var pendingIndex = 0
    private var previousFixTime: UTCTime?
    private var previousDelay = 1.0
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
        let descriptor = Glibc.open(file, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            core.setState(.unavailable(reason: "cannot open \(file): \(Errno.current)"))
            core.retryLater { [weak self] in self?.open() }
            return
        }
        fd = descriptor
        resetDecoding()
        core.backoff.reset()
        core.setState(.connected)
        step()
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
        if fd >= 0 { FileDescriptorOps.close(fd) }
        fd = -1
        pending.removeAll()
        pendingIndex = 0
    }

    /// Delivers the next fix when it is due, reading more of the file as needed.
    private func step() {
        let generation = core.generation
        var delivered = 0
        while true {
            if pendingIndex >= pending.count {
                pending.removeAll(keepingCapacity: true)
                pendingIndex = 0
                if !readMore() { return }
                continue
            }
            let fix = pending[pendingIndex]
            let delay = delayBefore(fix)
            if delay > 0.0005 {
                let due = fix
                core.queue.asyncAfter(deadline: .now() + delay) { [weak self] in
                    guard let self, self.core.generation == generation, self.fd >= 0 else { return }
                    self.pendingIndex += 1
                    self.core.deliver(due)
                    self.step()
                }
                return
            }
            pendingIndex += 1
            core.deliver(fix)
            delivered += 1
            if delivered >= 256 {
                // As fast as possible, but let stop() and status in between.
                core.queue.async { [weak self] in
                    guard let self, self.core.generation == generation, self.fd >= 0 else { return }
                    self.step()
                }
                return
            }
        }
    }

    /// Seconds to wait before `fix`: the interval since the previous fix time, divided by the rate.
    private func delayBefore(_ fix: Fix) -> Double {
        guard let rate else { return 0 }
        var interval = previousDelay
        if let t = fix.time, let p = previousFixTime, let dt = t.seconds(since: p) {
            interval = dt > 0 && dt <= 10 ? dt : (dt <= 0 ? 0 : previousDelay)
            if dt > 0 && dt <= 10 { previousDelay = dt }
        }
        if let t = fix.time { previousFixTime = t }
        return interval / rate
    }

    /// Reads and decodes the next chunk into `pending`. False when nothing more can be read now.
    private func readMore() -> Bool {
        guard fd >= 0 else { return false }
        let result = chunk.withUnsafeMutableBytes { FileDescriptorOps.read(fd, into: $0) }
        switch result {
        case .success(0):
            if !atEnd {
                atEnd = true
                decoder.finish { pending.append($0) }
                countStatistics()
                if !pending.isEmpty { return true }
            }
            if loop {
                lseek(fd, 0, SEEK_SET)
                resetDecoding()
                // One cycle's pause between the end and the start, as a receiver would.
                let generation = core.generation
                core.queue.asyncAfter(deadline: .now() + (rate.map { previousDelay / $0 } ?? 0)) { [weak self] in
                    guard let self, self.core.generation == generation else { return }
                    self.step()
                }
                return false
            }
            core.setState(.unavailable(reason: "end of file \(file)"))
            core.retryLater { [weak self] in self?.resumeAfterEnd() }
            return false
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
            return true
        case .failure(let e):
            closeFile()
            core.setState(.unavailable(reason: "read \(file): \(e)"))
            core.retryLater { [weak self] in self?.open() }
            return false
        }
    }

    private func resumeAfterEnd() {
        guard fd >= 0 else { return }
        step()
    }

    private func countStatistics() {
        let s = decoder.statistics
        core.updateStatus {
            $0.sentences = self.countedSentences + s.framing.sentences
            $0.errors = self.countedErrors + s.framing.rejectedSentences + s.malformedSentences
        }
    }
}
