import LocationCore
import LocationPolicy
import LocationWire

/// Decides, for every fix and every request, what each client gets — and nothing else: no sockets, no
/// files, no clocks of its own (ARCHITECTURE.md "Data flow"). The fronts feed it requests and fixes and
/// turn its `Delivery` values into bytes; one owner (`NativeFront`'s state) keeps it.
///
/// It holds the subscriptions (WATCH and pending POLLs with their filters), the policy in force and
/// each client's cached authorization, the pacing of reduced accuracy, and the current report encoded
/// once per accuracy.
struct Publisher {
    private(set) var subscribers = SubscriberTable()
    private(set) var policy: PolicyState
    private(set) var fudger: LocationFudger
    /// The one reduced cadence of the daemon: every user's reduced clients and the uplinks (`ReducedPacing`).
    private(set) var pacing: ReducedPacing
    private var report = ReportCache()
    /// The latest fix, with or without a position.
    private(set) var latest: Fix?
    /// The POLLs waiting per user, and their ids.
    private var polls = PollCounts()
    /// The uplinks (fleet brokers) subscribed like watching clients (Publisher+Uplink.swift).
    var uplinks = UplinkTable()


    /// How often reduced accuracy may be reported (the rules' `reduced-interval`), converted once: a
    /// `Duration` made from a `Double` costs 128-bit arithmetic, and pacing reads it per client and fix.
    private(set) var reducedInterval: Duration

    /// - Parameter reducedEpoch: where the reduced cadence's grid starts (`ReducedPacing.epoch`): the monotonic
    ///   origin the daemon counts its times from; tests pass their own start.
    init(policy: PolicyState, fudger: LocationFudger, reducedEpoch: ContinuousClock.Instant = .origin) {
        self.policy = policy
        self.fudger = fudger
        pacing = ReducedPacing(epoch: reducedEpoch)
        reducedInterval = .seconds(policy.rules.defaults.reducedInterval)
    }

    // MARK: - Clients

    /// A client connected (identity from the kernel).
    mutating func connect(_ id: Int, identity: ClientIdentity) {
        subscribers.insert(Subscriber(id: id, identity: identity))
    }

    /// A client went away: its one-time grant ends with it.
    mutating func disconnect(_ id: Int) {
        guard let index = subscribers.slot(of: id) else { return }
        dropPolls(index)
        subscribers.remove(id)
    }

    /// Sets the display name a client declared (already escaped and capped).
    mutating func setDisplayName(_ name: String, of id: Int) {
        subscribers[id]?.displayName = name
    }

    /// Changes a client's one-time grant or temporary full accuracy.
    mutating func changeSession(of id: Int, _ change: (inout SessionAuthorization) -> Void) {
        guard var session = subscribers[id]?.session else { return }
        change(&session)
        subscribers[id]?.session = session
    }

    // MARK: - Policy

    /// New rules (config reload), with a new fudger when the grid changed; clients whose state changed
    /// are told, and those that lost their authorization stop streaming.
    mutating func replaceRules(_ rules: PolicyRules, fudger newFudger: LocationFudger?, at now: Moment) -> [Delivery] {
        if let newFudger { fudger = newFudger }
        policy.replaceRules(rules)
        reducedInterval = .seconds(rules.defaults.reducedInterval)
        return reevaluateAll(because: nil, at: now)
    }

    /// Changes the grants in memory (the caller has them written durably).
    mutating func changeGrants(_ change: (inout GrantSet) -> Void) {
        policy.changeGrants(change)
    }

    /// A client's authorization now: computed by the policy once, then cached (`AuthorizationCache`).
    mutating func authorization(of id: Int, at now: Moment) -> AuthorizationState {
        guard let slot = subscribers.slot(of: id) else {
            return AuthorizationState(status: .notDetermined, accuracy: nil, reason: "not connected")
        }
        let profile = subscribers.entries[slot].profile
        if subscribers.entries[slot].cache.holds(generation: policy.generation, at: now), let state = profile.cachedState { return state }
        let state = policy.state(profile.identity, profile.session, at: now)
        let until = policy.nextGrantExpiry(after: now.wall)
        let ends = profile.session.once.flatMap { $0.holds(at: now) ? $0.ends.sinceOrigin : nil }
        profile.cachedState = state
        subscribers[slot: slot].cache = AuthorizationCache(valid: true, accuracy: state.status.isAuthorized ? state.accuracy : nil,
                                                           generation: policy.generation, until: until, onceEnds: ends, auditPending: true)
        return state
    }

