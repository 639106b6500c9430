import LocationCore
import LocationPolicy
import LocationWire

/// Requests: the location ones (WATCH, POLL, STATUS) and the client's side of the policy (AUTHORIZE,
/// AUTHORIZATION, FULLACCURACY). Validation order: size → syntax → class → members → authorization.
extension ServerState {
    mutating func handleLine(_ line: [UInt8], from id: Int, at now: Moment) {
        if line.allSatisfy({ $0 == 32 || $0 == 13 || $0 == 9 }) { return }
        connections[id]?.meter.requests += 1
        if let requests = connections[id]?.meter.requests, requests > limits.maxRequestsPerSecond {
            refuse(id, "flooding: more than \(limits.maxRequestsPerSecond) requests in a second")
            return
        }
        let request: Request
        do {
            request = try RequestParser.parse(line)
        } catch {
            bad(id, error)
            return
        }
        switch request {
        case let .watch(enable, minInterval, distanceFilter, satellites):
            if let index = connections.index(forKey: id) { connections.values[index].wantsSatellites = enable && satellites }
            watch(id, enable: enable, minInterval: minInterval, distanceFilter: distanceFilter, satellites: satellites, at: now)
        case let .poll(timeout):
            poll(id, timeout: .seconds(timeout), at: now)
        case .status:
            status(id, at: now)
        case let .authorize(kind, accuracy, name):
            if let name { publisher.setDisplayName(AuditText.name(name), of: id) }
            authorize(id, .authorize(kind, accuracy), request: "AUTHORIZE", at: now)
        case .authorization:
            let state = publisher.authorization(of: id, at: now)
            if let delivery = publisher.announce(id, state, force: true) { deliver([delivery], at: now.wall) }
        case let .fullAccuracy(key):
            authorize(id, .temporaryFullAccuracy(purposeKey: key), request: "FULLACCURACY", at: now)
        case let .share(sharing, forSeconds, discard):
            share(id, sharing: sharing, forSeconds: forSeconds, discard: discard, at: now)
        case .agent, .answer, .grants, .grant, .revoke, .audit:
            admin(request, from: id, at: now)
        }
    }

    /// STATUS: the fix's mode and timing are location data, so a client sees them as precisely and as
    /// late as it may see the location (reduced: 2D or none, as its paced messages said; no fix times);
    /// an admin sees them all. `clients` counts every connection for an admin, the asking user's own for
    /// anyone else: how many other users' programs are connected, and when that changes, is theirs.
    private mutating func status(_ id: Int, at now: Moment) {
        guard let identity = connections[id]?.identity else { return }
        let state = publisher.authorization(of: id, at: now)
        let accuracy: AccuracyAuthorization? = publisher.policy.isAdmin(identity) ? .full
            : (state.status.isAuthorized ? state.accuracy : nil)
        let mode = accuracy.flatMap { publisher.modeShown(to: id, accuracy: $0) }
        // The accuracy each uplink gets now: its section's, capped by the policy (`none`: denied).
        let uplinks = !publisher.policy.isAdmin(identity) ? [] : publisher.uplinks.entries.indices.compactMap { index -> ServerMessage.Status.Uplink? in
            guard var shown = publisher.uplinks.entries[index].statusProvider?() else { return nil }
            shown.accuracy = publisher.uplinkState(index).accuracy?.rawValue ?? "none"
            return shown
        }
        let clients = publisher.policy.isAdmin(identity) ? connections.count : connectionCount(of: identity.uid)
        let you = ClientDescription(pid: Int(identity.pid), uid: Int(identity.uid), user: identity.user,
                                    executable: AuditText.bounded(identity.program), unit: AuditText.bounded(identity.unit ?? identity.userUnit),
                                    identified: identity.strength.description)
        send(id, ServerMessage.status(mode: mode,
                                      clients: clients, receivers: context.receivers.receiverReports(),
                                      fixDetails: accuracy == .full, uplinks: uplinks, you: you))
    }

