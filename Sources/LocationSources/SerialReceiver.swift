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
    /// Every plausibility rule; the date rules only with `check-date` on (docs/RECEIVERS.md).
    public let plausibility: FixPlausibility.Configuration
    /// The device path.
    let path: String
    /// The configured speed, bit/s; nil = autobaud.
    let configuredSpeed: Int?
    private let core: ReceiverCore
    private let opener: SerialDeviceOpener

    /// The open device and its reader thread.
    private var connection = Connection()
    /// The speed search, when no speed is configured.
    private var autobaud: Autobaud
    /// The decoder, with the counts of those replaced at each reconnect.
    private var decoding: CountingDecoder
    /// The last read's bytes and fixes.
    private var input = ReadBuffer()

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
        self.name = configuration.name
        self.priority = configuration.priority
        self.staleAfter = configuration.staleAfter
        self.plausibility = FixPlausibility.Configuration(checksDate: configuration.checkDate)
        self.path = path
        self.configuredSpeed = speed
        self.opener = opener
        self.autobaud = Autobaud(window: autobaudWindow)
        self.core = ReceiverCore(configuration: configuration, type: "serial", path: path)
        self.decoding = CountingDecoder(requiresChecksum: !configuration.allowMissingChecksum)
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
        connection.device = opened
        decoding.discard()
        let speeds = configuredSpeed.map { [$0] } ?? commonSerialSpeeds
        if configuredSpeed == nil {
            autobaud.search = (speeds, 0, ContinuousClock.now.sinceOrigin)
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
        guard connection.device != nil else { return }
        do {
            // The reader thread also ends the autobaud windows, as its poll timeout.
            connection.reader = try ReadabilityThread(fileDescriptor: opened.fileDescriptor, queue: core.queue,
                                                      firstDeadline: autobaud.search.map { $0.deadline - ContinuousClock.now.sinceOrigin }) { [weak self] readable in
                guard let self else { return nil }
                if readable { self.readAvailable() }
                return self.nextSpeedIfDue()
            }
        } catch {
            fail("cannot watch \(path): \(error)")
        }
    }

    /// Autobaud: set the next speed and listen for checksummed sentences for `autobaud.window`.
    private func trySpeed() {
        guard var search = autobaud.search, let device = connection.device else { return }
        guard search.index < search.speeds.count else {
            // Nothing at any speed: start over (a receiver may still be booting).
            search.index = 0
            autobaud.search = search
            fail("no NMEA at any speed (\(search.speeds.map(String.init).joined(separator: ", ")))")
            return
        }
        let speed = search.speeds[search.index]
        do {
            try device.setSpeed(speed)
        } catch {
            search.index += 1
            autobaud.search = search
            trySpeed()
            return
        }
        decoding.discard()
        search.deadline = ContinuousClock.now.sinceOrigin + autobaud.window
        autobaud.search = search
    }

    /// While searching: moves to the next speed when the window of this one has passed. Returns how long
    /// until the current window ends (the reader's next deadline), nil when not searching.
    private func nextSpeedIfDue() -> Duration? {
        guard var search = autobaud.search else { return nil }
        if ContinuousClock.now.sinceOrigin >= search.deadline {
            search.index += 1
            autobaud.search = search
            trySpeed()
        }
        return autobaud.timeLeft
    }

    private func readAvailable() {
        guard let device = connection.device else { return }
        while true {
            switch input.read(from: device) {
            case .success(0):
                fail("end of file on \(path)")
                return
            case .success(let n):
                consume(n)
                // A read that did not fill the buffer took all the device had: stop without the read that
                // would only say EAGAIN. Poll(2) is level-triggered, so bytes that came since wake it at once.
                if connection.device == nil || n < input.capacity { return }
            case .failure(.wouldBlock):
                return
            case .failure(let e):
                fail(e.meansDeviceGone ? "device gone: \(path): \(e)" : "read \(path): \(e)")
                return
            }
        }
    }

    private func consume(_ n: Int) {
        input.decode(n, with: &decoding)
        let stats = decoding.statistics
        let errors = stats.framing.rejectedSentences + stats.malformedSentences
        if let search = autobaud.search {
            // Two checksummed sentences at a speed, and fewer errors than sentences: that's the speed.
            if stats.framing.sentences >= 2 && stats.framing.sentences > errors {
                let speed = search.speeds[search.index]
                autobaud.search = nil
                core.backoff.reset()
                core.setState(.connected, speed: speed)
            } else {
                return
            }
        }
        for fix in input.fixes { core.deliver(fix) }
        // After the fixes: counting adds no time between the read and the fix reaching the owner.
        core.count(sentences: stats.framing.sentences, errors: decoding.replacedErrors + errors)
    }

    private func fail(_ reason: String) {
        if autobaud.search == nil {
            // What arrived before the device went away is complete: deliver its last epoch.
            decoding.finish { core.deliver($0) }
        }
        disconnect()
        core.setState(.unavailable(reason: reason))
        core.retryLater { [weak self] in self?.connect() }
    }

    /// Ends the search, starts a fresh decoder (keeping its error count) and closes the device.
    private func disconnect() {
        autobaud.search = nil
        decoding.replace()
        connection.close()
    }
}