    /// An `AUTHORIZATION` delivery when the client's state differs from what it was last told (or `force`).
    mutating func announce(_ id: Int, _ state: AuthorizationState, force: Bool = false) -> Delivery? {
        guard let subscriber = subscribers[id], force || subscriber.announced != state else { return nil }
        subscribers[id]?.announced = state
        return .authorization(to: id, state)
    }

    /// After rules or grants changed: every client whose state changed is told; those that lost their
    /// authorization stop streaming at once.
    /// - Parameter because: the reason told to clients that lose their authorization (e.g. a revoke).
    mutating func reevaluateAll(because: String?, at now: Moment) -> [Delivery] {
        var out: [Delivery] = []
        for id in subscribers.ids.sorted() { reevaluate(id, because: because, at: now, into: &out) }
        return out
    }

    /// One client's authorization looked at again (a one-time grant's lifetime ended, rules changed).
    mutating func reevaluate(_ id: Int, because: String? = nil, at now: Moment, into out: inout [Delivery]) {
        guard let subscriber = subscribers[id] else { return }
        var state = authorization(of: id, at: now)
        if !state.status.isAuthorized {
            if let because { state.reason = because }
            if subscriber.wantsReports {
                endStreaming(id, state, into: &out)
                return
            }
        }
        // A When-In-Use client streaming is told when its user's session comes and goes, asked or not; a watcher
        // that now gets nothing, also why (`STATE`), once per change.
        let told = subscriber.announced != nil || (subscriber.wantsReports && state.status == .authorizedWhenInUse)
        if told, let delivery = announce(id, state) {
            out.append(delivery)
            if subscriber.watching, state.status.isAuthorized, !state.inUse { out.append(.silence(to: id, .notInUse(reason: state.reason))) }
        }
    }

    /// Records whether `uid`'s user has an active login session (`PolicyState.setUser`); true when that changed.
    mutating func setUser(_ uid: UInt32, inUse: Bool) -> Bool { policy.setUser(uid, inUse: inUse) }

    /// A client that is no longer authorized stops streaming, its POLLs are dropped, and it is told.
    private mutating func endStreaming(_ id: Int, _ state: AuthorizationState, into out: inout [Delivery]) {
        guard let index = subscribers.slot(of: id) else { return }
        subscribers[slot: index].watching = false
        dropPolls(index)
        if let delivery = announce(id, state) { out.append(delivery) }
        out.append(.watchEnded(to: id, state))
    }

    // MARK: - Requests

    /// WATCH with `enable` true, for a client already found authorized (`state`): starts streaming with
    /// the filters given, and hands it the latest report at once, or tells it why not (no fix, reduced accuracy
    /// between paced reports, When In Use without an active session) and until when.
    mutating func startWatching(_ id: Int, minInterval: Duration, distanceFilter: Double, state: AuthorizationState,
                                at now: Moment) -> [Delivery] {
        guard let index = subscribers.slot(of: id) else { return [] }
        subscribers[slot: index].watching = true
        subscribers[slot: index].filter = DeliveryFilter(minInterval: minInterval, distanceFilter: distanceFilter)
        subscribers[slot: index].toldFix = nil
        var out: [Delivery] = []
        // When In Use without an active session: watching, but nothing is sent until the session is active; it is
        // told so, whatever the fix (it may know nothing of it).
        guard let accuracy = state.accuracy else {
            if state.status.isAuthorized, !state.inUse { out.append(.silence(to: id, .notInUse(reason: state.reason))) }
            return out
        }
        guard let latest, latest.hasPosition else {
            // Reduced and not due: nothing may be told of the fix, only when the next report is due.
            if !tellFixLost(index, at: now, into: &out), accuracy == .reduced { out.append(pacedSilence(index, at: now)) }
            return out
        }
        guard ensureReport(accuracy, wall: now.wall) else { return out }
        // Reduced between two paced reports: told when the next is due (never "no fix": there is one, or not).
        guard paced(index, accuracy, now: now) else {
            out.append(pacedSilence(index, at: now))
            return out
        }
        let startsSlot = accuracy == .reduced && pacing.startsSlot(report: report.serial, now: now.monotonic, interval: reducedInterval)
        stream(index, accuracy, at: now, into: &out)
        // A reduced report that uses a new slot of the cadence goes to every reduced client, of every user, as a
        // fix's would: given to this one alone, the others would miss the slot's report. The last report again (no
        // fix since) uses no slot and goes to this client alone: the others had it.
        if startsSlot {
            for other in subscribers.indices where other != index && authorizedAccuracy(other, at: now) == .reduced {
                deliverCurrentReport(other, at: now, into: &out)
            }
        }
        return out
    }