    /// The client's authorization for a location request; an unauthorized client gets its status, then
    /// an ERROR — never a location — and the refusal is audited (within the user's budget: `PolicyStore.record`).
    private mutating func requireAuthorization(_ id: Int, request: String, at now: Moment) -> AuthorizationState? {
        let state = publisher.authorization(of: id, at: now)
        guard state.status.isAuthorized else {
            audit("decision", id, request: request, status: state.status.rawValue, accuracy: nil, reason: state.reason, at: now.wall)
            if let delivery = publisher.announce(id, state, force: true) { deliver([delivery], at: now.wall) }
            send(id, ServerMessage.error(request: request, message: "not authorized (\(state.status.rawValue)): \(state.reason)"))
            return nil
        }
        return state
    }

    private mutating func watch(_ id: Int, enable: Bool, minInterval: Double, distanceFilter: Double, satellites: Bool,
                                at now: Moment) {
        guard enable else {
            publisher.stopWatching(id)
            send(id, ServerMessage.watch(enable: false, minInterval: minInterval, distanceFilter: distanceFilter))
            return
        }
        guard let state = requireAuthorization(id, request: "WATCH", at: now) else { return }
        send(id, ServerMessage.watch(enable: true, minInterval: minInterval, distanceFilter: distanceFilter, satellites: satellites))
        let out = publisher.startWatching(id, minInterval: .seconds(minInterval), distanceFilter: distanceFilter, state: state, at: now)
        deliver(out, at: now.wall)
    }

    /// POLL: waits for the next fix. A reduced client whose next paced report is not due within the
    /// timeout is told at once when it is, rather than "no fix" after the timeout while there is one; one
    /// whose report is due in time waits until the cadence's window after it (`Publisher.reducedPollWait`).
    private mutating func poll(_ id: Int, timeout: Duration, at now: Moment) {
        var timeout = timeout
        guard let state = requireAuthorization(id, request: "POLL", at: now) else { return }
        guard state.inUse else {
            send(id, ServerMessage.error(request: "POLL", message: "not in use: \(state.reason)"))
            return
        }
        if state.accuracy == .reduced {
            let wait = publisher.reducedReportDue(of: id, at: now)
            if wait > timeout {
                send(id, Self.pacedPollError("reduced accuracy: the next report is due", wait: wait))
                return
            }
            timeout = publisher.reducedPollWait(of: id, at: now)
        }
        guard let poll = publisher.addPoll(id, at: now) else {
            bad(id, RequestError(request: "POLL", message: "too many POLLs waiting (\(PollCounts.perConnection))"))
            return
        }
        effects.append(.schedule(.pollTimeout(client: id, poll: poll, after: timeout), after: timeout))
    }

    /// The ERROR of a reduced client's POLL that gets no report: `prefix`, then when the next report is due ("in
    /// 12 min 3 s", or "now, with the next fix" when it is), that time also in `nextReportIn` (seconds, whole,
    /// rounded up; docs/PROTOCOL.md "POLL").
    /// - Parameters:
    ///   - prefix: what happened, e.g. "reduced accuracy: the next report is due".
    ///   - wait: the time until the client's next report is due (`Publisher.reducedReportDue`).
    static func pacedPollError(_ prefix: String, wait: Duration) -> [UInt8] {
        let seconds = Int(wait.components.seconds) + (wait.components.attoseconds > 0 ? 1 : 0)
        let message = prefix + (seconds > 0 ? " in \(DurationText.minutesAndSeconds(seconds))" : " now, with the next fix")
        return ServerMessage.error(.init(request: "POLL", message: message, nextReportIn: Double(seconds))).encoded()
    }

