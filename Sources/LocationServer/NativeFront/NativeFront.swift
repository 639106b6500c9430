import Dispatch
import LocationCore
import LocationPolicy
import LocationPosix
import LocationWire

/// The native front: the locationd protocol on a Unix socket (docs/PROTOCOL.md). It accepts clients,
/// identifies them from the kernel, frames their requests and writes what the state decides — and holds
/// no policy of its own.
///
/// Concurrency: one `Locked<ServerState>` owns everything that changes. The clients' sockets are watched in
/// one epoll set whose thread hands over their events (`EventPoller`); listening sockets and timers arrive
/// on one serial queue, identity look-ups run on another (they read /proc and the user database), a fix
/// arrives on the receiver's thread; each takes the lock once and runs its turn to the end — one hop from
/// a receiver to the clients. Slow work (the grant store's fsync, the audit file) runs on the
/// `PolicyStore`'s queue.
public final class NativeFront: Sendable {
    /// The listening socket.
    public let listener: ListeningSocket
    /// The gpsd front's TCP listeners (`gpsd-listen`); empty: no gpsd front.
    public let gpsdListeners: [TCPListener]
    /// The NMEA socket (`nmea-socket`, for GeoClue); nil: none.
    public let nmeaListener: ListeningSocket?
    /// The server state: every turn takes its lock (`withState`).
    let state: Locked<ServerState>
    /// Socket events and timers. Every queue of the daemon has the default QoS: on Linux libdispatch
    /// gives each worker thread its queue's QoS as a nice value with setpriority(2), and an
    /// unprivileged daemon may not lower a nice value, neither below 0 (userInitiated -2,
    /// userInteractive -4) nor back to 0 in a thread that inherited +2 from a utility worker; each
    /// refusal logged "Failed to set thread priority for worker thread" (systemd/locationd.service).
    private let queue = DispatchQueue(label: "locationd.server")
    /// Identifying new clients (reads /proc/PID, the user and group databases).
    private let identityQueue = DispatchQueue(label: "locationd.identity")
    /// The uplinks' reports and sharing changes (`Effect.uplinks`), in the order the turns decided them: each
    /// report is encoded and queued for its broker here, off the fan-out path.
    private let uplinkQueue = DispatchQueue(label: "locationd.uplinks")
    /// When the last identification pass ended, the idle time owed after it, and whether a later one is
    /// already scheduled (`identifyWaiting`).
    private let lastPass = Locked((ended: ContinuousClock.Instant?.none, gap: Duration.zero, scheduled: false))
    private let store: PolicyStore
    private let log: Log
    /// logind, asked about users' login states (When In Use) once the policy depends on login sessions.
    private let logins = LoginWatch()

    /// - Parameters:
    ///   - listener: the listening Unix socket (bound here or passed by systemd).
    ///   - rules: the policy rules in force.
    ///   - adminGroup: the group whose members may run agents and admin commands (root always may).
    ///   - store: the grant store, audit file and fudger secret.
    ///   - receivers: the receivers' status snapshot.
    ///   - release: the daemon's version, for VERSION.
    ///   - gpsdListeners: TCP listeners for the gpsd front (gpsd's protocol, docs/GPSD.md).
    ///   - nmeaListener: the NMEA socket: Unix-socket clients identified as on `listener`, sent NMEA
    ///     sentences of the fix they may see, from connect (docs/GPSD.md "GeoClue").
    public init(listener: ListeningSocket, limits: ServerLimits, rules: PolicyRules, adminGroup: String, store: PolicyStore,
                receivers: any ReceiverStatusProvider, log: Log, release: String, gpsdListeners: [TCPListener] = [],
                nmeaListener: ListeningSocket? = nil) {
        self.listener = listener
        // Every request is checked against the process that connected (`ServerState.readable`).
        _ = PeerProcess.passCredentials(listener.fileDescriptor)
        if let nmeaListener { _ = PeerProcess.passCredentials(nmeaListener.fileDescriptor) }
        self.gpsdListeners = gpsdListeners
        self.nmeaListener = nmeaListener
        self.store = store
        self.log = log
        let policy = PolicyState(rules: rules, grants: store.initialGrants, adminGroup: adminGroup)
        let publisher = Publisher(policy: policy, fudger: store.fudger(gridMeters: rules.defaults.reducedGrid))
        let context = ServerContext(limits: limits, log: log, store: store, receivers: receivers, release: release)
        var initial = ServerState(context: context, publisher: publisher)
        initial.gpsdFront.enabled = !gpsdListeners.isEmpty
        state = Locked(initial)
    }