    /// WATCH with `enable` false.
    mutating func stopWatching(_ id: Int) {
        subscribers[id]?.watching = false
    }

    /// POLL from an authorized client: it waits for the next fix. Returns the poll's id (for its
    /// timeout), or nil when the connection already has `PollCounts.perConnection` waiting, or its user
    /// `PollCounts.perUser`.
    ///
    /// A reduced client whose report is due while there is no fix is told so as a watcher would be — a notice, which
    /// uses the cadence's slot — now, not when the POLL times out: one dropped first (the client hung up) would be a
    /// free look at the fix, and a second after second of them told the moment it came back (found 2026-12-03 by an
    /// attacker helper as uid nobody, to within the second).
    mutating func addPoll(_ id: Int, at now: Moment) -> Int? {
        guard let slot = subscribers.slot(of: id) else { return nil }
        let subscriber = subscribers.entries[slot]
        guard subscriber.pendingPolls.count < PollCounts.perConnection, let poll = polls.open(uid: subscriber.identity.uid) else { return nil }
        subscribers[slot: slot].pendingPolls.append(poll)
        // Only when due (`recordNotice` checks): a POLL before then waits for the due time, and a notice placed at the
        // moment of the client's choosing would tell the fix's state then (by whether the next report came early).
        if latest?.hasPosition != true, authorizedAccuracy(slot, at: now) == .reduced {
            pacing.recordNotice(now: now.monotonic, interval: reducedInterval)
        }
        return poll
    }

    /// A POLL's timeout passed: true when it was still waiting (the client is told no fix came). To a reduced client
    /// whose report is due, that is a notice, which uses the cadence's slot — with a fix or without: whether a timed-out
    /// POLL counted must not tell the fix's state (a helper attacking the daemon probed it with POLLs shorter than an
    /// epoch, and placed notices at will with staggered ones). A reduced POLL waits until `ReducedPacing.window`
    /// after the report is due (`reducedPollWait`), so a fix's next epoch answers it and it times out only without one.
    mutating func expirePoll(_ poll: Int, of id: Int, at now: Moment) -> Bool {
        guard let slot = subscribers.slot(of: id), let index = subscribers.entries[slot].pendingPolls.firstIndex(of: poll) else { return false }
        subscribers[slot: slot].pendingPolls.remove(at: index)
        polls.close(1, of: subscribers.entries[slot].identity.uid)
        if authorizedAccuracy(slot, at: now) == .reduced, pacing.isDue(now: now.monotonic, interval: reducedInterval) {
            pacing.recordNotice(now: now.monotonic, interval: reducedInterval)
        }
        return true
    }

    /// Drops every POLL the client at `index` has waiting.
    private mutating func dropPolls(_ index: Int) {
        let count = subscribers.entries[index].pendingPolls.count
        guard count > 0 else { return }
        subscribers[slot: index].pendingPolls.removeAll()
        polls.close(count, of: subscribers.entries[index].identity.uid)
    }

    // MARK: - Fixes

    /// The report of the last `publish` (or `startWatching`) at `accuracy`: a `TPV` line, or empty when
    /// there is none at that accuracy (`ensureReport` said so). Encoded once per fix, on the first call:
    /// a fix only gpsd-front clients see (they get their own shapes of it) is never encoded here.
    mutating func reportBytes(_ accuracy: AccuracyAuthorization) -> [UInt8] { report.bytes(accuracy, latest: latest) }

    /// The fix the last `publish` (or `startWatching`) reported at `accuracy`: the latest fix at full accuracy,
    /// the fudger's reduced fix at reduced; nil when it has not been reduced (no reduced client was due).
    /// For fronts that write their own shapes of it (the gpsd front's TPV, SKY and NMEA).
    func reportFix(_ accuracy: AccuracyAuthorization) -> Fix? {
        accuracy == .full ? latest : report.reducedFix
    }

