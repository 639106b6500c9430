import Dispatch
import LocationCore
import LocationPolicy
import LocationPosix
import LocationWire

/// What the server's state uses of the world: fixed at start, shared, all `Sendable`.
struct ServerContext: Sendable {
    let limits: ServerLimits
    let log: Log
    let store: PolicyStore
    let receivers: any ReceiverStatusProvider
    let release: String
}

/// Something the state asks the front to do once the current turn is over: the front owns the dispatch
/// queue and the timers, and the state stays a value that never calls back into it. (Client sockets are
/// watched in `poller` directly: registering and unregistering must be done before the turn ends.)
enum Effect: Sendable {
    /// Hand `event` back to the state after `delay`.
    case schedule(ServerEvent, after: Duration)
    /// Write the grants as they are now; then `grantsSaved`, handing back `extra` for the reply.
    case saveGrants(reply: Int?, request: String, extra: ServerMessage.Grants)
    /// Once the uplinks have done the work handed to them before (the switch's change among it), write the
    /// sharing switch's state file (`text`; nil: remove it) at `path` (nil: none is kept); then `sharingSaved`,
    /// which sends `reply` (the SHARE reply as the turn decided it, and its connection), if any.
    case saveSharing(text: String?, path: String?, reply: (id: Int, bytes: [UInt8])?)
    /// Hand the uplinks their reports and the sharing switch's changes, in this order, on their own queue:
    /// encoding a report and queueing it for the broker is not the fan-out's work.
    case uplinks([UplinkWork])
    /// Read a page of the audit files; then `auditRead`.
    case readAudit(reply: Int, since: Double?, cursor: AuditCursor?, limit: Int?)
    /// Start asking logind about users' login sessions (`watchLoginSessionsIfNeeded`).
    case watchLoginSessions
    /// Look again at who holds these connections (`HolderRecheck`); then `holdersChecked`.
    case recheckHolders([HolderCheck])
}

/// Timers and completions coming back to the state.
enum ServerEvent: Sendable {
    case pollTimeout(client: Int, poll: Int, after: Duration)
    case askTimeout(ask: Int)
    /// One-time grants' lifetimes may have ended (`scheduleOnceCheck`).
    case onceExpiries
    /// The front's poller thread ticked (every `sweepInterval`): the stuck-reader sweep.
    case sweep
    /// A timed sharing pause may have ended (`armPauseEnd`).
    case sharingPauseEnds
    /// The accept back-off is over.
    case resumeAccepting
    /// The gpsd front's blind watchers are due their `mode` 1 TPV (`GpsdFrontState.blindInterval`).
    case blindTick
    /// The grant store was written (nil) or not (the error); `admin` waits for the reply to `request`,
    /// GRANTS with `extra`'s `effective` (GRANT) and `revoked` (REVOKE) added.
    case grantsSaved(admin: Int?, request: String, error: Errno?, extra: ServerMessage.Grants)
    case auditRead(admin: Int, page: AuditPage)
    /// The sharing state file was written (`saveSharing`); `reply` is the SHARE reply to send, to its connection.
    case sharingSaved(reply: (id: Int, bytes: [UInt8])?)
    /// A re-check of connections' holders came back (`recheckHolders`).
    case holdersChecked([HolderCheckResult])
}

/// Everything the native front mutates, as one value owned by one lock (`Locked`) in `NativeFront`: the
/// connections, the `Publisher`, the agent broker and the abuse accounting. Each turn — a request read,
/// a fix published, a timer — runs to completion under the lock; what needs the front is left in
/// `effects`.
struct ServerState {
    let context: ServerContext
    var publisher: Publisher
    var connections: [Int: Connection] = [:]
    var broker = AgentBroker()
    var effects: [Effect] = []
    /// The epoll set watching the clients' sockets (the front's, from `start`); nil in tests of the state alone.
    var poller: EventPoller?
    private var nextID = 1
    private(set) var stopped = false
    /// The listening socket's source and its back-off.
    var accepting = AcceptThrottle()
    /// Connections of both fronts accepted and waiting, in turn per user, to be identified.
    var pending: PendingIdentifications<PendingConnection>
    /// A re-check of the holders is under way (`ServerState+Holders`), and whether another was asked meanwhile.
    var holderCheck = (running: false, wanted: false)
    /// Connections per user, for `maxClientsPerUser`.
    private var connectionsPerUser: [UInt32: Int] = [:]

