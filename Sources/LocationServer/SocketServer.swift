import CPosixShims
import Dispatch
import LocationCore
import LocationPolicy
import LocationPosix
import LocationWire

/// Limits of the socket server (docs/PROTOCOL.md "Errors").
public struct ServerLimits: Sendable {
    /// Most clients at once; the next gets an ERROR and is closed.
    public var maxClients = 1024
    /// Seconds a client may leave queued messages unread before it is disconnected.
    public var clientTimeout = 30.0
    /// Bad requests tolerated per connection; one more and it is closed.
    public var maxBadRequests = 100
    /// Requests per second beyond which a client is flooding.
    public var maxRequestsPerSecond = 1000
    /// Bytes queued for one client beyond which it is closed (location reports are coalesced first,
    /// so only a client that never reads and keeps asking gets here).
    public var maxQueuedBytes = 1 << 20

    public init() {}
}

/// What the server needs to know about the receivers for STATUS and STATE messages.
public protocol ReceiverStatusProvider: Sendable {
    func receiverReports() -> [ReceiverReport]
}

/// A question waiting for an agent's answer.
struct PendingAsk {
    let id: Int
    let session: ClientSession
    let question: AgentQuestion
    /// The request that asked: "AUTHORIZE" or "FULLACCURACY".
    let request: String
    let timeout: DispatchWorkItem
}

/// The location socket: accepts clients on a Unix socket, answers their requests, and fans each fix out
/// to the subscribers the policy allows — event-driven on one queue, never blocked by a slow client:
/// every client has a bounded queue in which a newer location report replaces an unsent one.
public final class SocketServer: @unchecked Sendable {
    public let release: String
    let listener: ListeningSocket
    let limits: ServerLimits
    let policy: PolicyEngine
    let receivers: any ReceiverStatusProvider
    let log: Log
    let queue = DispatchQueue(label: "locationd.server", qos: .userInteractive)

    private var acceptSource: DispatchSourceRead?
    var sessions: [Int: ClientSession] = [:]
    private var nextID = 1
    var latest: Fix?
    /// Counts the fixes with a position the fan-out has handled; `latest`'s is the current value.
    var reportSerial: UInt64 = 0
    /// Reduced-accuracy pacing per client (`ClientSession.pacingKey`): when it was last sent a report,
    /// and which one (`reportSerial`), so that its other connections may get that same report.
    var reducedPacing: [String: (at: Double, report: UInt64)] = [:]
    /// Refusals recorded in the audit log per uid in the current minute, and those left out.
    var refusalAudit: [UInt32: (windowStart: Double, recorded: Int, omitted: Int)] = [:]
    var encoder = GPSDEncoder()
    var stopped = false
    private var readBuffer = [UInt8](repeating: 0, count: 65536)
    private var sweepTimer: DispatchSourceTimer?
    var agents: [Int: ClientSession] = [:]
    var asks: [Int: PendingAsk] = [:]
    var nextAsk = 1

    public init(listener: ListeningSocket, limits: ServerLimits, policy: PolicyEngine,
                receivers: any ReceiverStatusProvider, log: Log, release: String) {
        self.listener = listener
        self.limits = limits
        self.policy = policy
        self.receivers = receivers
        self.log = log
        self.release = release
    }

    /// Starts accepting clients.
    public func start() {
        queue.sync {
            let source = DispatchSource.makeReadSource(fileDescriptor: listener.fileDescriptor, queue: queue)
            source.setEventHandler { [weak self] in self?.acceptAll() }
            acceptSource = source
            source.resume()
        }
    }

    /// Number of connected clients.
    public var clientCount: Int { queue.sync { sessions.count } }

    /// Publishes a fix (a no-fix tells subscribers the fix was lost), on the caller's thread when the
    /// server's queue is idle: no hand-off between the receiver that decoded the fix and the fan-out.
    /// Waits only for the server's own work, which never blocks (sockets are non-blocking). The caller
    /// must not be on the server's queue.
    public func publish(_ fix: Fix) {
        queue.sync { self.fanOut(fix) }
    }