    /// The full-accuracy report followed by the fix's `SKY` line (docs/PROTOCOL.md "SKY"), for watchers that
    /// asked for satellites; just the report when the fix lists no satellite. Encoded once per fix.
    mutating func fullReportWithSatellites() -> [UInt8] { report.fullWithSatellites(latest: latest) }

    /// Counts the fixes with a position published: a front's own encoding of `reportFix` holds while it is the same.
    var reportSerial: UInt64 { report.serial }

    /// A fix from the receivers (a no-fix tells streaming clients the fix was lost): what each client gets.
    ///
    /// The per-client loop of the daemon (1000 clients × 10 Hz): the report is encoded once per accuracy,
    /// and a client is reached in place by its slot in the table (no hashing, no copy of it).
    mutating func publish(_ fix: Fix, at now: Moment, into out: inout [Delivery]) {
        latest = fix
        guard fix.hasPosition else {
            // Due, and a reduced client wants a report: the slot is a notice — every reduced watcher not told yet is
            // told now, and the fix's return shows no sooner than the next slot, whoever watches or polls.
            let due = pacing.isDue(now: now.monotonic, interval: reducedInterval)
            var noticed = false
            for index in subscribers.indices where subscribers.entries[index].wantsReports {
                if subscribers.entries[index].watching {
                    if tellNoFix(index, due: due, at: now, into: &out) { noticed = true }
                } else if due, authorizedAccuracy(index, at: now) == .reduced {
                    noticed = true
                }
            }
            if noticed { pacing.recordNotice(now: now.monotonic, interval: reducedInterval) }
            return
        }
        report.next()
        for index in subscribers.indices { deliverCurrentReport(index, at: now, into: &out) }
    }

    /// The current report to the client at `index`, as far as its authorization, pacing and filters let it:
    /// its POLLs answered, and streamed to it when it watches; a client no longer authorized stops streaming.
    private mutating func deliverCurrentReport(_ index: Int, at now: Moment, into out: inout [Delivery]) {
        guard subscribers.entries[index].wantsReports else { return }
        guard let accuracy = authorizedAccuracy(index, at: now) else {
            let state = authorization(of: subscribers.entries[index].id, at: now)
            // When In Use without an active session: nothing now, the stream resumes with the session.
            if state.status.isAuthorized, !state.inUse { return }
            endStreaming(subscribers.entries[index].id, state, into: &out)
            return
        }
        guard ensureReport(accuracy, wall: now.wall), paced(index, accuracy, now: now) else { return }
        if !subscribers.entries[index].pendingPolls.isEmpty {
            dropPolls(index)
            out.append(.pollReply(to: subscribers.entries[index].id, accuracy))
            noteDelivery(index, accuracy, at: now, into: &out)
        }
        if subscribers.entries[index].watching { stream(index, accuracy, at: now, into: &out) }
    }

    /// The accuracy the client at `index` may see now (its cached authorization); nil when none.
    private mutating func authorizedAccuracy(_ index: Int, at now: Moment) -> AccuracyAuthorization? {
        // Read in place: a copy of the cache would retain its state's strings for every client and fix.
        if subscribers.entries[index].cache.holds(generation: policy.generation, at: now) {
            return subscribers.entries[index].cache.accuracy
        }
        _ = authorization(of: subscribers.entries[index].id, at: now)
        return subscribers.entries[index].cache.accuracy
    }

    /// Whether reduced-accuracy pacing lets the current report go to the client at `index` (full: always).
    private func paced(_ index: Int, _ accuracy: AccuracyAuthorization, now: Moment) -> Bool {
        accuracy == .full || pacing.allows(report: report.serial, now: now.monotonic, interval: reducedInterval)
    }

    /// The current report to a streaming client, if its filters let it through. Reduced reports go out
    /// on the pacing cadence alone: a filter would hold a report back until the reduced position moved,
    /// and its time would then tell when the true position crossed a grid line.
    private mutating func stream(_ index: Int, _ accuracy: AccuracyAuthorization, at now: Moment,
                                 into out: inout [Delivery]) {
        if accuracy == .full {
            guard subscribers[slot: index].filter.admit(report.fullPosition, now: now.sinceOrigin) else { return }
        }
        if subscribers.entries[index].toldFix == false { tellFix(index, true, into: &out) }
        subscribers[slot: index].toldFix = true
        out.append(.report(to: subscribers.entries[index].id, accuracy))
        noteDelivery(index, accuracy, at: now, into: &out)
        // After each paced report, when the next is due: once a slot, not per fix.
        if accuracy == .reduced { out.append(pacedSilence(index, at: now)) }
    }