    /// The connections of user `uid` (both fronts, identified).
    func connectionCount(of uid: UInt32) -> Int { connectionsPerUser[uid, default: 0] }
    /// Whether the front was asked to watch logind (`watchLoginSessionsIfNeeded`).
    var loginSessionsWatched = false
    /// How fast each user opens connections (`UserConnectionRate`; `NativeFront.waitForIdentity`).
    var connectionRate: UserConnectionRate
    /// What each user's connections together have sent this second (`UserReadBudget`; ServerState+Input).
    var userReads = UserReadBudget()
    /// Where a client's bytes are read into (ServerState+Input).
    var readBuffer = [UInt8](repeating: 0, count: 65536)
    /// The fan-out's deliveries, kept to reuse their storage.
    private var deliveries: [Delivery] = []
    /// The gpsd front's error models, encoded reports and unauthorized watchers.
    var gpsdFront = GpsdFrontState()
    /// When the one timer for one-time grants' ends fires (`scheduleOnceCheck`); nil: none is set.
    var onceCheck: ContinuousClock.Instant?

    init(context: ServerContext, publisher: Publisher) {
        self.context = context
        self.publisher = publisher
        pending = PendingIdentifications(perUser: context.limits.clientsPerUser, total: context.limits.maxClients)
        connectionRate = UserConnectionRate(perSecond: context.limits.newConnectionsPerSecondPerUser, burst: context.limits.clientsPerUser)
    }

    var limits: ServerLimits { context.limits }

    // MARK: - Connections

    /// A client identified by the kernel: admitted (greeted with VERSION), or refused when the server is
    /// full or stopping. Returns its id, or nil when refused (the socket is closed).
    /// - Parameter front: `.gpsd`: greeted with gpsd's VERSION, speaks gpsd's protocol; `.nmea`: greeted with
    ///   nothing, gets NMEA sentences from now on as far as the policy lets it (`nmeaSocketConnected`).
    /// - Parameter peerInode: the inode of the socket at its other end, for `HolderRecheck`.
    mutating func admit(_ fd: Int32, identity: ClientIdentity, front: Front = .native, peerInode: UInt64? = nil, at now: Moment) -> Int? {
        let id = nextID
        nextID += 1
        var connection = Connection(fd: fd, identity: identity, front: front, peerInode: peerInode, now: now.monotonic)
        if let why = refusal(of: identity) {
            let refusal = front.refusal(why)
            if !refusal.isEmpty { _ = try? connection.output.send(refusal, isLocation: false, on: fd) }
            connection.closeSocket(poller)
            context.log.client(.warning, "client refused", uid: identity.uid, connection.context(id, reason: why))
            return nil
        }
        connections[id] = connection
        connectionsPerUser[identity.uid, default: 0] += 1
        publisher.connect(id, identity: identity)
        context.log.client(.info, "client connected", uid: identity.uid, connection.context(id))
        do {
            try poller?.add(fd, tag: UInt64(id))
        } catch {
            close(id, why: "cannot watch the socket: \(error)")
            return nil
        }
        switch front {
        case .native:
            send(id, ServerMessage.version(release: context.release))
        case .gpsd:
            var version: [UInt8] = []
            GpsdResponses.appendVersion(to: &version)
            send(id, version, gpsd: true)
        case .nmea:
            nmeaSocketConnected(id, at: now)
        }
        return id
    }

    /// Why a new client cannot be admitted, or nil: one user may hold `maxClientsPerUser` connections, and
    /// the last `reservedClients` are kept for root and the admin group, so that no user can lock the
    /// agents and the administrator out.
    private func refusal(of identity: ClientIdentity) -> String? {
        if stopped { return "locationd is stopping" }
        if connections.count >= limits.maxClients { return "too many clients (\(limits.maxClients))" }
        if publisher.policy.isAdmin(identity) { return nil }
        if connections.count >= limits.maxClients - limits.reservedClients {
            return "too many clients (\(limits.maxClients), of which \(limits.reservedClients) are kept for administrators)"
        }
        if connectionsPerUser[identity.uid, default: 0] >= limits.clientsPerUser {
            return "too many clients of uid \(identity.uid) (\(limits.clientsPerUser))"
        }
        return nil
    }

    /// accept(2) failed: accepting pauses for a back-off, and the failure is logged at a bounded rate.
    /// - Parameter listener: the listener that failed.
    mutating func acceptFailed(_ error: Errno, at now: ContinuousClock.Instant, listener: Listener = .unix) {
        let (resumeAfter, failures) = withThrottle(of: listener) { $0.failed(at: now) }
        if let failures {
            context.log.warning("accept failed; backing off", ["errno": error.description, "failures": String(failures),
                                                                "clients": String(connections.count)])
        }
        if let resumeAfter { effects.append(.schedule(.resumeAccepting, after: resumeAfter)) }
    }

