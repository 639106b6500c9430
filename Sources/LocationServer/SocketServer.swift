import CPosixShims
import Dispatch
import LocationCore
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

/// The location socket: accepts clients on a Unix socket, answers their requests, and fans each fix out
/// to the subscribers the policy allows — event-driven on one queue, never blocked by a slow client:
/// every client has a bounded queue in which a newer location report replaces an unsent one.
public final class SocketServer: @unchecked Sendable {
    public let release: String
    let listener: ListeningSocket
    let limits: ServerLimits
    let authorizer: any LocationAuthorizer
    let receivers: any ReceiverStatusProvider
    let log: Log
    let queue = DispatchQueue(label: "locationd.server", qos: .userInteractive)

    private var acceptSource: DispatchSourceRead?
    private var sessions: [Int: ClientSession] = [:]
    private var nextID = 1
    private var latest: Fix?
    private var encoder = GPSDEncoder()
    private var stopped = false
    private var readBuffer = [UInt8](repeating: 0, count: 65536)
    private var sweepTimer: DispatchSourceTimer?

    public init(listener: ListeningSocket, limits: ServerLimits, authorizer: any LocationAuthorizer,
                receivers: any ReceiverStatusProvider, log: Log, release: String) {
        self.listener = listener
        self.limits = limits
        self.authorizer = authorizer
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

    /// Publishes a fix (a no-fix tells subscribers the fix was lost).
    public func publish(_ fix: Fix) {
        queue.async { self.fanOut(fix) }
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
            log.warning("client refused: no peer credentials", ["errno": error.description])
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
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self, weak session] in
            guard let self, let session else { return }
            self.readRequests(session)
        }
        session.readSource = source
        source.resume()
        send(session, ServerMessage.version(release: release))
    }

    private func context(_ s: ClientSession) -> KeyValuePairs<String, String> {
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

    private func handleLine(_ line: [UInt8], _ session: ClientSession, now: Double) {
        if line.allSatisfy({ $0 == 32 || $0 == 13 || $0 == 9 }) { return }
        session.requestsInWindow += 1
        if session.requestsInWindow > limits.maxRequestsPerSecond {
            refuse(session, "flooding: more than \(limits.maxRequestsPerSecond) requests in a second")
            return
        }
        let request: Request
        do {
            request = try RequestParser.parse(line)
        } catch {
            bad(session, error)
            return
        }
        switch request {
        case let .watch(enable, minInterval, distanceFilter):
            guard enable else {
                session.subscribed = false
                send(session, ServerMessage.watch(enable: false, minInterval: minInterval, distanceFilter: distanceFilter))
                return
            }
            if case .denied(let reason) = authorizer.decide(session.identity) {
                log.notice("location refused", merge(context(session), reason))
                send(session, ServerMessage.error(request: "WATCH", message: "not authorized: \(reason)"))
                return
            }
            session.subscribed = true
            session.minInterval = minInterval
            session.distanceFilter = distanceFilter
            session.lastDelivered = nil
            session.lastDeliveredAt = -Double.infinity
            session.toldFix = nil
            send(session, ServerMessage.watch(enable: true, minInterval: minInterval, distanceFilter: distanceFilter))
            if let latest, latest.hasPosition {
                deliver(latest, to: session, now: now, tpv: nil)
            } else {
                tellState(session, fix: false)
            }
        case let .poll(timeout):
            if case .denied(let reason) = authorizer.decide(session.identity) {
                log.notice("location refused", merge(context(session), reason))
                send(session, ServerMessage.error(request: "POLL", message: "not authorized: \(reason)"))
                return
            }
            let id = session.nextPoll
            session.nextPoll += 1
            let item = DispatchWorkItem { [weak self, weak session] in
                guard let self, let session, !session.closed, session.polls.removeValue(forKey: id) != nil else { return }
                self.send(session, ServerMessage.error(request: "POLL", message: "no fix within \(Self.seconds(timeout))"))
            }
            session.polls[id] = item
            queue.asyncAfter(deadline: .now() + timeout, execute: item)
        case .status:
            send(session, ServerMessage.status(mode: latest?.mode ?? .noFix, clients: sessions.count,
                                                receivers: receivers.receiverReports()))
        }
    }

    static func seconds(_ s: Double) -> String {
        s == s.rounded() ? "\(Int(s)) s" : "\(s) s"
    }

    private func merge(_ c: KeyValuePairs<String, String>, _ reason: String) -> KeyValuePairs<String, String> {
        var pairs = Array(c)
        pairs.append(("reason", reason))
        return ["client.id": pairs[0].1, "client.pid": pairs[1].1, "client.uid": pairs[2].1, "client.exe": pairs[3].1,
                "client.unit": pairs[4].1, "reason": reason]
    }

    private func bad(_ session: ClientSession, _ error: RequestError) {
        session.badRequests += 1
        if session.badRequests > limits.maxBadRequests {
            refuse(session, "more than \(limits.maxBadRequests) bad requests")
            return
        }
        send(session, ServerMessage.error(request: error.request, message: error.message))
    }

    /// Tells the client why and closes it.
    private func refuse(_ session: ClientSession, _ why: String) {
        session.enqueue(ServerMessage.error(request: "?", message: why + "; closing"), isLocation: false)
        _ = session.flush()
        log.notice("client disconnected", merge(context(session), why))
        close(session, why: why)
    }

    // MARK: - Fan-out

    private func fanOut(_ fix: Fix) {
        latest = fix
        guard !stopped else { return }
        let now = monotonicNow()
        if !fix.hasPosition {
            for session in sessions.values where session.subscribed { tellState(session, fix: false) }
            return
        }
        var tpv: [UInt8] = []
        encoder.appendTPV(fix, accuracy: AccuracyLevel.full.rawValue, to: &tpv)
        for session in sessions.values {
            if !session.polls.isEmpty {
                if case .allowed = authorizer.decide(session.identity) {
                    let reply = ServerMessage.poll(tpv: tpv)
                    for (_, item) in session.polls { item.cancel() }
                    session.polls.removeAll()
                    send(session, reply)
                }
            }
            if session.subscribed { deliver(fix, to: session, now: now, tpv: tpv) }
        }
    }

    private func deliver(_ fix: Fix, to session: ClientSession, now: Double, tpv: [UInt8]?) {
        guard case .allowed(let accuracy) = authorizer.decide(session.identity) else {
            session.subscribed = false
            send(session, ServerMessage.error(request: "WATCH", message: "no longer authorized"))
            return
        }
        if now - session.lastDeliveredAt < session.minInterval { return }
        if session.distanceFilter > 0, let last = session.lastDelivered, let la0 = last.latitude, let lo0 = last.longitude,
           let la1 = fix.latitude, let lo1 = fix.longitude,
           Geodesy.distance(latitude1: la0, longitude1: lo0, latitude2: la1, longitude2: lo1) < session.distanceFilter {
            return
        }
        if session.toldFix == false { tellState(session, fix: true) }
        session.toldFix = true
        session.lastDelivered = fix
        session.lastDeliveredAt = now
        var bytes = tpv ?? []
        if tpv == nil { encoder.appendTPV(fix, accuracy: accuracy.rawValue, to: &bytes) }
        send(session, bytes, isLocation: true)
    }

    private func tellState(_ session: ClientSession, fix: Bool) {
        guard session.toldFix != fix else { return }
        session.toldFix = fix
        send(session, ServerMessage.state(fix: fix, reason: fix ? nil : noFixReason()))
    }

    private func noFixReason() -> String {
        let reports = receivers.receiverReports()
        if reports.isEmpty { return "no receiver is configured" }
        if reports.allSatisfy({ $0.state != "connected" }) {
            return "receivers unavailable: " + reports.map { "\($0.name): \($0.reason ?? $0.state)" }.joined(separator: "; ")
        }
        return "no receiver has a fix"
    }

    // MARK: - Writing

    private func send(_ session: ClientSession, _ bytes: [UInt8], isLocation: Bool = false) {
        guard !session.closed else { return }
        session.enqueue(bytes, isLocation: isLocation)
        if session.outboundBytes > limits.maxQueuedBytes {
            close(session, why: "more than \(limits.maxQueuedBytes) bytes queued")
            return
        }
        if session.writeSource == nil { flush(session) }
    }

    private func flush(_ session: ClientSession) {
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
                source.setEventHandler { [weak self, weak session] in
                    guard let self, let session, !session.closed else { return }
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

    private func close(_ session: ClientSession, why: String) {
        guard !session.closed else { return }
        session.closed = true
        for (_, item) in session.polls { item.cancel() }
        session.polls.removeAll()
        sessions.removeValue(forKey: session.id)
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
