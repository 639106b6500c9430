import LocationCore
import LocationPosix

extension SerialReceiver {
    /// The open device and the thread blocked in poll(2) on it; both nil while disconnected.
    struct Connection {
        /// The open device.
        var device: (any SerialDevice)?
        /// The thread that waits for the device to be readable (and ends the autobaud windows).
        var reader: ReadabilityThread?

        /// Closes the device — once the reader thread no longer polls it, if there is one — and forgets both.
        mutating func close() {
            if let reader, let device {
                reader.cancel { device.close() }  // closed once the reader thread no longer polls it
            } else {
                device?.close()
            }
            reader = nil
            device = nil
        }
    }

    /// Autobaud, when no speed is configured: how long to listen at each speed and, while searching, the
    /// speeds to try, the one being tried and when its listening window ends.
    struct Autobaud {
        /// How long to listen at each speed.
        let window: Duration
        /// The search under way; nil when not searching.
        /// (`deadline` as `ContinuousClock.Instant.sinceOrigin`: fixed layout, read at every read.)
        var search: (speeds: [Int], index: Int, deadline: Duration)?

        /// - Parameter window: how long to listen at each speed.
        init(window: Duration) {
            self.window = window
        }

        /// How long until the current window ends (the reader's next deadline, never negative); nil when
        /// not searching.
        var timeLeft: Duration? {
            search.map { max(.zero, $0.deadline - ContinuousClock.now.sinceOrigin) }
        }
    }

    /// One read's bytes and the fixes they completed, kept between reads so that a read allocates nothing.
    struct ReadBuffer {
        private var bytes = [UInt8](repeating: 0, count: 4096)
        /// The most one read takes.
        var capacity: Int { bytes.count }
        /// The fixes the last `decode` completed.
        private(set) var fixes: [Fix] = []

        /// Reads what the device has into the buffer.
        /// - Returns: bytes read (0 at end of file), `.wouldBlock` when nothing is waiting, or read(2)'s error.
        mutating func read(from device: any SerialDevice) -> Result<Int, Errno> {
            bytes.withUnsafeMutableBytes { device.read(into: $0) }
        }

        /// Decodes the first `count` bytes of the last read into `fixes`.
        mutating func decode(_ count: Int, with decoding: inout CountingDecoder) {
            fixes.removeAll(keepingCapacity: true)
            bytes.withUnsafeBufferPointer { all in
                decoding.decode(UnsafeBufferPointer(rebasing: all[0..<count])) { fixes.append($0) }
            }
        }
    }
}