    /// A connection was accepted: that listener's back-off starts from the shortest again.
    mutating func acceptSucceeded(_ listener: Listener = .unix) {
        withThrottle(of: listener) { $0.succeeded() }
    }

    /// Runs `body` on the back-off of `listener`.
    private mutating func withThrottle<R>(of listener: Listener, _ body: (inout AcceptThrottle) -> R) -> R {
        switch listener {
        case .unix: return body(&accepting)
        case .gpsd(let index): return body(&gpsdFront.accepting[index])
        case .nmea: return body(&gpsdFront.nmeaAccepting)
        }
    }

    /// The daemon's listening sockets.
    enum Listener: Sendable, Equatable {
        /// The native front's Unix socket.
        case unix
        /// The gpsd front's TCP listener at this index of `NativeFront.gpsdListeners`.
        case gpsd(Int)
        /// The NMEA socket (`nmea-socket`).
        case nmea
    }

    /// Closes a client: its POLLs, its one-time grant and its questions to agents end with it.
    mutating func close(_ id: Int, why: String) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        let uid = connection.identity.uid
        connectionsPerUser[uid] = connectionsPerUser[uid].flatMap { $0 > 1 ? $0 - 1 : nil }
        for ask in broker.remove(id) {
            // Recorded like every other outcome of a request (a new user found withdrawn questions missing
            // from the audit), while the client's identity is still known.
            audit("decision", id, request: ask.request, status: nil, accuracy: nil,
                  reason: "question \(ask.id) withdrawn: the client disconnected before an agent answered", at: Moment.now().wall)
            closeQuestion(ask.id, "withdrawn", by: "client disconnected")
        }
        publisher.disconnect(id)
        gpsdFront.blind.remove(id)
        connection.closeSocket(poller)
        let coalesced = connection.output.coalesced
        context.log.client(.info, "client closed", uid: uid,
                           connection.context(id, reason: why + (coalesced > 0 ? " (\(coalesced) stale reports coalesced)" : "")))
        // A line of its own (budgeted apart from the frequent "client closed"): the reports a client read
        // too slowly to get, which it cannot tell from a fix the receiver did not make.
        if coalesced > 0 {
            context.log.client(.notice, "client missed reports", uid: uid,
                               connection.context(id, reason: "\(coalesced) reports replaced by newer ones before it read them"))
        }
    }

    /// Tells the client why, and closes it. The line is within the user's budget (`Log.client`): a client
    /// provokes it at will (flooding, bad requests), and one uid wrote 351 of them in 20 s (issue 32).
    mutating func refuse(_ id: Int, _ why: String) {
        guard let connection = connections[id] else { return }
        send(id, ServerMessage.error(request: "?", message: why + "; closing"))
        context.log.client(.notice, "client disconnected", uid: connection.identity.uid, connection.context(id, reason: why))
        close(id, why: why)
    }

    /// A bad request: an ERROR, and the connection closed after `maxBadRequests` of them.
    mutating func bad(_ id: Int, _ error: RequestError) {
        connections[id]?.meter.bad += 1
        guard let bad = connections[id]?.meter.bad, bad <= limits.maxBadRequests else {
            refuse(id, "more than \(limits.maxBadRequests) bad requests")
            return
        }
        send(id, ServerMessage.error(request: error.request, message: error.message))
    }

    /// Stops serving: every client is told why and closed.
    mutating func stop(reason: String) {
        stopped = true
        accepting.cancel()
        for i in gpsdFront.accepting.indices { gpsdFront.accepting[i].cancel() }
        gpsdFront.nmeaAccepting.cancel()
        let goodbye = ServerMessage.error(request: "?", message: reason)
        for id in connections.keys.sorted() {
            send(id, goodbye)
            close(id, why: "daemon stopping")
        }
    }

    // MARK: - Fixes

    /// A fix from the receivers, to every client the policy lets see it.
    mutating func publish(_ fix: Fix, at now: Moment) {
        guard !stopped else { return }
        if gpsdFront.enabled { gpsdFront.observe(fix) }
        // Taken out, not copied: with `deliveries` still holding the storage, the first append would copy it.
        var out = deliveries
        deliveries = []
        publisher.publish(fix, at: now, into: &out)
        let uplinkReports = publisher.publishUplinks(at: now, into: &out)
        deliver(out, at: now.wall)
        if !uplinkReports.isEmpty { effects.append(.uplinks(uplinkReports.map(UplinkWork.report))) }
        out.removeAll(keepingCapacity: true)
        deliveries = out
    }

    // MARK: - Timers and completions

    mutating func handle(_ event: ServerEvent, at now: Moment) {
        switch event {
        case let .pollTimeout(id, poll, after):
            guard publisher.expirePoll(poll, of: id, at: now) else { break }
            // A reduced POLL waited its cadence, not the timeout it asked for (`reducedPollWait`): "no fix within
            // 20 s" after 2.5 s would be untrue (issue 32). It is told when its next report is due instead: after
            // this notice, an interval on; for a program that never had a report, now, with the next fix.
            if publisher.authorization(of: id, at: now).accuracy == .reduced {
                send(id, Self.pacedPollError("no fix yet; at reduced accuracy the next report is due", wait: publisher.reducedReportDue(of: id, at: now)))
            } else {
                send(id, ServerMessage.error(request: "POLL", message: "no fix within \(DurationText.seconds(after))"))
            }
        case .askTimeout(let ask):
            askTimedOut(ask, at: now)
        case .onceExpiries:
            checkOnceExpiries(at: now)
        case .sweep:
            sweepStuckClients(now: now.monotonic)
            checkHolders()
            // The ask timeouts' own timers are libdispatch's; the poller's tick is the backstop (under libfaketime's
            // clock steps a timer armed after a step fired 13 s late: Scripts/faults "clock").
            for ask in broker.overdue(now: now.monotonic, timeout: .seconds(publisher.policy.rules.defaults.askTimeout)) {
                askTimedOut(ask, at: now)
            }
        case .sharingPauseEnds:
            pauseMayHaveEnded(at: now.wall)
        case .blindTick:
            gpsdBlindTick()
        case .resumeAccepting:
            accepting.resume()
            for i in gpsdFront.accepting.indices { gpsdFront.accepting[i].resume() }
            gpsdFront.nmeaAccepting.resume()
        case let .grantsSaved(admin, request, error, extra):
            guard let admin else { return }
            if let error {
                send(admin, ServerMessage.error(request: request, message: "the grant holds until the daemon stops, but the grant store could not be written: \(error)"))
            } else {
                var grants = grantsMessage(at: now)
                grants.effective = extra.effective
                grants.revoked = extra.revoked
                send(admin, ServerMessage.grants(grants).encoded())
            }
        case .holdersChecked(let results):
            holdersChecked(results, at: now)
        case .sharingSaved(let reply):
            if let reply { send(reply.id, reply.bytes) }
        case let .auditRead(admin, page):
            send(admin, ServerMessage.audit(.init(events: page.events, next: page.next?.text)).encoded())
        }
    }

    /// A client that reads nothing for `clientTimeout` while messages wait for it — in our queue or in
    /// the kernel's socket buffer (SIOCOUTQ) — is disconnected. One ioctl per client, every `sweepInterval`,
    /// on the daemon's clock: never in a fix's turn, or when a client is cut would tell a client that may see
    /// nothing when fixes come (docs/SECURITY.md "Timing"). A client is never cut early: its read progress
    /// is dated by the sweep that saw it, after the read; a slower sweep only cuts it later.
    private mutating func sweepStuckClients(now: ContinuousClock.Instant) {
        var stuck: [Int] = []
        // Walked by index, not over `connections.indices`: that collection holds the table, so the first
        // connection changed in place (`isStuck` notes read progress) copied the whole table — every second,
        // at 1000 clients 1.6 MB at the peak (heaptrack), and glibc kept the pages.
        var index = connections.startIndex
        while index != connections.endIndex {
            if connections.values[index].isStuck(now: now, timeout: limits.clientTimeout) { stuck.append(connections.keys[index]) }
            connections.formIndex(after: &index)
        }
        for id in stuck.sorted() { refuse(id, "read nothing for \(DurationText.seconds(limits.clientTimeout)) while messages waited") }
    }

    /// How often the front's poller thread hands the state a `.sweep` (`NativeFront.start`): a second, or a
    /// quarter of `clientTimeout` when that is shorter, so a client is cut at most that much late. A wake-up
    /// of a thread that is there anyway, not a libdispatch timer (which woke two threads and often made
    /// one anew). (`* 0.25`: Duration's integer quotient is generic, unspecialized in the stdlib, and slow.)
    var sweepInterval: Duration { max(min(.seconds(1), limits.clientTimeout * 0.25), .milliseconds(10)) }

}