    /// Starts accepting clients.
    public func start() {
        // Before any client is accepted: identifications queue behind it, so none is identified without
        // its user's login state when the policy depends on it.
        withState { $0.watchLoginSessionsIfNeeded() }
        // libdispatch makes its timers' timerfd(2) when it first programs one; made in want of descriptors
        // (EMFILE), the timer never fires — the one that resumes accepting (`acceptFailed`). Made now.
        queue.asyncAfter(deadline: .now() + .seconds(1)) {}
        // The clients' sockets, in one epoll set (EventPoller: a dispatch source per client crashed in
        // libdispatch under churn), whose thread also ticks the stuck-reader sweep. Without it the daemon
        // cannot serve: it stops, and systemd says why.
        let poller: EventPoller
        do {
            poller = try EventPoller(tickEvery: state.withLock { $0.sweepInterval }, tick: { [weak self] in self?.post(.sweep) },
                                     handler: { [weak self] in self?.socketsReady($0) })
        } catch {
            fatalError("cannot watch client sockets (epoll): \(error)")
        }
        state.withLock { s in
            s.poller = poller
            let source = DispatchSource.makeReadSource(fileDescriptor: listener.fileDescriptor, queue: queue)
            source.setEventHandler { [weak self] in self?.acceptAll(.unix) }
            s.accepting.source = source
            source.resume()
            if let nmea = nmeaListener {
                let source = DispatchSource.makeReadSource(fileDescriptor: nmea.fileDescriptor, queue: queue)
                source.setEventHandler { [weak self] in self?.acceptAll(.nmea) }
                s.gpsdFront.nmeaAccepting.source = source
                source.resume()
            }
            for (index, gpsd) in gpsdListeners.enumerated() {
                let source = DispatchSource.makeReadSource(fileDescriptor: gpsd.fileDescriptor, queue: queue)
                source.setEventHandler { [weak self] in self?.acceptAllGpsd(index) }
                var throttle = AcceptThrottle()
                throttle.source = source
                s.gpsdFront.accepting.append(throttle)
                source.resume()
            }
        }
    }

    /// The policy has come to depend on login sessions: from now on users' states are asked of logind
    /// when they connect and whenever it says they changed — at once for the users connected now. Runs on
    /// the identity queue, as identifications do, so that no client is identified between the two.
    private func watchLoginSessions() {
        if !logins.watch(queue: identityQueue, changed: { [weak self] in self?.loginsChanged() }) {
            log.notice("logind cannot be watched: users' sessions are read when they connect only; When-In-Use clients of users without an active session get nothing",
                       LoginSessions.libraryFailure.map { ["reason": $0] } ?? [:])
        }
        loginsChanged()
    }

    /// logind says a user's login state changed: the connected users' states are asked again (off the
    /// fan-out queue), and When-In-Use clients pause or resume.
    private func loginsChanged() {
        let uids = state.withLock { s in Set(s.publisher.subscribers.ids.compactMap { s.publisher.subscribers[$0]?.identity.uid }) }
        let states = uids.sorted().map { (uid: $0, inUse: logins.isInUse($0)) }
        withState { s, now in s.noteUsers(states, at: now) }
    }

    /// Number of connected clients.
    public var clientCount: Int { state.withLock { $0.connections.count } }

    /// Publishes a fix (a no-fix tells subscribers the fix was lost) on the caller's thread: no hand-off
    /// between the receiver that decoded the fix and the fan-out. Waits only for the server's own turns,
    /// which never block (sockets are non-blocking, files are written elsewhere).
    public func publish(_ fix: Fix) {
        withState { s, now in s.publish(fix, at: now) }
    }

    /// A receiver's status changed (state, device): the gpsd front reads the device paths again.
    public func receiverChanged() {
        state.withLock { $0.gpsdFront.forgetDevicePaths() }
    }

    /// Applies a new configuration's rules (SIGHUP): clients that lose their grant are told at once.
    public func applyPolicyRules(_ rules: PolicyRules) {
        let gridChanged = state.withLock { $0.publisher.fudger.gridMeters != rules.defaults.reducedGrid }
        let fudger = gridChanged ? store.fudger(gridMeters: rules.defaults.reducedGrid) : nil
        withState { s, now in
            s.deliver(s.publisher.replaceRules(rules, fudger: fudger, at: now), at: now.wall)
            s.watchLoginSessionsIfNeeded()
        }
    }

    /// Stops accepting, tells every client why, closes them, and flushes the audit file (after the sharing
    /// file a SHARE may still have waiting on the uplinks' queue).
    public func stop(reason: String) {
        withState { $0.stop(reason: reason) }
        state.withLock { $0.poller?.stop() }
        drainUplinks()
        store.sync()
    }

    /// Waits until the uplinks were handed every report and sharing change decided so far (`Effect.uplinks`):
    /// before they stop, so that a report of the last fixes is spooled, not dropped by a stopped uplink.
    public func drainUplinks() {
        uplinkQueue.sync {}
    }

