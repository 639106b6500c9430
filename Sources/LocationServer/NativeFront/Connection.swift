import Dispatch
import LocationPolicy
import LocationPosix
import LocationWire

/// One client connection on the native front (or the gpsd front, `gpsd`): its socket and the sources watching it, the framing of
/// what it sends, its output, and its accounting against floods and stuck readers. The policy's view of
/// the same client is its `Subscriber` in the `Publisher`, under the same id.
struct Connection {
    let fd: Int32
    let identity: ClientIdentity
    var output = OutputQueue()
    var framer = LineFramer(maximumLineLength: ProtocolVersion.maximumRequestLength)
    var meter: RequestMeter
    /// Stuck-reader detection: what the peer has read of `output.totalSent`, and when it last read some.
    var peerRead = 0
    var lastReadProgress: ContinuousClock.Instant
    var readSource: (any DispatchSourceRead)?
    var writeSource: (any DispatchSourceWrite)?
    /// The dialect: nil for the locationd protocol, the gpsd conversation for a client of the gpsd front.
    var gpsd: GpsdSession? { didSet { speaksGpsd = gpsd != nil } }
    /// Whether `gpsd` is set: the fan-out's test, without touching the session.
    private(set) var speaksGpsd = false
    /// The native client's `WATCH` asked for `satellites`: a `SKY` follows each full-accuracy report.
    var wantsSatellites = false

    init(fd: Int32, identity: ClientIdentity, gpsd: Bool = false, now: ContinuousClock.Instant) {
        self.fd = fd
        self.identity = identity
        self.gpsd = gpsd ? GpsdSession() : nil
        self.speaksGpsd = gpsd
        self.meter = RequestMeter(windowStart: now)
        self.lastReadProgress = now
    }

    /// Log context: who this client is, and why (when given).
    func context(_ id: Int, reason: String? = nil) -> KeyValuePairs<String, String> {
        guard let reason else {
            return ["client.id": String(id), "client.pid": String(identity.pid), "client.uid": String(identity.uid),
                    "client.exe": identity.executable ?? "?", "client.unit": identity.unit ?? "-"]
        }
        return ["client.id": String(id), "client.pid": String(identity.pid), "client.uid": String(identity.uid),
                "client.exe": identity.executable ?? "?", "client.unit": identity.unit ?? "-", "reason": reason]
    }

    /// Stops watching the socket and closes it once every source has finished cancelling.
    mutating func closeSocket() {
        let sources: [any DispatchSourceProtocol] = [readSource as (any DispatchSourceProtocol)?, writeSource].compactMap { $0 }
        let closer = DescriptorCloser(fd: fd, sources: sources.count)
        for source in sources {
            source.setCancelHandler { closer.release() }
            source.cancel()
        }
        readSource = nil
        writeSource = nil
    }
}

/// What makes a client a flood, counted per one-second window.
struct RequestMeter {
    var windowStart: ContinuousClock.Instant
    var requests = 0
    var bytes = 0
    /// Bad requests over the connection's life.
    var bad = 0

    /// Starts a new window when a second has passed.
    mutating func tick(_ now: ContinuousClock.Instant) {
        guard now - windowStart >= .seconds(1) else { return }
        windowStart = now
        requests = 0
        bytes = 0
    }
}

/// Closes a descriptor when the last of its dispatch sources has finished cancelling.
/// Sound as `@unchecked Sendable`: the sources' cancel handlers run on one serial queue, so `remaining`
/// is never touched by two threads at once.
final class DescriptorCloser: @unchecked Sendable {
    let fd: Int32
    var remaining: Int

    init(fd: Int32, sources: Int) {
        self.fd = fd
        self.remaining = sources
        if sources == 0 { FileDescriptorOps.close(fd) }
    }

    func release() {
        remaining -= 1
        if remaining == 0 { FileDescriptorOps.close(fd) }
    }
}