    /// Stops accepting, tells every client why, and closes them.
    public func stop(reason: String) {
        queue.sync {
            stopped = true
            acceptSource?.cancel()
            acceptSource = nil
            let goodbye = ServerMessage.error(request: "?", message: reason)
            for session in sessions.values {
                session.enqueue(goodbye, isLocation: false)
                _ = session.flush()
                close(session, why: "daemon stopping")
            }
            policy.audit.sync()
        }
    }

    // MARK: - Accepting

    private func acceptAll() {
        while true {
            switch listener.accept() {
            case .success(let fd):
                admit(fd)
            case .failure(.wouldBlock):
                return
            case .failure(let e):
                log.warning("accept failed", ["errno": e.description])
                return
            }
        }
    }

    private func admit(_ fd: Int32) {
        let identity: ClientIdentity
        do {
            identity = try ClientIdentity.ofPeer(socket: fd)
        } catch {
            if error == .noSuchProcess {
                // The program that connected is gone (it exited, leaving the socket to another process,
                // e.g. a child): nobody can be identified, so nobody is served.
                log.warning("client refused: the connecting process exited before it was identified")
                let refusal = ServerMessage.error(request: "?", message: "the connecting process exited before it could be identified")
                _ = refusal.withUnsafeBytes { sendNoSignal(fd, $0) }
            } else {
                log.warning("client refused: no peer credentials", ["errno": error.description])
            }
            FileDescriptorOps.close(fd)
            return
        }
        let now = monotonicNow()
        let session = ClientSession(id: nextID, fd: fd, identity: identity, now: now)
        nextID += 1
        if sessions.count >= limits.maxClients {
            session.enqueue(ServerMessage.error(request: "?", message: "too many clients (\(limits.maxClients))"), isLocation: false)
            _ = session.flush()
            FileDescriptorOps.close(fd)
            log.warning("client refused: too many clients", context(session))
            return
        }
        sessions[session.id] = session
        armSweep()
        log.info("client connected", context(session))
        // Handlers find their session by id: a weak reference would give every session a side table
        // and make each retain on the fan-out path a slow one.
        let id = session.id
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self] in
            guard let self, let session = self.sessions[id] else { return }
            self.readRequests(session)
        }
        session.readSource = source
        source.resume()
        send(session, ServerMessage.version(release: release))
    }

    func context(_ s: ClientSession) -> KeyValuePairs<String, String> {
        ["client.id": String(s.id), "client.pid": String(s.identity.pid), "client.uid": String(s.identity.uid),
         "client.exe": s.identity.executable ?? "?", "client.unit": s.identity.unit ?? "-"]
    }

    // MARK: - Requests

    private func readRequests(_ session: ClientSession) {
        guard !session.closed else { return }
        let result = readBuffer.withUnsafeMutableBytes { FileDescriptorOps.read(session.fd, into: $0) }
        switch result {
        case .success(0):
            close(session, why: "client disconnected")
            return
        case .failure(.wouldBlock):
            return
        case .failure(let e):
            close(session, why: "read failed: \(e)")
            return
        case .success(let n):
            let now = monotonicNow()
            if now - session.windowStart >= 1 {
                session.windowStart = now
                session.requestsInWindow = 0
                session.bytesInWindow = 0
            }
            session.bytesInWindow += n
            var start = 0
            for i in 0..<n where readBuffer[i] == 10 {
                if session.discardingLine {
                    session.discardingLine = false
                } else {
                    session.inbound.append(contentsOf: readBuffer[start..<i])
                    let line = session.inbound
                    session.inbound.removeAll(keepingCapacity: true)
                    handleLine(line, session, now: now)
                    if session.closed { return }
                }
                start = i + 1
            }
            if !session.discardingLine {
                session.inbound.append(contentsOf: readBuffer[start..<n])
                if session.inbound.count > ProtocolVersion.maximumRequestLength {
                    session.inbound.removeAll()
                    session.discardingLine = true
                    bad(session, RequestError(request: "?", message: "request longer than \(ProtocolVersion.maximumRequestLength) bytes"))
                }
            }
            if session.bytesInWindow > 4 * ProtocolVersion.maximumRequestLength * 16 {
                refuse(session, "flooding: more than \(4 * ProtocolVersion.maximumRequestLength * 16) bytes in a second")
            }
        }
    }

    static func seconds(_ s: Double) -> String {
        s == s.rounded() ? "\(Int(s)) s" : "\(s) s"
    }

    func merge(_ c: KeyValuePairs<String, String>, _ reason: String) -> KeyValuePairs<String, String> {
        let pairs = Array(c)
        return ["client.id": pairs[0].1, "client.pid": pairs[1].1, "client.uid": pairs[2].1, "client.exe": pairs[3].1,
                "client.unit": pairs[4].1, "reason": reason]
    }

    func bad(_ session: ClientSession, _ error: RequestError) {
        session.badRequests += 1
        if session.badRequests > limits.maxBadRequests {
            refuse(session, "more than \(limits.maxBadRequests) bad requests")
            return
        }
        send(session, ServerMessage.error(request: error.request, message: error.message))
    }

    /// Tells the client why and closes it.
    func refuse(_ session: ClientSession, _ why: String) {
        session.enqueue(ServerMessage.error(request: "?", message: why + "; closing"), isLocation: false)
        _ = session.flush()
        log.notice("client disconnected", merge(context(session), why))
        close(session, why: why)
    }

    // MARK: - Fan-out

    /// A client that is no longer authorized stops streaming and is told its new status.
    func revokeStreaming(_ session: ClientSession, _ state: AuthorizationState) {
        let wasStreaming = session.subscribed || !session.polls.isEmpty
        session.subscribed = false
        for (_, item) in session.polls { item.cancel() }
        session.polls.removeAll()
        if wasStreaming {
            announce(session, state)
            send(session, ServerMessage.error(request: "WATCH", message: "not authorized: \(state.reason)"))
        }
    }

    /// Sends AUTHORIZATION when the client's state differs from what it was last told.
    func announce(_ session: ClientSession, _ state: AuthorizationState, force: Bool = false) {
        guard force || session.announced != state else { return }
        session.announced = state
        send(session, ServerMessage.authorization(status: state.status.rawValue, accuracy: state.accuracy?.rawValue, reason: state.reason))
    }

    /// After rules or grants changed: every client whose state changed is told; those who lost
    /// authorization stop streaming at once.
    /// - Parameter because: the reason told to clients that lose their authorization (e.g. a revoke).
    func reevaluateAll(because: String? = nil) {
        let wall = wallClockSeconds()
        for session in sessions.values {
            var state = authorization(of: session, now: wall)
            if !state.status.isAuthorized, let because { state.reason = because }
            if !state.status.isAuthorized {
                if session.subscribed || !session.polls.isEmpty { revokeStreaming(session, state) } else if session.announced != nil { announce(session, state) }
            } else if session.announced != nil {
                announce(session, state)
            }
        }
    }

    /// Applies a new configuration's rules (SIGHUP): clients that lose their grant are told at once.
    public func applyPolicyRules(_ rules: PolicyRules) {
        queue.sync {
            policy.replaceRules(rules)
            reevaluateAll()
        }
    }

    func tellState(_ session: ClientSession, fix: Bool) {
        guard session.toldFix != fix else { return }
        session.toldFix = fix
        send(session, ServerMessage.state(fix: fix, reason: fix ? nil : noFixReason()))
    }

    func noFixReason() -> String {
        let reports = receivers.receiverReports()
        if reports.isEmpty { return "no receiver is configured" }
        if reports.allSatisfy({ $0.state != "connected" }) {
            return "receivers unavailable: " + reports.map { "\($0.name): \($0.reason ?? $0.state)" }.joined(separator: "; ")
        }
        return "no receiver has a fix"
    }

    // MARK: - Writing

    func send(_ session: ClientSession, _ bytes: [UInt8], isLocation: Bool = false) {
        guard !session.closed else { return }
        if !session.hasPendingOutput {
            // Nothing queued: the kernel takes the bytes straight from the caller's buffer, and the queue
            // holds only what it does not take.
            let sent: Int
            switch bytes.withUnsafeBytes({ sendNoSignal(session.fd, $0) }) {
            case .success(let n): sent = n
            case .failure(let e): sent = -Int(e.rawValue)
            }
            settle(session, bytes, sent: sent, isLocation: isLocation)
            return
        }
        session.enqueue(bytes, isLocation: isLocation)
        if session.outboundBytes > limits.maxQueuedBytes {
            close(session, why: "more than \(limits.maxQueuedBytes) bytes queued")
            return
        }
        if session.writeSource == nil { flush(session) }
    }

    /// After a send() of `bytes` to an empty queue returned `sent` (bytes taken, or a negative errno):
    /// counts what went, queues what did not (a report begun can no longer be replaced by a newer one),
    /// and closes the client when its socket failed.
    func settle(_ session: ClientSession, _ bytes: [UInt8], sent: Int, isLocation: Bool) {
        if sent >= 0 {
            session.totalSent += sent
            if sent == bytes.count { return }
            session.enqueue(bytes, isLocation: false)
            session.sentOfFirst = sent
            session.outboundBytes -= sent
        } else if Errno(rawValue: Int32(-sent)) == .wouldBlock {
            session.enqueue(bytes, isLocation: isLocation)
        } else {
            close(session, why: "write failed: \(Errno(rawValue: Int32(-sent)))")
            return
        }
        flush(session)
    }

    func flush(_ session: ClientSession) {
        switch session.flush() {
        case .failure(let e):
            close(session, why: "write failed: \(e)")
        case .success(let progressed):
            if !session.hasPendingOutput {
                session.writeSource?.cancel()
                session.writeSource = nil
                return
            }
            if session.writeSource == nil {
                let source = DispatchSource.makeWriteSource(fileDescriptor: session.fd, queue: queue)
                let id = session.id
                source.setEventHandler { [weak self] in
                    guard let self, let session = self.sessions[id] else { return }
                    self.flush(session)
                }
                session.writeSource = source
                source.resume()
            }
            _ = progressed
        }
    }

    /// A client that reads nothing for `clientTimeout` while messages wait for it — in our queue or in
    /// the kernel's socket buffer (SIOCOUTQ) — is disconnected. Checked by a sweep every second or so
    /// while clients are connected; a timer, not a read loop, and one ioctl per client.
    private func sweepStuckClients() {
        let now = monotonicNow()
        for session in sessions.values {
            let unreadInKernel = max(0, Int(locationd_socket_unread_bytes(session.fd)))
            let peerRead = session.totalSent - unreadInKernel
            if peerRead > session.peerRead || (unreadInKernel == 0 && !session.hasPendingOutput) {
                session.peerRead = peerRead
                session.lastReadProgress = now
            } else if now - session.lastReadProgress >= limits.clientTimeout {
                refuse(session, "read nothing for \(Self.seconds(limits.clientTimeout)) while messages waited")
            }
        }
    }

    private func armSweep() {
        guard sweepTimer == nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let interval = min(1.0, limits.clientTimeout / 4)
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(100))
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            self.sweepStuckClients()
            if self.sessions.isEmpty {
                self.sweepTimer?.cancel()
                self.sweepTimer = nil
            }
        }
        sweepTimer = timer
        timer.resume()
    }

    func close(_ session: ClientSession, why: String) {
        guard !session.closed else { return }
        session.closed = true
        for (_, item) in session.polls { item.cancel() }
        session.polls.removeAll()
        sessions.removeValue(forKey: session.id)
        agents.removeValue(forKey: session.id)
        for (id, ask) in asks where ask.session === session {
            ask.timeout.cancel()
            asks.removeValue(forKey: id)
            tellAgents(ServerMessage.object("ANSWERED", members: answeredMembers(id, "withdrawn", by: "client disconnected")))
        }
        // Close the descriptor only once every source watching it has been cancelled.
        let closer = DescriptorCloser(fd: session.fd, sources: (session.readSource != nil ? 1 : 0) + (session.writeSource != nil ? 1 : 0))
        for source in [session.readSource as (any DispatchSourceProtocol)?, session.writeSource].compactMap({ $0 }) {
            source.setCancelHandler { closer.release() }
            source.cancel()
        }
        session.readSource = nil
        session.writeSource = nil
        log.info("client closed", merge(context(session), why + (session.coalesced > 0 ? " (\(session.coalesced) stale reports coalesced)" : "")))
    }
}

/// Closes a descriptor when the last of its dispatch sources has finished cancelling (all on one queue).
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

func monotonicNow() -> Double {
    Double(DispatchTime.now().uptimeNanoseconds) / 1e9
}
