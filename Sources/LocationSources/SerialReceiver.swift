import LocationCore
import LocationPosix
import NMEA

/// Reads NMEA 0183 from a serial tty: opens and locks it, sets raw 8N1 at the configured speed or finds
/// the speed (autobaud), and turns what it reads into fixes. Reads are event-driven — a thread of its
/// own blocked in poll(2) on the device (`ReadabilityThread`), one wake-up per read — so a silent
/// receiver costs no CPU; the same poll's timeout ends each autobaud listening window. A vanished
/// device (EOF, EIO, ENXIO on read; ENOENT or ENODEV on open) makes it `unavailable`; it reopens the
/// same path — a /dev/serial/by-id link follows the device to its new node — with capped exponential
/// backoff.
///
/// `@unchecked Sendable`: everything it changes is changed on `core.queue` only (the reader thread runs
/// its handler there); the rest never changes.
public final class SerialReceiver: Receiver, @unchecked Sendable {
    /// The config section name; every fix's `device`.
    public let name: String
    /// Configured priority: higher wins while it has a valid fix.
    public let priority: Int
    /// Configured `stale-after`; nil = 3 cycles (`FixSelector` judges).
    public let staleAfter: Duration?
    let configuration: ReceiverConfiguration
    let path: String
    let configuredSpeed: Int?
    private let core: ReceiverCore
    private let opener: SerialDeviceOpener
    /// How long autobaud listens at each speed.
    let autobaudWindow: Duration

    private var device: (any SerialDevice)?
    private var reader: ReadabilityThread?
    private var decoder: NMEADecoder
    /// The autobaud search: the speeds to try, the one being tried, when its window ends.
    private var searching: (speeds: [Int], index: Int, deadline: ContinuousClock.Instant)?
    private var buffer = [UInt8](repeating: 0, count: 4096)
    /// The fixes one read completed, kept between reads so that a read allocates nothing.
    private var readFixes: [Fix] = []
    private var countedErrors = 0

    /// - Parameters:
    ///   - configuration: a `.serial` receiver.
    ///   - opener: opens a path; tests pass a simulated device. Default: `TTYSerialDevice`.
    ///   - autobaudWindow: how long to listen at each speed while searching.
    public init(_ configuration: ReceiverConfiguration,
                opener: @escaping SerialDeviceOpener = { path throws(SerialPortError) in try TTYSerialDevice(path: path) },
                autobaudWindow: Duration = .milliseconds(1500)) {
        guard case let .serial(path, speed) = configuration.source else {
            preconditionFailure("SerialReceiver needs a serial configuration")
        }
        self.configuration = configuration
        self.name = configuration.name
        self.priority = configuration.priority
        self.staleAfter = configuration.staleAfter
        self.path = path
        self.configuredSpeed = speed
        self.opener = opener
        self.autobaudWindow = autobaudWindow
        self.core = ReceiverCore(configuration: configuration, type: "serial", path: path)
        self.decoder = NMEADecoder(requiresChecksum: !configuration.allowMissingChecksum)
    }

    public var status: ReceiverStatus { core.status }

    public func start(_ handler: @escaping @Sendable (ReceiverEvent) -> Void) {
        core.start(handler) { self.connect() }
    }

    public func stop() {
        core.stop { disconnect() }
    }

    // MARK: - Connection (all on core.queue)

    private func connect() {
        let opened: any SerialDevice
        do {
            opened = try opener(path)
        } catch {
            core.setState(.unavailable(reason: error.description))
            core.retryLater { [weak self] in self?.connect() }
            return
        }
        device = opened
        decoder = NMEADecoder(requiresChecksum: !configuration.allowMissingChecksum)
        let speeds = configuredSpeed.map { [$0] } ?? commonSerialSpeeds
        if configuredSpeed == nil {
            searching = (speeds, 0, ContinuousClock.now)
            core.setState(.starting)
            trySpeed()
        } else {
            do {
                try opened.setSpeed(speeds[0])
            } catch {
                fail(error.description)
                return
            }
            core.backoff.reset()
            core.setState(.connected, speed: speeds[0])
        }
        // A search that failed at once (no speed could be set) has closed the device and retries later.
        guard device != nil else { return }
        do {
            // The reader thread also ends the autobaud windows, as its poll timeout.
            reader = try ReadabilityThread(fileDescriptor: opened.fileDescriptor, queue: core.queue,
                                           firstDeadline: searching.map { $0.deadline - ContinuousClock.now }) { [weak self] readable in
                guard let self else { return nil }
                if readable { self.readAvailable() }
                return self.nextSpeedIfDue()
            }
        } catch {
            fail("cannot watch \(path): \(error)")
        }
    }