    /// Client sockets are ready (on the poller's thread): room to write first, then input, each batch in one
    /// turn. A tag is a client id, never reused: an event of a client closed meanwhile finds no connection.
    private func socketsReady(_ events: [EventPoller.Event]) {
        withState { s, now in
            for event in events {
                let id = Int(truncatingIfNeeded: event.tag)
                if event.writable { s.writable(id) }
                if event.readable { s.readable(id, at: now) }
            }
        }
    }

    // MARK: - Turns

    /// Runs one turn under the lock, then carries out what the state asked of the front.
    func withState(_ body: (inout ServerState) -> Void) {
        withState { s, _ in body(&s) }
    }

    /// Runs one turn under the lock with the time it began, then carries out what the state asked of the
    /// front. The time is read once the lock is held, so that turns' times never go back: read before, a
    /// fix's time could come before that of a WATCH that took the lock first, and the fix failed the new
    /// watcher's interval filter (`DeliveryFilter`) — one fix in about 10^6 skipped in the soak.
    func withState(_ body: (inout ServerState, Moment) -> Void) {
        state.withLock { s in
            body(&s, Moment.now())
            while !s.effects.isEmpty {
                let effects = s.effects
                s.effects.removeAll()
                for effect in effects { perform(effect, &s) }
            }
        }
    }

