#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationPosix
import NMEA

extension ReplayReceiver {
    /// The capture file being read: its path, whether it loops, the open descriptor, the read buffer, the
    /// filter that drops `#` header and comment lines, and whether its end was reached.
    ///
    /// `~Copyable`: it owns the descriptor.
    struct Capture: ~Copyable {
        /// The capture file.
        let path: String
        /// Whether playback starts over at the end.
        let loops: Bool
        private var descriptor = OwnedFileDescriptor()
        private var chunk: [UInt8]
        private var filter = CaptureFilter()
        /// The last chunk read, `#` lines removed.
        private(set) var filtered: [UInt8] = []
        /// True once a read found the end of the file (reset when it grows, loops or is reopened).
        var atEnd = false

        /// - Parameters:
        ///   - path: the capture file.
        ///   - loops: whether playback starts over at the end.
        ///   - paced: whether fixes are delivered at the capture's pace (a rate): then the file is read 1 KiB at a
        ///     time, about an epoch of NMEA, so that the sentences counted (STATUS `sentences`) follow the fixes
        ///     delivered instead of a whole small capture's at its first read (issue 33); else 64 KiB at a time.
        init(path: String, loops: Bool, paced: Bool) {
            self.path = path
            self.loops = loops
            chunk = [UInt8](repeating: 0, count: paced ? 1 << 10 : 1 << 16)
        }

        var isOpen: Bool { descriptor.isOpen }

        /// Opens the file (closing the one open, if any).
        /// - Throws: the `Errno` of open(2).
        mutating func open() throws(Errno) {
            descriptor.replace(with: try OwnedFileDescriptor(opening: path, flags: O_RDONLY))
        }

        /// Closes the file.
        mutating func close() {
            descriptor.close()
        }

        /// Starts reading from the beginning of the file again (the loop); a failed seek shows as the next
        /// read's end of file.
        mutating func rewind() {
            _ = FileDescriptorOps.seek(descriptor.rawValue, toOffset: 0)
        }

        /// Forgets where the filter was in a line and that the end was reached: the capture is read anew.
        mutating func restart() {
            filter = CaptureFilter()
            atEnd = false
        }

        /// Reads the next chunk of the file into `filtered`, `#` lines removed.
        /// - Returns: bytes read (0 at the end of the file), or read(2)'s error.
        mutating func read() -> Result<Int, Errno> {
            let result = chunk.withUnsafeMutableBytes { FileDescriptorOps.read(descriptor.rawValue, into: $0) }
            if case .success(let n) = result, n > 0 {
                chunk.withUnsafeBufferPointer { filter.filter(UnsafeBufferPointer(rebasing: $0[0..<n]), into: &filtered) }
            }
            return result
        }
    }

    /// The pacing of fixes: the fixes decoded from the capture and not yet delivered, whether the next one
    /// waits for its time, and the capture times that set the pace (the interval between fix times,
    /// divided by the rate).
    struct Pacing {
        /// 1 = capture pace; nil = as fast as possible.
        let rate: Double?
        private var pending: [Fix] = []
        /// The next fix of `pending` to deliver.
        private var index = 0
        /// True when `pending[index]` waits for its time (the pacer's deadline).
        private var isDue = false
        private var previousFixTime: UTCTime?
        /// The last interval between fix times, seconds of capture time.
        private var previousInterval = 1.0

        /// - Parameter rate: 1 = capture pace; nil = as fast as possible.
        init(rate: Double?) {
            self.rate = rate
        }

        /// What comes next.
        enum Next {
            /// This fix, now.
            case deliver(Fix)
            /// The next fix, after this long.
            case wait(Duration)
            /// Every decoded fix was delivered: decode more.
            case exhausted
        }

        /// Whether fixes wait to be delivered (decoded since the last `exhausted`).
        var hasFixes: Bool { !pending.isEmpty }

        /// Queues a decoded fix.
        mutating func append(_ fix: Fix) {
            pending.append(fix)
        }

        /// The fix whose time has come, if the pacer was waiting for one.
        mutating func takeDueFix() -> Fix? {
            guard isDue else { return nil }
            isDue = false
            index += 1
            return pending[index - 1]
        }

        /// The next fix if it is due within half a millisecond, else how long until it is; `exhausted`
        /// (the queue emptied, keeping its storage) once all were delivered.
        mutating func next() -> Next {
            guard index < pending.count else {
                pending.removeAll(keepingCapacity: true)
                index = 0
                return .exhausted
            }
            let fix = pending[index]
            let delay = delayBefore(fix)
            if delay > .microseconds(500) {
                isDue = true
                return .wait(delay)
            }
            index += 1
            return .deliver(fix)
        }

        /// Drops the fixes not yet delivered.
        mutating func removeAll() {
            pending.removeAll()
            index = 0
            isDue = false
        }

        /// Forgets the previous fix time (the capture is read anew); the interval stays.
        mutating func forgetPreviousTime() {
            previousFixTime = nil
        }

        /// The pause between the end of a looping capture and its start: one cycle, as a receiver would.
        var loopPause: Duration {
            rate.map { .seconds(previousInterval / $0) } ?? .zero
        }

        /// How long to wait before `fix`: the interval since the previous fix time, divided by the rate.
        private mutating func delayBefore(_ fix: Fix) -> Duration {
            guard let rate else { return .zero }
            var interval = previousInterval
            if let t = fix.time, let p = previousFixTime, let dt = t.seconds(since: p) {
                interval = dt > 0 && dt <= 10 ? dt : (dt <= 0 ? 0 : previousInterval)
                if dt > 0 && dt <= 10 { previousInterval = dt }
            }
            if let t = fix.time { previousFixTime = t }
            return .seconds(interval / rate)
        }
    }
}