    /// Autobaud: set the next speed and listen for checksummed sentences for `autobaudWindow` seconds.
    private func trySpeed() {
        guard var search = searching, let device else { return }
        guard search.index < search.speeds.count else {
            // Nothing at any speed: start over (a receiver may still be booting).
            search.index = 0
            searching = search
            fail("no NMEA at any speed (\(search.speeds.map(String.init).joined(separator: ", ")))")
            return
        }
        let speed = search.speeds[search.index]
        do {
            try device.setSpeed(speed)
        } catch {
            search.index += 1
            searching = search
            trySpeed()
            return
        }
        decoder = NMEADecoder(requiresChecksum: !configuration.allowMissingChecksum)
        search.deadline = ContinuousClock.now + autobaudWindow
        searching = search
    }

    /// While searching: moves to the next speed when the window of this one has passed. Returns how long
    /// until the current window ends (the reader's next deadline), nil when not searching.
    private func nextSpeedIfDue() -> Duration? {
        guard var search = searching else { return nil }
        if ContinuousClock.now >= search.deadline {
            search.index += 1
            searching = search
            trySpeed()
        }
        return searching.map { max(.zero, $0.deadline - ContinuousClock.now) }
    }

    private func readAvailable() {
        guard let device else { return }
        while true {
            let result = buffer.withUnsafeMutableBytes { device.read(into: $0) }
            switch result {
            case .success(0):
                fail("end of file on \(path)")
                return
            case .success(let n):
                consume(n)
                if self.device == nil { return }
            case .failure(.wouldBlock):
                return
            case .failure(let e):
                fail(e.meansDeviceGone ? "device gone: \(path): \(e)" : "read \(path): \(e)")
                return
            }
        }
    }

    private func consume(_ n: Int) {
        readFixes.removeAll(keepingCapacity: true)
        buffer.withUnsafeBufferPointer { all in
            decoder.decode(UnsafeBufferPointer(rebasing: all[0..<n])) { readFixes.append($0) }
        }
        let stats = decoder.statistics
        let errors = stats.framing.rejectedSentences + stats.malformedSentences
        if let search = searching {
            // Two checksummed sentences at a speed, and fewer errors than sentences: that's the speed.
            if stats.framing.sentences >= 2 && stats.framing.sentences > errors {
                let speed = search.speeds[search.index]
                searching = nil
                core.backoff.reset()
                core.setState(.connected, speed: speed)
            } else {
                return
            }
        }
        for fix in readFixes { core.deliver(fix) }
        // After the fixes: counting adds no time between the read and the fix reaching the owner.
        core.count(sentences: stats.framing.sentences, errors: countedErrors + errors)
    }

    private func fail(_ reason: String) {
        if searching == nil {
            // What arrived before the device went away is complete: deliver its last epoch.
            decoder.finish { core.deliver($0) }
        }
        disconnect()
        core.setState(.unavailable(reason: reason))
        core.retryLater { [weak self] in self?.connect() }
    }

    private func disconnect() {
        searching = nil
        if let s = decoder.statistics as DecoderStatistics? {
            countedErrors += s.framing.rejectedSentences + s.malformedSentences
        }
        decoder = NMEADecoder(requiresChecksum: !configuration.allowMissingChecksum)
        if let reader, let device {
            reader.cancel { device.close() }  // closed once the reader thread no longer polls it
        } else {
            device?.close()
        }
        reader = nil
        device = nil
    }
}
