import Dispatch
import LocationCore
import LocationPolicy
import LocationPosix

/// One connected client: its identity, its subscription, and its bounded outbound queue.
/// Touched only on the server's queue.
final class ClientSession {
    // What the fan-out reads or writes for every fix, first and together: Swift lays a class's stored
    // properties out in order, so a client costs the fan-out two cache lines. Spread over the object,
    // they were a cache miss each, and at 1000 clients the fan-out waited on them.
    let fd: Int32
    var closed = false
    // Subscription (WATCH).
    var subscribed = false
    /// The last STATE told: nil before any, true with a fix, false without.
    var toldFix: Bool?
    /// The accuracy `cachedAuthorization` allows (nil: none); see below.
    var cachedAccuracy: AccuracyAuthorization?
    var cacheValid = false
    /// The authorization was computed anew since the last delivery: see whether it needs auditing.
    var deliveryAuditPending = true
    var cachedGeneration = 0
    var cachedUntil = 0.0
    var minInterval = 0.0
    var distanceFilter = 0.0
    var lastDeliveredAt = -Double.infinity
    /// Where the last delivered location report was (degrees), for the distance filter.
    var lastDeliveredPosition: (latitude: Double, longitude: Double)?
    /// Pending POLLs: their timeout timers.
    var polls: [Int: DispatchWorkItem] = [:]
    /// Messages waiting to be written, oldest first; `sentOfFirst` bytes of the first are already out.
    var outbound: [[UInt8]] = []
    /// Stuck-reader detection: bytes handed to the kernel (see `peerRead`).
    var totalSent = 0

    let id: Int
    let identity: ClientIdentity
    /// Whom reduced-accuracy pacing counts for: the user and the program (executable, else unit), so
    /// that more connections of the same client get no more reports (`SocketServer.reducedPacing`).
    let pacingKey: String
    var readSource: DispatchSourceRead?
    var writeSource: DispatchSourceWrite?

    /// Bytes of an incomplete request line.
    var inbound: [UInt8] = []
    /// After an over-long request: drop bytes up to the next newline.
    var discardingLine = false

    /// Bytes of the first message in `outbound` already written, and of all of it still to write.
    var sentOfFirst = 0
    var outboundBytes = 0
    /// Index in `outbound` of a location report nothing of which was written yet: a newer one replaces it.
    var replaceableLocation: Int?
    /// Location reports replaced by newer ones before the client read them.
    var coalesced = 0

    // Policy.
    /// The one-time grant and temporary full accuracy of this connection.
    var policy = SessionAuthorization() { didSet { cacheValid = false } }
    /// The authorization last computed (`SocketServer.authorization(of:now:)`), and `cachedAccuracy`:
    /// they hold while `cacheValid`, the policy's generation is `cachedGeneration` and the wall clock is
    /// before `cachedUntil`.
    var cachedAuthorization: AuthorizationState?
    /// Display text the client declared (AUTHORIZE name): shown to the agent, never a key.
    var displayName: String?
    /// The authorization last sent to the client.
    var announced: AuthorizationState?
    /// The authorization whose first delivery was audited.
    var auditedDelivery: AuthorizationState?
    /// An AUTHORIZE or FULLACCURACY waiting for an agent.
    var pendingAsk: Int?

    // Subscription (WATCH).

    var nextPoll = 0

    // Stuck-reader detection: what the peer has read of `totalSent`, and when it last read some.
    var peerRead = 0
    var lastReadProgress: Double

    // Abuse accounting.
    var badRequests = 0
    var windowStart = 0.0
    var requestsInWindow = 0
    var bytesInWindow = 0

    let connectedAt: Double

    init(id: Int, fd: Int32, identity: ClientIdentity, now: Double) {
        self.id = id
        self.fd = fd
        self.identity = identity
        self.pacingKey = "\(identity.uid) \(identity.executable ?? "-") \(identity.unit ?? "-")"
        self.connectedAt = now
        self.lastReadProgress = now
    }

    var hasPendingOutput: Bool { !outbound.isEmpty }

    /// Queues a message; a location report replaces one still wholly unsent (only the newest matters).
    func enqueue(_ bytes: [UInt8], isLocation: Bool) {
        if isLocation, let index = replaceableLocation, index < outbound.count, !(index == 0 && sentOfFirst > 0) {
            outboundBytes += bytes.count - outbound[index].count
            outbound[index] = bytes
            coalesced += 1
            return
        }
        outbound.append(bytes)
        outboundBytes += bytes.count
        if isLocation { replaceableLocation = outbound.count - 1 }
    }

    /// Writes as much as the socket takes. Returns `.wouldBlock` when bytes remain, `.success` when drained.
    func flush() -> Result<Bool, Errno> {
        var progressed = false
        while let first = outbound.first {
            let result = first.withUnsafeBytes { raw in
                sendNoSignal(fd, UnsafeRawBufferPointer(rebasing: raw[sentOfFirst...]))
            }
            switch result {
            case .success(let n):
                progressed = true
                totalSent += n
                sentOfFirst += n
                outboundBytes -= n
                if sentOfFirst == first.count {
                    outbound.removeFirst()
                    sentOfFirst = 0
                    if let i = replaceableLocation { replaceableLocation = i > 0 ? i - 1 : nil }
                }
            case .failure(.wouldBlock):
                return .success(progressed)
            case .failure(let e):
                return .failure(e)
            }
        }
        return .success(progressed)
    }
}
