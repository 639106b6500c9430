import CPosixShims
import LocationCore
import LocationPolicy
import LocationPosix
import LocationWire

/// One client connection on the native front (or the gpsd front, `gpsd`): its socket, the framing of
/// what it sends, its output, and its accounting against floods and stuck readers. The policy's view of
/// the same client is its `Subscriber` in the `Publisher`, under the same id.
struct Connection {
    let fd: Int32
    /// Who the client is (read at connect).
    var identity: ClientIdentity { handles.identity }
    var output = OutputQueue()
    var framer = LineFramer(maximumLineLength: ProtocolVersion.maximumRequestLength)
    var meter: RequestMeter
    /// Stuck-reader detection (`isStuck`): the kernel's count of unread output at the last look, what had
    /// been sent by then, and when the peer last read some.
    var unreadAtLastLook = 0
    var sentAtLastLook = 0
    /// When (`ContinuousClock.Instant.sinceOrigin`: fixed layout, for the fan-out's sake).
    var lastReadProgress: Duration
    /// The identity, kept out of line: the connection table holds connections inline, at its load factor,
    /// and it is rarely touched (a connection was 392 bytes; at 1000 clients the table and its growth were
    /// 1.2 MB of the heap's peak, heaptrack).
    private let handles: Handles
    /// The socket is watched for room to write (output waits), as well as for input.
    var watchingWritable = false
    /// The dialect: nil for the locationd protocol, the gpsd conversation for a client of the gpsd front.
    var gpsd: GpsdSession? { didSet { speaksGpsd = gpsd != nil } }
    /// Whether `gpsd` is set: the fan-out's test, without touching the session.
    private(set) var speaksGpsd = false
    /// The native client's `WATCH` asked for `satellites`: a `SKY` follows each full-accuracy report.
    var wantsSatellites = false
    /// The reason of the last `STATE` without a fix sent to this native client; nil after one with a fix: a new
    /// reason is told once, not each epoch (`ServerState.deliver`).
    var noFixReasonTold: String?

    /// The inode of the socket at the other end, whose holders are checked again while it lives (`HolderRecheck`).
    var peerInode: UInt64? { handles.peerInode }
    /// The front it came through.
    var front: Front { handles.front }

    init(fd: Int32, identity: ClientIdentity, front: Front = .native, peerInode: UInt64? = nil, now: ContinuousClock.Instant) {
        self.fd = fd
        self.handles = Handles(identity: identity, front: front, peerInode: peerInode)
        switch front {
        case .native: gpsd = nil
        case .gpsd: gpsd = GpsdSession()
        case .nmea: gpsd = GpsdSession(nmeaSocket: true)
        }
        self.speaksGpsd = front != .native
        self.meter = RequestMeter(windowStart: now.sinceOrigin)
        self.lastReadProgress = now.sinceOrigin
    }

    /// Log context: who this client is, and why (when given).
    func context(_ id: Int, reason: String? = nil) -> KeyValuePairs<String, String> {
        guard let reason else {
            return ["client.id": String(id), "client.pid": String(identity.pid), "client.uid": String(identity.uid),
                    "client.exe": identity.program ?? "?", "client.unit": identity.unit ?? identity.userUnit ?? "-",
                    "client.identified": identity.strength.description]
        }
        return ["client.id": String(id), "client.pid": String(identity.pid), "client.uid": String(identity.uid),
                "client.exe": identity.program ?? "?", "client.unit": identity.unit ?? identity.userUnit ?? "-",
                "client.identified": identity.strength.description, "reason": reason]
    }

    /// The stuck-reader sweep's look at this client: whether it read nothing for `timeout` while messages
    /// waited for it — in our queue or in the kernel's socket buffer (SIOCOUTQ); notes its progress if not.
    mutating func isStuck(now: ContinuousClock.Instant, timeout: Duration) -> Bool {
        var unreadInKernel = max(0, Int(locationd_socket_unread_bytes(fd)))
        if front == .gpsd { unreadInKernel += peerUnread() }
        let sentSince = output.totalSent - sentAtLastLook
        defer { (unreadAtLastLook, sentAtLastLook) = (unreadInKernel, output.totalSent) }
        // A peer that read nothing leaves the count grown by at least what was sent since: SIOCOUTQ counts
        // bytes on TCP, and each message's memory charge on a Unix socket (truesize: ~1280 for a 226-byte
        // TPV, not its bytes). So a smaller count means it read. (Comparing bytes sent less that count with
        // the most ever read took a charge for bytes: a reader keeping up, seen between two of its reads,
        // seemed to have read nothing, and was cut — found by a helper attacking as uid 1.)
        if unreadInKernel < unreadAtLastLook + sentSince || (unreadInKernel == 0 && output.isEmpty) {
            lastReadProgress = now.sinceOrigin
            return false
        }
        return now.sinceOrigin - lastReadProgress >= timeout
    }

    /// The bytes the TCP peer has left unread in its own receive queue (sock_diag; 0 when the kernel does not
    /// say). On loopback what we send is acknowledged as soon as it lands there, so SIOCOUTQ alone shows a
    /// peer that reads nothing only once its receive buffer is full — minutes of reports, which a descriptor
    /// parked in flight collected for whoever picks it up (docs/SECURITY.md "Who a client is").
    private func peerUnread() -> Int {
        guard case .success(let ours) = TCPAddress.of(socket: fd, peer: false),
              case .success(let peer) = TCPAddress.of(socket: fd, peer: true) else { return 0 }
        return PeerProcess.tcpPeerSocket(peer: peer, ours: ours)?.unread ?? 0
    }

    /// Stops watching the socket and closes it.
    func closeSocket(_ poller: EventPoller?) {
        poller?.remove(fd)
        FileDescriptorOps.close(fd)
    }
}

extension Connection {
    /// A connection's out-of-line part.
    final class Handles: Sendable {
        let identity: ClientIdentity
        let front: Front
        let peerInode: UInt64?

        init(identity: ClientIdentity, front: Front, peerInode: UInt64?) {
            self.identity = identity
            self.front = front
            self.peerInode = peerInode
        }
    }
}

/// The front a connection came through, which sets its dialect.
enum Front: Sendable, Equatable {
    /// The locationd protocol on the Unix socket (docs/PROTOCOL.md).
    case native
    /// gpsd's protocol on TCP loopback (`gpsd-listen`, docs/GPSD.md).
    case gpsd
    /// NMEA sentences only, on the NMEA socket (`nmea-socket`, for GeoClue): a gpsd session watching in
    /// `nmea` mode from connect, whose input is ignored.
    case nmea

    /// How a client of this front is told it is refused before it is closed: the native protocol's ERROR,
    /// gpsd's ERROR; nothing for an NMEA reader, which takes sentences only (the log says why).
    func refusal(_ why: String) -> [UInt8] {
        var bytes: [UInt8] = []
        switch self {
        case .native: bytes = ServerMessage.error(request: "?", message: why)
        case .gpsd: GpsdResponses.appendError(why, to: &bytes)
        case .nmea: break
        }
        return bytes
    }
}

struct RequestMeter {
    /// When the window began (`ContinuousClock.Instant.sinceOrigin`).
    var windowStart: Duration
    var requests = 0
    var bytes = 0
    /// Bad requests over the connection's life.
    var bad = 0

    /// Starts a new window when a second has passed.
    mutating func tick(_ now: ContinuousClock.Instant) {
        let now = now.sinceOrigin
        guard now - windowStart >= .seconds(1) else { return }
        windowStart = now
        requests = 0
        bytes = 0
    }
}