    private func perform(_ effect: Effect, _ s: inout ServerState) {
        switch effect {
        case let .schedule(event, delay):
            queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay / .nanoseconds(1)))) { [weak self] in
                self?.post(event)
            }
        case let .saveGrants(reply, request, extra):
            store.save(s.publisher.policy.grants) { [weak self] error in
                guard let self else { return }
                self.queue.async { self.post(.grantsSaved(admin: reply, request: request, error: error, extra: extra)) }
            }
        case .uplinks(let work):
            uplinkQueue.async { for item in work { item.run() } }
        case let .saveSharing(text, path, reply):
            // After the uplinks were told (their queue is serial): the reply says the switch is in force.
            uplinkQueue.async { [weak self, store] in
                guard let path else {
                    guard let self else { return }
                    return self.queue.async { self.post(.sharingSaved(reply: reply)) }
                }
                store.saveSharing(text, at: path) { [weak self] in
                    guard let self else { return }
                    self.queue.async { self.post(.sharingSaved(reply: reply)) }
                }
            }
        case .watchLoginSessions:
            identityQueue.async { [weak self] in self?.watchLoginSessions() }
        case .recheckHolders(let checks):
            identityQueue.async { [weak self] in
                let results = HolderRecheck.run(checks)
                guard let self else { return }
                self.queue.async { self.post(.holdersChecked(results)) }
            }
        case let .readAudit(reply, since, cursor, limit):
            store.readAudit(since: since, cursor: cursor, limit: limit) { [weak self] page in
                guard let self else { return }
                self.queue.async { self.post(.auditRead(admin: reply, page: page)) }
            }
        }
    }

    private func post(_ event: ServerEvent) {
        withState { s, now in s.handle(event, at: now) }
    }

    // MARK: - Accepting

    /// Accepts the waiting clients of a Unix listener: the native front's (`.unix`) or the NMEA socket
    /// (`.nmea`); each is identified from the kernel (`ClientIdentity.ofPeer`) before it is served.
    private func acceptAll(_ which: ServerState.Listener) {
        guard let socket = which == .nmea ? nmeaListener : listener else { return }
        let front: Front = which == .nmea ? .nmea : .native
        while true {
            switch socket.accept() {
            case .success(let fd):
                let uid = try? PeerCredentials(socket: fd).uid
                waitForIdentity(PendingConnection(fd: fd, uid: uid, front: front, owner: nil), listener: which)
            case .failure(.wouldBlock):
                return
            case .failure(let e):
                // Out of descriptors or memory: the pending connection stays in the backlog, and the
                // listening socket stays readable — back off instead of spinning on it.
                withState { s, now in s.acceptFailed(e, at: now.monotonic, listener: which) }
                return
            }
        }
    }

    /// Accepts the waiting clients of the gpsd front's listener `index`; each is identified from the kernel
    /// (TCP: `ClientIdentity.ofTCPPeer`) before it is served.
    private func acceptAllGpsd(_ index: Int) {
        while true {
            switch gpsdListeners[index].accept() {
            case .success(let fd):
                let owner = Result { () throws(PeerRefusal) in try ClientIdentity.tcpPeerOwner(socket: fd) }
                waitForIdentity(PendingConnection(fd: fd, uid: try? owner.get().uid, front: .gpsd, owner: owner), listener: .gpsd(index))
            case .failure(.wouldBlock):
                return
            case .failure(let e):
                withState { s, now in s.acceptFailed(e, at: now.monotonic, listener: .gpsd(index)) }
                return
            }
        }
    }

    /// Queues the identification of `connection` in its user's turn (`PendingIdentifications`), or refuses
    /// it when its user opens connections too fast (`UserConnectionRate`) or has too many waiting.
    private func waitForIdentity(_ connection: PendingConnection, listener: ServerState.Listener) {
        var refusal: String?
        withState { s, now in
            s.acceptSucceeded(listener)
            if !s.connectionRate.admit(connection.uid, now: now.sinceOrigin) {
                refusal = "too many new connections of this user (\(s.limits.newConnectionsPerSecondPerUser) a second); try again later"
            } else if !s.pending.enqueue(connection.uid, connection) {
                refusal = "too many connections of this user waiting to be identified; try again"
            }
        }
        if let refusal { return refuseUnidentified(connection.fd, uid: connection.uid, front: connection.front, why: refusal) }
        // One run per queued connection; each identifies whatever is waiting then, in one batch.
        identityQueue.async { [weak self] in self?.identifyWaiting() }
    }

    /// A connection past its user's connection rate or `PendingIdentifications`' bounds: told `why` (the
    /// native protocol's ERROR, gpsd's ERROR; an NMEA reader nothing) and closed at once, so that it holds
    /// no descriptor and no place on the identity queue.
    private func refuseUnidentified(_ fd: Int32, uid: UInt32?, front: Front, why: String) {
        let refusal = front.refusal(why)
        if !refusal.isEmpty { _ = refusal.withUnsafeBytes { sendNoSignal(fd, $0) } }
        FileDescriptorOps.close(fd)
        log.client(.warning, "client refused", uid: uid, ["client.uid": uid.map(String.init) ?? "?", "reason": why])
    }

    /// Identifies the connections waiting (on the identity queue, off the fan-out), a batch at a time in their
    /// users' turns: one pass over /proc finds the holders of all of them (`IdentificationBatch`), then each is
    /// admitted, or refused with the reason.
    private func identifyWaiting() {
        // A pass may start only once the one before had its share of idle time after it
        // (`IdentificationBatch.gap`): each reads every process's descriptors, and one user's connections
        // arriving one by one must not buy a pass each (at the open-file limit, where each is refused, that was
        // 0.8 s of CPU in 2 s); what arrives meanwhile waits for one pass.
        let wait: Duration? = lastPass.withLock { last in
            let now = ContinuousClock.now
            if let ended = last.ended, now - ended < last.gap {
                if last.scheduled { return .zero }
                last.scheduled = true
                return last.gap - (now - ended)
            }
            last.scheduled = false
            return nil
        }
        if let wait {
            if wait > .zero {
                identityQueue.asyncAfter(deadline: .now() + .nanoseconds(Int(wait / .nanoseconds(1)))) { [weak self] in
                    self?.lastPass.withLock { $0.scheduled = false }
                    self?.identifyWaiting()
                }
            }
            return
        }
        let began = ContinuousClock.now
        var starved = false
        defer {
            let ended = ContinuousClock.now
            let gap = IdentificationBatch.gap(after: ended - began, outOfDescriptors: starved)
            lastPass.withLock { $0 = (ended: ended, gap: gap, scheduled: $0.scheduled) }
        }
        var waiting: [PendingConnection] = []
        withState { waiting = $0.pending.next(upTo: IdentificationBatch.limit) }
        guard !waiting.isEmpty else { return }
        let outcomes = IdentificationBatch.identify(waiting)
        starved = outcomes.contains { if case .refused(_, .daemonOutOfDescriptors) = $0 { true } else { false } }
        var more = false
        // Whether each user is at the machine, asked here, off the fan-out queue (When In Use).
        var inUse: [UInt32: Bool] = [:]
        for case .identified(_, let identity, _) in outcomes where inUse[identity.uid] == nil {
            inUse[identity.uid] = logins.isInUse(identity.uid)
        }
        withState { s, now in
            s.noteUsers(inUse.sorted { $0.key < $1.key }.map { (uid: $0.key, inUse: $0.value) }, at: now)
            for outcome in outcomes {
                switch outcome {
                case let .identified(connection, identity, peerInode):
                    _ = s.admit(connection.fd, identity: identity, front: connection.front, peerInode: peerInode, at: now)
                case .left(let connection):
                    FileDescriptorOps.close(connection.fd)
                case let .refused(connection, refusal):
                    s.refuseUnidentified(connection, refusal)
                }
            }
            // More than a batch waited: the runs queued for them may have found a pass too recent and left.
            more = s.pending.count > 0
        }
        if more { identityQueue.async { [weak self] in self?.identifyWaiting() } }
    }
}