    /// AUTHORIZE and FULLACCURACY: decide; grant, refuse, or ask the agents.
    mutating func authorize(_ id: Int, _ request: PolicyRequest, request name: String, at now: Moment) {
        guard let subscriber = publisher.subscribers[id] else { return }
        let policy = publisher.policy
        let decision = Policy.decide(request, identity: subscriber.identity, session: subscriber.session, rules: policy.rules,
                                     grants: policy.grants, now: now, userInUse: policy.usersInUse.contains(subscriber.identity.uid))
        // The accuracy asked for is the connection's ceiling from now on (WATCH and POLL included); an
        // invalid request changes nothing.
        if case .invalid = decision {} else { publisher.changeSession(of: id) { $0 = $0.asking(request) } }
        switch decision {
        case .authorized(let state):
            audit("decision", id, request: name, status: state.status.rawValue, accuracy: state.accuracy,
                  reason: state.reason, at: now.wall)
            announce(id, state, at: now.wall)
        case let .grantOnce(accuracy, preapproval):
            let lifetime = policy.rules.defaults.onceLifetime
            let standing = preapproval.map { policy.grants.preapprovals[$0] }.flatMap { $0.standing ? $0 : nil }
            publisher.changeSession(of: id) {
                $0.once = SessionGrant(accuracy: accuracy, at: now, lifetime: lifetime, standing: standing != nil)
            }
            var reason = "one-time grant by \(policy.rules.effective(for: subscriber.identity).source)"
            if let standing {
                // Not used up: it grants each later connection too, until revoked.
                reason = "one-time grant from a standing approval by \(standing.decidedBy ?? "an administrator"), without asking"
            } else if let index = preapproval {
                reason = "one-time grant pre-approved by an administrator"
                changeGrants(reply: nil, request: name) { $0.preapprovals.remove(at: index) }
            }
            if let ends = publisher.subscribers[id]?.session.once?.ends { scheduleOnceCheck(ends, at: now) }
            let state = publisher.authorization(of: id, at: now)
            audit("decision", id, request: name, status: state.status.rawValue, accuracy: state.accuracy,
                  reason: reason, at: now.wall)
            announce(id, state, at: now.wall)
        case let .refuse(status, reason):
            audit("decision", id, request: name, status: status.rawValue, accuracy: nil, reason: reason, at: now.wall)
            send(id, ServerMessage.authorization(status: status, accuracy: nil, reason: reason))
        case .invalid(let message):
            audit("decision", id, request: name, status: nil, accuracy: nil, reason: message, at: now.wall)
            send(id, ServerMessage.error(request: name, message: message))
        case .ask(let question):
            ask(id, question, request: name, at: now)
        }
    }

    /// Tells a client its authorization (always, as the answer to its request).
    mutating func announce(_ id: Int, _ state: AuthorizationState, at wall: Double) {
        if let delivery = publisher.announce(id, state, force: true) { deliver([delivery], at: wall) }
    }

    /// Writes an audit record about client `id`.
    mutating func audit(_ event: String, _ id: Int, request: String?, status: String?, accuracy: AccuracyAuthorization?, reason: String,
                        at wall: Double) {
        guard let subscriber = publisher.subscribers[id] else { return }
        context.store.record(AuditEvent(event: event, identity: subscriber.identity, name: subscriber.displayName,
                                        request: request, status: status, accuracy: accuracy, reason: reason), at: wall)
    }

    /// Changes the grants in memory at once, and has them written off the fan-out path; `reply` (an admin
    /// connection) gets GRANTS — or an ERROR — once they are on disk, with `extra`'s `effective` and
    /// `revoked` added.
    mutating func changeGrants(reply: Int?, request: String, extra: ServerMessage.Grants = ServerMessage.Grants(),
                               _ change: (inout GrantSet) -> Void) {
        publisher.changeGrants(change)
        effects.append(.saveGrants(reply: reply, request: request, extra: extra))
        watchLoginSessionsIfNeeded()
    }

    /// Makes sure the grants' ends are looked at by `ends` (a one-time grant's lifetime ending tells its
    /// client at once, streaming or not). One timer for all of them, set for the earliest end: a timer per
    /// grant lived out the whole `once-lifetime` (1 h by default) after its client had gone, and with
    /// clients coming and going the pending timers grew the daemon by megabytes (Scripts/soak: RSS +23 %
    /// in 5 min).
    mutating func scheduleOnceCheck(_ ends: ContinuousClock.Instant, at now: Moment) {
        if let set = onceCheck, set <= ends { return }
        onceCheck = ends
        effects.append(.schedule(.onceExpiries, after: max(.zero, ends - now.monotonic) + .milliseconds(10)))
    }

    /// The one-time grants whose lifetime has ended are looked at again (their clients told), and the
    /// timer set for the next end.
    mutating func checkOnceExpiries(at now: Moment) {
        onceCheck = nil
        var out: [Delivery] = []
        var next: ContinuousClock.Instant?
        for id in publisher.subscribers.ids.sorted() {
            guard let ends = publisher.subscribers[id]?.session.once?.ends else { continue }
            if ends <= now.monotonic {
                publisher.reevaluate(id, at: now, into: &out)
            } else {
                next = min(next ?? ends, ends)
            }
        }
        deliver(out, at: now.wall)
        if let next { scheduleOnceCheck(next, at: now) }
    }
}

