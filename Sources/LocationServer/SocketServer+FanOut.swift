import LocationCore
import LocationPolicy
import LocationPosix
import LocationWire

/// The fan-out: each fix to every client the policy lets see it, at the accuracy it may see. This is
/// the per-client loop of the daemon (1000 clients × 10 Hz), so the loop body touches plain values
/// only: the report is encoded once per accuracy, a client's authorization comes from its cache as an
/// accuracy (no `AuthorizationState` with its strings), and the position for the distance filter is a
/// pair of numbers, not a copy of the `Fix`.
extension SocketServer {
    func fanOut(_ fix: Fix) {
        latest = fix
        guard !stopped else { return }
        let now = monotonicNow()
        let wall = wallClockSeconds()
        if !fix.hasPosition {
            for session in sessions.values where session.subscribed { tellState(session, fix: false) }
            return
        }
        reportSerial &+= 1
        let position = Self.position(of: fix)
        var full: [UInt8] = []
        var reduced: [UInt8] = []
        var reducedPosition: (latitude: Double, longitude: Double)? = nil
        var reducedEncoded = false
        for session in sessions.values where session.subscribed || !session.polls.isEmpty {
            guard let accuracy = authorizedAccuracy(of: session, now: wall) else {
                revokeStreaming(session, authorization(of: session, now: wall))
                continue
            }
            if accuracy == .full {
                if full.isEmpty { encoder.appendTPV(fix, accuracy: "full", to: &full) }
                deliver(full, at: position, to: session, accuracy: .full, now: now)
            } else {
                if !reducedEncoded {
                    reducedEncoded = true
                    if let r = policy.fudger.reduce(fix, at: wall) {
                        encoder.appendTPV(r, accuracy: "reduced", to: &reduced)
                        reducedPosition = Self.position(of: r)
                    }
                }
                guard !reduced.isEmpty, reducedReportAllowed(to: session, now: now) else { continue }
                deliver(reduced, at: reducedPosition, to: session, accuracy: .reduced, now: now)
            }
        }
    }

    /// One fix's report to one authorized client: it answers the client's POLLs, and goes to it as a
    /// subscriber if its filters let it through.
    private func deliver(_ tpv: [UInt8], at position: (latitude: Double, longitude: Double)?, to session: ClientSession,
                         accuracy: AccuracyAuthorization, now: Double) {
        if !session.polls.isEmpty {
            for (_, item) in session.polls { item.cancel() }
            session.polls.removeAll()
            send(session, ServerMessage.poll(tpv: tpv))
            noteDelivery(session, accuracy, now: now)
        }
        if session.subscribed { stream(tpv, at: position, to: session, accuracy: accuracy, now: now) }
    }

    /// Sends a location report to a subscriber if its filters let it through.
    func stream(_ tpv: [UInt8], at position: (latitude: Double, longitude: Double)?, to session: ClientSession,
                accuracy: AccuracyAuthorization, now: Double) {
        guard takesDelivery(at: position, session, accuracy: accuracy, now: now) else { return }
        send(session, tpv, isLocation: true)
    }

    /// Whether a subscriber's filters (minInterval, distanceFilter from the last delivered report) let a
    /// report at `position` (degrees) through now; if they do, it counts as delivered (and STATE tells a
    /// client that had been told of a lost fix that it is back).
    func takesDelivery(at position: (latitude: Double, longitude: Double)?, _ session: ClientSession,
                       accuracy: AccuracyAuthorization, now: Double) -> Bool {
        if now - session.lastDeliveredAt < session.minInterval { return false }
        if session.distanceFilter > 0 {
            if let last = session.lastDeliveredPosition, let position,
               Geodesy.distance(latitude1: last.latitude, longitude1: last.longitude,
                                latitude2: position.latitude, longitude2: position.longitude) < session.distanceFilter {
                return false
            }
            if let position { session.lastDeliveredPosition = position }
        }
        if session.toldFix == false { tellState(session, fix: true) }
        session.toldFix = true
        session.lastDeliveredAt = now
        noteDelivery(session, accuracy, now: now)
        return true
    }

    /// Paces reduced accuracy, and audits the first delivery under each authorization (looked at only
    /// after the client's cached authorization was computed anew).
    func noteDelivery(_ session: ClientSession, _ accuracy: AccuracyAuthorization, now: Double) {
        if accuracy == .reduced { noteReducedReport(to: session, now: now) }
        guard session.deliveryAuditPending else { return }
        session.deliveryAuditPending = false
        let state = authorization(of: session, now: wallClockSeconds())
        if session.auditedDelivery != state {
            session.auditedDelivery = state
            policy.record("delivery", identity: session.identity, name: session.displayName, request: nil,
                          status: state.status.rawValue, accuracy: state.accuracy?.rawValue, reason: "first location under this grant")
        }
    }

    /// The client's authorization now: computed by the policy once, then kept until the rules or grants
    /// change (`PolicyEngine.generation`), the session's own grants change, or a grant expires — so that
    /// the fan-out does not evaluate rules and grants for every client on every fix.
    func authorization(of session: ClientSession, now: Double) -> AuthorizationState {
        if cacheHolds(for: session, now: now), let cached = session.cachedAuthorization { return cached }
        let state = policy.state(session.identity, session.policy, now: now)
        var until = policy.nextGrantExpiry(after: now)
        if let once = session.policy.once, once.expires > now { until = min(until, once.expires) }
        session.cachedAuthorization = state
        session.cachedAccuracy = state.status.isAuthorized ? state.accuracy : nil
        session.cachedGeneration = policy.generation
        session.cachedUntil = until
        session.cacheValid = true
        session.deliveryAuditPending = true
        return state
    }

    /// The accuracy the client may see now, nil when it may see nothing (`authorization(of:now:)`, without
    /// copying the state).
    func authorizedAccuracy(of session: ClientSession, now: Double) -> AccuracyAuthorization? {
        if !cacheHolds(for: session, now: now) { _ = authorization(of: session, now: now) }
        return session.cachedAccuracy
    }

    /// Whether the client's cached authorization still holds at `now` (wall clock).
    private func cacheHolds(for session: ClientSession, now: Double) -> Bool {
        session.cacheValid && session.cachedGeneration == policy.generation && now < session.cachedUntil
    }

    /// Whether the latest fix's reduced report may go to `session` now: one report per reduced-interval
    /// per client — the user and program, not the connection, so that reconnecting or connecting several
    /// times gets no more (a report a second would show when the client crosses a grid line) — and the
    /// same report to each of its connections.
    func reducedReportAllowed(to session: ClientSession, now: Double) -> Bool {
        guard let last = reducedPacing[session.pacingKey] else { return true }
        return last.report == reportSerial || now - last.at >= policy.rules.defaults.reducedInterval
    }

    /// Records that the latest fix's reduced report went to `session`.
    func noteReducedReport(to session: ClientSession, now: Double) {
        if reducedPacing[session.pacingKey]?.report == reportSerial { return }
        let interval = policy.rules.defaults.reducedInterval
        if reducedPacing.count >= 4096 { reducedPacing = reducedPacing.filter { now - $0.value.at < interval } }
        reducedPacing[session.pacingKey] = (now, reportSerial)
    }

    static func position(of fix: Fix) -> (latitude: Double, longitude: Double)? {
        guard let latitude = fix.latitude, let longitude = fix.longitude else { return nil }
        return (latitude, longitude)
    }
}
