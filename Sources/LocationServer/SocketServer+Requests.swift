import Dispatch
import LocationCore
import LocationPolicy
import LocationPosix
import LocationWire

/// Requests: the location ones (WATCH, POLL, STATUS) and the client's side of the policy (AUTHORIZE,
/// AUTHORIZATION, FULLACCURACY). Validation order: size → syntax → class → members → authorization.
extension SocketServer {
    func handleLine(_ line: [UInt8], _ session: ClientSession, now: Double) {
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
            watch(session, enable: enable, minInterval: minInterval, distanceFilter: distanceFilter, now: now)
        case let .poll(timeout):
            poll(session, timeout: timeout)
        case .status:
            // The fix's mode and timing are location data: a client sees them as precisely as it may see
            // the location (reduced: a 2D position, no fix times); an admin sees them all.
            let mode = latest?.mode ?? .noFix
            let accuracy: AccuracyAuthorization? = policy.isAdmin(session.identity) ? .full
                : authorizedAccuracy(of: session, now: wallClockSeconds())
            send(session, ServerMessage.status(mode: accuracy.map { $0 == .full ? mode : min(mode, .twoDimensional) },
                                                clients: sessions.count, receivers: receivers.receiverReports(),
                                                fixDetails: accuracy == .full))
        case let .authorize(kind, accuracy, name):
            if let name { session.displayName = String(DisplayText.escaped(String(name.prefix(200)))) }
            authorize(session, .authorize(kind, accuracy),
                      request: "AUTHORIZE")
        case .authorization:
            announce(session, authorization(of: session, now: wallClockSeconds()), force: true)
        case let .fullAccuracy(key):
            authorize(session, .temporaryFullAccuracy(purposeKey: key), request: "FULLACCURACY")
        case .agent, .answer, .grants, .grant, .revoke, .audit:
            admin(request, session)
        }
    }

    /// Refusals the audit log records per user and minute; the rest are counted, and the next recorded
    /// refusal says how many were left out. The log is bounded (`GrantStore`), and a user repeating a
    /// refused WATCH could otherwise push every earlier record — who saw the location — out of it.
    static let auditedRefusalsPerMinute = 20

    /// The reason to record for this refusal, or nil when the user's budget for the minute is spent.
    private func refusalToAudit(_ session: ClientSession, reason: String) -> String? {
        let now = monotonicNow()
        let uid = session.identity.uid
        var entry = refusalAudit[uid] ?? (windowStart: now, recorded: 0, omitted: 0)
        var reason = reason
        if now - entry.windowStart >= 60 {
            if entry.omitted > 0 { reason += " (and \(entry.omitted) more refusals of uid \(uid) in the minute before, not recorded)" }
            entry = (windowStart: now, recorded: 0, omitted: 0)
        }
        defer {
            if refusalAudit.count >= 4096 { refusalAudit = refusalAudit.filter { now - $0.value.windowStart < 60 } }
            refusalAudit[uid] = entry
        }
        guard entry.recorded < Self.auditedRefusalsPerMinute else {
            entry.omitted += 1
            return nil
        }
        entry.recorded += 1
        return reason
    }

    /// Refuses location to an unauthorized client: its status, then an ERROR; never a location.
    private func requireAuthorization(_ session: ClientSession, request: String) -> AuthorizationState? {
        let state = authorization(of: session, now: wallClockSeconds())
        guard state.status.isAuthorized else {
            if let reason = refusalToAudit(session, reason: state.reason) {
                policy.record("decision", identity: session.identity, name: session.displayName, request: request,
                              status: state.status.rawValue, accuracy: nil, reason: reason)
            }
            announce(session, state, force: true)
            send(session, ServerMessage.error(request: request, message: "not authorized (\(state.status.rawValue)): \(state.reason)"))
            return nil
        }
        return state
    }

    private func watch(_ session: ClientSession, enable: Bool, minInterval: Double, distanceFilter: Double, now: Double) {
        guard enable else {
            session.subscribed = false
            send(session, ServerMessage.watch(enable: false, minInterval: minInterval, distanceFilter: distanceFilter))
            return
        }
        guard let state = requireAuthorization(session, request: "WATCH") else { return }
        session.subscribed = true
        session.minInterval = minInterval
        session.distanceFilter = distanceFilter
        session.lastDeliveredPosition = nil
        session.lastDeliveredAt = -Double.infinity
        session.toldFix = nil
        send(session, ServerMessage.watch(enable: true, minInterval: minInterval, distanceFilter: distanceFilter))
        if let latest, latest.hasPosition {
            if state.accuracy == .full {
                var bytes: [UInt8] = []
                encoder.appendTPV(latest, accuracy: "full", to: &bytes)
                stream(bytes, at: Self.position(of: latest), to: session, accuracy: .full, now: now)
            } else if let reduced = policy.fudger.reduce(latest, at: wallClockSeconds()), reducedReportAllowed(to: session, now: now) {
                var bytes: [UInt8] = []
                encoder.appendTPV(reduced, accuracy: "reduced", to: &bytes)
                stream(bytes, at: Self.position(of: reduced), to: session, accuracy: .reduced, now: now)
            }
        } else {
            tellState(session, fix: false)
        }
    }

    private func poll(_ session: ClientSession, timeout: Double) {
        guard requireAuthorization(session, request: "POLL") != nil else { return }
        let id = session.nextPoll
        session.nextPoll += 1
        let client = session.id
        let item = DispatchWorkItem { [weak self] in
            guard let self, let session = self.sessions[client], session.polls.removeValue(forKey: id) != nil else { return }
            self.send(session, ServerMessage.error(request: "POLL", message: "no fix within \(Self.seconds(timeout))"))
        }
        session.polls[id] = item
        queue.asyncAfter(deadline: .now() + timeout, execute: item)
    }

    /// AUTHORIZE and FULLACCURACY: decide; grant, refuse, or ask the agents.
    private func authorize(_ session: ClientSession, _ request: PolicyRequest, request name: String) {
        let wall = wallClockSeconds()
        let decision = Policy.decide(request, identity: session.identity, session: session.policy, rules: policy.rules,
                                     grants: policy.store.grants, now: wall)
        switch decision {
        case .authorized(let state):
            policy.record("decision", identity: session.identity, name: session.displayName, request: name,
                          status: state.status.rawValue, accuracy: state.accuracy?.rawValue, reason: state.reason)
            announce(session, state, force: true)
        case let .grantOnce(accuracy, preapproval):
            session.policy.once = SessionGrant(accuracy: accuracy, granted: wall, expires: wall + policy.rules.defaults.onceLifetime)
            var reason = "one-time grant by \(policy.rules.effective(for: session.identity).source)"
            if let index = preapproval {
                reason = "one-time grant pre-approved by an administrator"
                persist { $0.preapprovals.remove(at: index) }
            }
            scheduleOnceExpiry(session)
            let state = authorization(of: session, now: wall)
            policy.record("decision", identity: session.identity, name: session.displayName, request: name,
                          status: state.status.rawValue, accuracy: state.accuracy?.rawValue, reason: reason)
            announce(session, state, force: true)
        case let .refuse(status, reason):
            policy.record("decision", identity: session.identity, name: session.displayName, request: name,
                          status: status.rawValue, accuracy: nil, reason: reason)
            send(session, ServerMessage.authorization(status: status.rawValue, accuracy: nil, reason: reason))
        case .invalid(let message):
            policy.record("decision", identity: session.identity, name: session.displayName, request: name,
                          status: nil, accuracy: nil, reason: message)
            send(session, ServerMessage.error(request: name, message: message))
        case .ask(let question):
            ask(session, question, request: name)
        }
    }

    /// A one-time grant also ends after `once-lifetime`: tell the client when it does.
    private func scheduleOnceExpiry(_ session: ClientSession) {
        guard let once = session.policy.once else { return }
        let delay = max(0, once.expires - wallClockSeconds()) + 0.01
        let client = session.id
        let item = DispatchWorkItem { [weak self] in
            guard let self, let session = self.sessions[client] else { return }
            let state = self.authorization(of: session, now: wallClockSeconds())
            if !state.status.isAuthorized { self.revokeStreaming(session, state); self.announce(session, state) }
        }
        queue.asyncAfter(deadline: .now() + delay, execute: item)
    }

    /// Writes the grant store; a failure is logged (the decision still holds in memory until restart).
    func persist(_ change: (inout GrantSet) -> Void) {
        do {
            try policy.updateGrants(change)
        } catch {
            log.error("cannot write the grant store", ["path": policy.store.path, "errno": error.description])
        }
    }

    // MARK: - Asking agents

    private func ask(_ session: ClientSession, _ question: AgentQuestion, request: String) {
        guard !agents.isEmpty else {
            let reason = "no agent is running to ask"
            policy.record("decision", identity: session.identity, name: session.displayName, request: request,
                          status: AuthorizationStatus.denied.rawValue, accuracy: nil, reason: reason)
            send(session, ServerMessage.authorization(status: AuthorizationStatus.denied.rawValue, accuracy: nil, reason: reason))
            return
        }
        let id = nextAsk
        nextAsk += 1
        let timeout = policy.rules.defaults.askTimeout
        let item = DispatchWorkItem { [weak self] in
            guard let self, let pending = self.asks.removeValue(forKey: id) else { return }
            let reason = "no answer from an agent within \(Self.seconds(timeout))"
            self.policy.record("decision", identity: pending.session.identity, name: pending.session.displayName, request: request,
                               status: AuthorizationStatus.denied.rawValue, accuracy: nil, reason: reason)
            self.send(pending.session, ServerMessage.authorization(status: AuthorizationStatus.denied.rawValue, accuracy: nil, reason: reason))
            self.tellAgents(ServerMessage.object("ANSWERED", members: self.answeredMembers(id, "timeout", by: "nobody")))
        }
        asks[id] = PendingAsk(id: id, session: session, question: question, request: request, timeout: item)
        queue.asyncAfter(deadline: .now() + timeout, execute: item)
        var m = JSONMembers()
        m.integer("id", id)
        var client = JSONMembers()
        client.integer("pid", Int(session.identity.pid))
        client.integer("uid", Int(session.identity.uid))
        client.string("user", session.identity.user)
        client.string("exe", session.identity.executable)
        client.string("unit", session.identity.unit)
        client.string("name", session.displayName)
        m.object("client", client)
        switch question.subject {
        case .authorization(let kind): m.string("request", kind.rawValue)
        case .temporaryFullAccuracy(let key):
            m.string("request", "temporaryFullAccuracy")
            m.string("purposeKey", key)
        }
        m.string("accuracy", question.accuracy.rawValue)
        m.string("purpose", question.purpose)
        m.number("timeout", timeout)
        tellAgents(ServerMessage.object("ASK", members: m.bytes))
    }

    func tellAgents(_ message: [UInt8], except: ClientSession? = nil) {
        for agent in agents.values where agent !== except { send(agent, message) }
    }

    func answeredMembers(_ id: Int, _ answer: String, by: String) -> [UInt8] {
        var m = JSONMembers()
        m.integer("id", id)
        m.string("answer", answer)
        m.string("by", by)
        return m.bytes
    }
}
