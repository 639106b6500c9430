#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import LocationCore
import LocationPosix
import LocationSources
import NMEA
import Testing

@Suite("Serial receiver on pseudo-terminals", .serialized)
struct SerialReceiverTests {
    static let capture = "haicom-305N.log"

    @Test("fixes read from a pty equal the decoder's output for the same capture")
    func ptyMatchesDecode() throws {
        let bytes = TestCaptures.receiverBytes(Self.capture)
        let expected = TestCaptures.decode(bytes).map { fix -> Fix in var f = fix; f.device = "gnss0"; return f }
        let pty = try PseudoTerminal()
        let receiver = SerialReceiver(ReceiverConfiguration(name: "gnss0", source: .serial(path: pty.slavePath, speed: 4800),
                                                            staleAfter: .seconds(3600)))
        let events = EventRecorder()
        receiver.start(events.handler)
        #expect(events.wait(timeout: 5) { $0.statuses.last?.state == .connected })
        feed(pty, bytes).wait()
        // Closing the master ends the stream: the receiver delivers the last epoch and goes unavailable.
        #expect(events.wait(timeout: 10) { $0.fixes.count >= expected.count - 1 })
        pty.close()
        #expect(events.wait(timeout: 5) { $0.fixes.count >= expected.count })
        receiver.stop()
        let got = events.fixes.filter { !($0.mode == .noFix && $0.time == nil) }
        #expect(got.count == expected.count)
        #expect(got == expected)
        #expect(receiver.status.fixes == expected.filter(\.hasPosition).count)
    }

    @Test("a line that falls silent: the selector publishes a no-fix stale-after (0.5 s) after the last fix, not before")
    func silentLineGoesStale() throws {
        let bytes = TestCaptures.receiverBytes(Self.capture)
        let pty = try PseudoTerminal()
        defer { pty.close() }
        // A capture of years ago fed through a pty: its dates are not judged against today's clock (check-date = no).
        let receiver = SerialReceiver(ReceiverConfiguration(name: "gnss0", source: .serial(path: pty.slavePath, speed: 9600),
                                                            staleAfter: .milliseconds(500), checkDate: false))
        // The receiver only reports what it reads; whether its fix is live is the selector's to judge.
        let set = ReceiverSet([receiver])
        let log = Locked<[(at: Double, fix: Fix)]>([])
        let connected = Locked(false)
        set.start { event in
            switch event {
            case .fix(let fix): log.withLock { $0.append((monotonic(), fix)) }
            case .status(let status): if status.state == .connected { connected.withLock { $0 = true } }
            case .rejected: break
            }
        }
        defer { set.stop() }
        let end = monotonic() + 5
        while !connected.withLock({ $0 }) && monotonic() < end { usleep(10_000) }
        feed(pty, Array(bytes.prefix(6000))).wait()
        // The pty stays open and silent: only the staleness watch can report the loss.
        let staleWithin = monotonic() + 3
        var entries: [(at: Double, fix: Fix)] = []
        while monotonic() < staleWithin {
            entries = log.withLock { $0 }
            if let last = entries.lastIndex(where: { $0.fix.hasPosition }), entries[last...].contains(where: { $0.fix.mode == .noFix }) { break }
            usleep(10_000)
        }
        let lastFix = try #require(entries.lastIndex { $0.fix.hasPosition }, "no fix from the capture's first 6000 bytes")
        let stale = try #require(entries[lastFix...].first { $0.fix.mode == .noFix }, "no no-fix after the line fell silent")
        let gap = stale.at - entries[lastFix].at
        #expect(gap >= 0.45 && gap < 1.0, "no-fix \(gap) s after the last fix")
        #expect(!stale.fix.hasPosition)
    }