    /// Paces reduced accuracy, and audits the first delivery under each authorization.
    private mutating func noteDelivery(_ index: Int, _ accuracy: AccuracyAuthorization, at now: Moment,
                                       into out: inout [Delivery]) {
        if accuracy == .reduced {
            pacing.record(report: report.serial, now: now.monotonic, interval: reducedInterval)
        }
        guard subscribers.entries[index].cache.auditPending else { return }
        subscribers[slot: index].cache.auditPending = false
        let state = authorization(of: subscribers.entries[index].id, at: now)
        let subscriber = subscribers.entries[index]
        guard subscriber.auditedDelivery != state else { return }
        subscribers[slot: index].auditedDelivery = state
        out.append(.audit(AuditEvent(event: "delivery", identity: subscriber.identity, name: subscriber.displayName, request: nil,
                                     status: state.status.rawValue, accuracy: state.accuracy,
                                     reason: "first location under this grant")))
    }

    /// The fix was lost: a full-accuracy client is told at once; a reduced one when the cadence's next report is due
    /// (`due`: when a missing report would tell it); a client sent nothing now (When In Use with no active session, or
    /// no longer authorized) not at all (a helper attacking the daemon learned when the receiver lost its fix).
    /// Returns whether the client is reduced and due — the slot is then a notice (`ReducedPacing.recordNotice`),
    /// told or not (one told already must not leave the slot free for the fix's return).
    /// A reduced client is told when the fix's return may show: the notice is recorded first, and the next slot is then
    /// `nextReportIn` away.
    private mutating func tellFixLost(_ index: Int, due: Bool? = nil, at now: Moment, into out: inout [Delivery]) -> Bool {
        guard let accuracy = authorizedAccuracy(index, at: now) else { return false }
        let due = accuracy == .reduced && (due ?? pacing.isDue(now: now.monotonic, interval: reducedInterval))
        if accuracy == .reduced, !due { return false }
        guard subscribers.entries[index].toldFix != false else { return due }
        guard accuracy == .reduced else {
            tellFix(index, false, into: &out)
            return due
        }
        pacing.recordNotice(now: now.monotonic, interval: reducedInterval)
        subscribers[slot: index].toldFix = false
        out.append(.silence(to: subscribers.entries[index].id, .noFix(nextReportIn: pacing.timeUntilDue(now: now.monotonic, interval: reducedInterval))))
        return due
    }

    /// A no-fix was published (an epoch without a position, or the fix gone stale): a full-accuracy watcher gets it
    /// (the receiver's time and satellites, which it may see), `lost` with the first; others only `tellFixLost`.
    private mutating func tellNoFix(_ index: Int, due: Bool, at now: Moment, into out: inout [Delivery]) -> Bool {
        guard authorizedAccuracy(index, at: now) == .full else { return tellFixLost(index, due: due, at: now, into: &out) }
        let lost = subscribers.entries[index].toldFix != false
        subscribers[slot: index].toldFix = false
        out.append(.noFixEpoch(to: subscribers.entries[index].id, lost: lost))
        return false
    }

    /// STATE to the client at `index` when it differs from what it was last told.
    private mutating func tellFix(_ index: Int, _ fix: Bool, into out: inout [Delivery]) {
        guard subscribers.entries[index].toldFix != fix else { return }
        subscribers[slot: index].toldFix = fix
        out.append(.fixState(to: subscribers.entries[index].id, fix: fix))
    }

    /// Records that the current report went out at reduced accuracy at `now` (to an uplink: clients through `noteDelivery`).
    mutating func recordReducedReport(at now: Moment) {
        pacing.record(report: report.serial, now: now.monotonic, interval: reducedInterval)
    }

    /// Readies the latest fix at `accuracy` (`ReportCache.ready`); false when there is nothing to send.
    mutating func ensureReport(_ accuracy: AccuracyAuthorization, wall: Double) -> Bool {
        report.ready(accuracy, latest: latest, fudger: &fudger, wall: wall)
    }
}