    @Test("closing the master mid-stream: unavailable within 1 s, no descriptor leaked")
    func unplugMidStream() throws {
        let bytes = TestCaptures.receiverBytes(Self.capture)
        let pty = try PseudoTerminal()
        let receiver = SerialReceiver(ReceiverConfiguration(name: "gnss0", source: .serial(path: pty.slavePath, speed: 9600)))
        let events = EventRecorder()
        receiver.start(events.handler)
        #expect(events.wait(timeout: 5) { $0.statuses.last?.state == .connected })
        feed(pty, Array(bytes.prefix(bytes.count / 2))).wait()
        #expect(events.wait(timeout: 5) { $0.fixes.contains(where: \.hasPosition) })
        let closedAt = monotonic()
        pty.close()
        let unavailable = events.wait(timeout: 3) { r in
            r.statuses.contains { if case .unavailable = $0.state { return true } else { return false } }
        }
        let took = monotonic() - closedAt
        #expect(unavailable)
        #expect(took < 1.0, "unavailable after \(took) s")
        let reason = events.statuses.compactMap { s -> String? in
            if case .unavailable(let r) = s.state { return r } else { return nil }
        }.first
        #expect(reason?.contains(pty.slavePath) == true, "reason: \(reason ?? "none")")
        // Tests run in parallel, so count the descriptors that point at this device, not all of them.
        #expect(descriptors(pointingTo: pty.slavePath) == 0)
        receiver.stop()
        #expect(descriptors(pointingTo: pty.slavePath) == 0)
    }

    @Test("unplug and replug through a by-id style link: fixes resume without a restart")
    func replugThroughLink() throws {
        let dir = "/tmp/locationd-test-\(getpid())-\(Int(monotonic() * 1000))"
        mkdir(dir, 0o700)
        defer { rmdir(dir) }
        let link = dir + "/usb-Test_GNSS-if00"
        let bytes = TestCaptures.receiverBytes(Self.capture)
        let first = try PseudoTerminal()
        symlink(first.slavePath, link)
        defer { unlink(link) }
        let receiver = SerialReceiver(ReceiverConfiguration(name: "gnss0", source: .serial(path: link, speed: 4800)))
        let events = EventRecorder()
        receiver.start(events.handler)
        #expect(events.wait(timeout: 5) { $0.statuses.last?.state == .connected })
        feed(first, Array(bytes.prefix(9000))).wait()
        #expect(events.wait(timeout: 5) { $0.fixes.contains(where: \.hasPosition) })

        // Unplug: the node goes away and its link with it.
        unlink(link)
        first.close()
        #expect(events.wait(timeout: 3) { r in
            if case .unavailable? = r.statuses.last?.state { return true } else { return false }
        })
        let fixesBefore = events.fixes.filter(\.hasPosition).count

        // Replug: a new node, the same link.
        let second = try PseudoTerminal()
        symlink(second.slavePath, link)
        #expect(events.wait(timeout: 8) { $0.statuses.last?.state == .connected })
        let writer = feed(second, Array(bytes.suffix(8000)))
        #expect(events.wait(timeout: 8) { $0.fixes.filter(\.hasPosition).count > fixesBefore })
        writer.wait()
        receiver.stop()
        second.close()
    }

    @Test("autobaud finds the capture's speed", arguments: [4800, 38400, 115200])
    func autobaud(speed: Int) throws {
        let bytes = TestCaptures.receiverBytes(Self.capture)
        let simulated = SimulatedPort(correctSpeed: speed)
        let receiver = SerialReceiver(ReceiverConfiguration(name: "gnss0", source: .serial(path: "/dev/simulated", speed: nil)),
                                      opener: { _ throws(SerialPortError) in simulated.open() }, autobaudWindow: .milliseconds(300))
        let events = EventRecorder()
        receiver.start(events.handler)
        let writer = simulated.stream(bytes)
        #expect(events.wait(timeout: 10) { $0.statuses.last?.state == .connected })
        #expect(receiver.status.speed == speed)
        #expect(events.wait(timeout: 5) { $0.fixes.contains(where: \.hasPosition) })
        receiver.stop()
        simulated.finish()
        writer.wait()
    }

    @Test("autobaud on a device that takes no speed: unavailable, device closed, never read or watched")
    func noSpeedSettable() throws {
        let device = RefusingDevice()
        defer { device.release() }
        let receiver = SerialReceiver(ReceiverConfiguration(name: "gnss0", source: .serial(path: "/dev/ttyTEST", speed: nil)),
                                      opener: { _ throws(SerialPortError) in device }, autobaudWindow: .milliseconds(300))
        let events = EventRecorder()
        receiver.start(events.handler)
        let unavailable = events.wait(timeout: 3) { r in
            r.statuses.contains { if case .unavailable(let why) = $0.state { return why.contains("no NMEA at any speed") } else { return false } }
        }
        #expect(unavailable)
        #expect(device.closes.withLock { $0 } >= 1)
        // Bytes on the closed device's descriptor: nothing may watch it (a reader thread left on it would
        // find it readable forever, with no device to read, and spin).
        device.poke()
        let before = Self.processCPUSeconds()
        usleep(300_000)
        let spent = Self.processCPUSeconds() - before
        receiver.stop()
        #expect(device.reads.withLock { $0 } == 0)
        #expect(spent < 0.1, "\(spent) s of CPU in 0.3 s with the receiver idle")
    }

    static func processCPUSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}

/// A device whose every line speed is refused (`setSpeed` throws); its descriptor is a pipe that can be
/// made readable, to see whether anything reads it.
final class RefusingDevice: SerialDevice, @unchecked Sendable {
    private let ends: [Int32]
    let reads = Locked(0)
    let closes = Locked(0)

    init() {
        var p: [Int32] = [0, 0]
        pipe(&p)
        ends = p
    }

    var fileDescriptor: Int32 { ends[0] }
    func setSpeed(_ bitsPerSecond: Int) throws(SerialPortError) {
        throw .unsupportedSpeed(path: "/dev/ttyTEST", speed: bitsPerSecond)
    }
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        reads.withLock { $0 += 1 }
        return .failure(.wouldBlock)
    }
    func close() { closes.withLock { $0 += 1 } }
    func poke() { _ = write(ends[1], "$", 1) }
    func release() { Glibc.close(ends[0]); Glibc.close(ends[1]) }
}

/// A serial port simulated at the receiver's syscall funnel: bytes come from a pipe and arrive garbled
/// (as a UART at the wrong speed delivers them: framing errors, high-bit noise) unless the line speed
/// set is the one the "receiver" transmits at.
final class SimulatedPort: @unchecked Sendable {
    let correctSpeed: Int
    private let fds: (read: Int32, write: Int32)
    private let stopped = Locked(false)

    init(correctSpeed: Int) {
        self.correctSpeed = correctSpeed
        var p: [Int32] = [0, 0]
        pipe(&p)
        _ = FileDescriptorOps.setNonBlocking(p[0])
        fds = (p[0], p[1])
    }

    func open() -> any SerialDevice { Device(port: self) }

    /// Writes the capture into the pipe again and again until `finish()`.
    func stream(_ bytes: [UInt8]) -> DispatchGroup {
        let group = DispatchGroup()
        let w = fds.write
        DispatchQueue.global().async(group: group) { [self] in
            while !stopped.withLock({ $0 }) {
                var offset = 0
                while offset < bytes.count && !stopped.withLock({ $0 }) {
                    let end = min(offset + 256, bytes.count)
                    _ = FileDescriptorOps.writeAll(w, Array(bytes[offset..<end]))
                    offset = end
                    usleep(2000)
                }
            }
        }
        return group
    }

    func finish() {
        stopped.withLock { $0 = true }
        close(fds.write)
    }

    final class Device: SerialDevice {
        let port: SimulatedPort
        var speed = 0
        init(port: SimulatedPort) { self.port = port }
        var fileDescriptor: Int32 { port.fds.read }
        func setSpeed(_ bitsPerSecond: Int) throws(SerialPortError) { speed = bitsPerSecond }
        func read(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
            let result = FileDescriptorOps.read(port.fds.read, into: buffer)
            if case .success(let n) = result, speed != port.correctSpeed {
                for i in 0..<n { buffer[i] = (buffer[i] &* 7) | 0x80 }
            }
            return result
        }
        func close() {}
    }
}

@Suite("Serial device locking")
struct SerialLockTests {
    @Test("a device another process holds is reported busy, naming the holder")
    func busyNamesHolder() throws {
        let pty = try PseudoTerminal()
        defer { pty.close() }
        // flock(1) takes an exclusive lock on the tty and holds it while sleep runs.
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("flock"), strdup("-x"), strdup(pty.slavePath), strdup("sleep"), strdup("5"), nil]
        defer { argv.forEach { free($0) } }
        #expect(posix_spawnp(&pid, "flock", nil, nil, argv, environ) == 0)
        defer { kill(pid, SIGKILL); var s: Int32 = 0; waitpid(pid, &s, 0) }
        usleep(300_000)
        #expect(throws: SerialPortError.self) { _ = try TTYSerialDevice(path: pty.slavePath) }
        do {
            _ = try TTYSerialDevice(path: pty.slavePath)
        } catch {
            guard case .busy(let path, let holder) = error else { Issue.record("not busy: \(error)"); return }
            #expect(path == pty.slavePath)
            #expect(holder?.contains("pid") == true, "holder: \(holder ?? "nil")")
            #expect(error.description.contains("in use by"))
        }
    }
}
