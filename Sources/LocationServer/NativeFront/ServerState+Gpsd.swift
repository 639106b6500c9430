import LocationCore
import LocationPolicy
import LocationWire

/// The gpsd front (ARCHITECTURE.md "gpsd front", docs/GPSD.md): a gpsd client's reads go to its
/// `GpsdConversation`; what it may see is the Publisher's decision, exactly as on the native front. A gpsd
/// client cannot ask (no AUTHORIZE): its rule decides, and under `ask` the agents are asked on its behalf
/// when it starts watching or polls. Until then, and whenever it may see nothing, it gets `mode` 1 TPVs —
/// never a position, a time of fix, a satellite or an NMEA sentence.
extension ServerState {
    /// One read from gpsd client `id` (gpsd reads each read as a whole: requests need not end in a newline).
    mutating func gpsdRead(_ input: [UInt8], from id: Int, at now: Moment) {
        guard var session = connections[id]?.gpsd else { return }
        // Every request counts, not every read: one read of thousands of `?DEVICES;` made as many answers
        // (an attacker's 60 such connections held the daemon 1.3 s at a time). A request starts with '?', so
        // their number is at most that of the '?' bytes, counted before any is answered.
        var asked = 0
        for byte in input where byte == UInt8(ascii: "?") { asked += 1 }
        connections[id]?.meter.requests += max(1, asked)
        if let requests = connections[id]?.meter.requests, requests > limits.maxRequestsPerSecond {
            refuse(id, "flooding: more than \(limits.maxRequestsPerSecond) requests in a second")
            return
        }
        // The NMEA socket asks nothing and is answered nothing: what it sends is read and dropped.
        guard !session.isNMEASocket else { return }
        // Any holder of a TCP connection may write requests: each is a reason to look at the holders again.
        checkHolders()
        let reports = context.receivers.receiverReports()
        // The receivers' state (which one runs, since when, whether it sends) only to a client that may see
        // the full location now, as STATUS on the native front: it tells when fixes come and go.
        let authorization = publisher.authorization(of: id, at: now)
        let seesState = authorization.status.isAuthorized && authorization.inUse && authorization.accuracy == .full
        let devices = GpsdFrontState.devices(reports, withState: seesState)
        for r in reports { gpsdFront.setDevicePath(of: r) }
        var reply = session.conversation.receive(input, devices: devices)
        connections[id]?.gpsd?.conversation = session.conversation
        if !reply.pollOffsets.isEmpty {
            // As gpsd 3.22: a client not watching (`?WATCH={"enable":true}`, json or not) polls nothing — `active`
            // counts the devices it watches — however much it may see.
            let watching = session.conversation.policy.enable
            let (tpv, sky) = watching ? gpsdPollReports(id, session: session, at: now) : ([], [])
            let active = seesState && watching ? reports.filter { $0.state == "connected" }.count : 0
            var poll: [UInt8] = []
            GpsdResponses.appendPoll(time: UTCTime(unixSeconds: now.wall), active: active, tpv: tpv, sky: sky, to: &poll)
            // The same answer at each `?POLL;`'s place, the reply built once in order (inserting each into the
            // reply moved all that followed, per poll: hundreds of polls in one read cost an attacker nothing).
            var merged: [UInt8] = []
            merged.reserveCapacity(reply.bytes.count + poll.count * reply.pollOffsets.count)
            var start = 0
            for offset in reply.pollOffsets {
                merged += reply.bytes[start..<offset]
                merged += poll
                start = offset
            }
            merged += reply.bytes[start...]
            reply.bytes = merged
        }
        if !reply.bytes.isEmpty { send(id, reply.bytes, gpsd: true) }
        if reply.stoppedWatching {
            publisher.stopWatching(id)
            gpsdFront.blind.remove(id)
        }
        if reply.startedWatching {
            gpsdStartWatching(id, request: "WATCH", at: now)
        } else if !reply.pollOffsets.isEmpty, !session.conversation.policy.enable {
            gpsdAskIfUndetermined(id, request: "POLL", at: now)
        }
    }

    /// A client of the NMEA socket (GeoClue) was admitted: it watches in `nmea` mode from now on, as a gpsd
    /// client after `?WATCH={"enable":true,"nmea":true}` — its rule decides, or under `ask` the agents are
    /// asked on its behalf now. Until allowed it gets nothing at all (no sentence without a fix it may see).
    mutating func nmeaSocketConnected(_ id: Int, at now: Moment) {
        gpsdStartWatching(id, request: "NMEA", at: now)
    }

    /// What `?POLL;` answers a watching client with: the last report it was sent (or, none yet but authorized
    /// at full accuracy, the latest fix); nothing while it may see nothing.
    private mutating func gpsdPollReports(_ id: Int, session: GpsdSession, at now: Moment) -> (tpv: [[UInt8]], sky: [[UInt8]]) {
        let state = publisher.authorization(of: id, at: now)
        guard state.status.isAuthorized, state.inUse else { return ([], []) }
        if !session.lastTPV.isEmpty { return ([session.lastTPV], session.lastSKY.isEmpty ? [] : [session.lastSKY]) }
        guard state.accuracy == .full, let fix = publisher.reportFix(.full) else { return ([], []) }
        refreshDevicePaths()
        guard fix.hasPosition else {
            // No fix: the receiver's last no-fix epoch, as gpsd answers with its last TPV (nothing after the daemon's own).
            guard !GpsdFrontState.isAnnounced(fix) else { return ([], []) }
            let shapes = gpsdFront.noFixShapes(of: fix, device: gpsdDefaultDevice(seesState: true))
            return ([shapes.tpv], shapes.sky.isEmpty ? [] : [shapes.sky])
        }
        let shapes = gpsdFront.shapes(of: fix, accuracy: .full, serial: publisher.reportSerial)
        return ([shapes.tpv], [shapes.sky])
    }

    /// The client turned watching on: streams if the policy lets it see the location; else it watches
    /// blind (mode 1 TPVs), and the agents are asked on its behalf when its rule says `ask`.
    private mutating func gpsdStartWatching(_ id: Int, request: String, at now: Moment) {
        let state = publisher.authorization(of: id, at: now)
        if state.status.isAuthorized {
            gpsdStream(id, state, at: now)
            // When In Use without an active session: gpsd's "no fix" shape until the session is active.
            if !state.inUse { gpsdWatchBlind(id) }
            return
        }
        gpsdWatchBlind(id)
        gpsdTell(id, gpsdFront.noFixTPV(device: gpsdDefaultDevice(seesState: false)))
        gpsdAskIfUndetermined(id, request: request, at: now)
        // Record what it was "told" (nothing reaches it): a later change — a reload, a grant — then comes
        // back as an `authorization` delivery, which starts its stream.
        if connections[id] != nil { _ = publisher.announce(id, publisher.authorization(of: id, at: now), force: true) }
    }

    /// Not decided yet: decide as for `AUTHORIZE` (a one-time authorization at the accuracy its rule
    /// allows): the rule grants, refuses, or the agents are asked. The outcome comes back as an
    /// `authorization` delivery (`gpsdDeliver`).
    private mutating func gpsdAskIfUndetermined(_ id: Int, request: String, at now: Moment) {
        guard publisher.authorization(of: id, at: now).status == .notDetermined else { return }
        guard let identity = publisher.subscribers[id]?.identity else { return }
        let accuracy = publisher.policy.rules.effective(for: identity).accuracy
        authorize(id, .authorize(.once, accuracy), request: request, at: now)
        // A refusal is told with a native AUTHORIZATION (never sent to a gpsd client): nothing to do.
    }

    /// Starts the Publisher's stream for an authorized gpsd watcher.
    private mutating func gpsdStream(_ id: Int, _ state: AuthorizationState, at now: Moment) {
        gpsdFront.blind.remove(id)
        var out = publisher.startWatching(id, minInterval: .zero, distanceFilter: 0, state: state, at: now)
        // No fix yet: gpsd sends nothing until the receiver's next epoch says so (with its time); a bare `mode` 1 TPV
        // first made python's gps show a time of NaN.
        out.removeAll {
            switch $0 {
            case .fixState(id, false), .silence(id, .noFix): true
            default: false
            }
        }
        deliver(out, at: now.wall)
    }

    /// The Publisher's decision for a gpsd client, in gpsd's shapes.
    mutating func gpsdDeliver(_ delivery: Delivery, at wall: Double) {
        switch delivery {
        case let .report(id, accuracy):
            // Per client and fix: the connection is reached in place, by index (a dictionary's getter would
            // copy it whole), and a JSON watcher is sent the shapes encoded once for all.
            guard let fix = publisher.reportFix(accuracy), let index = connections.index(forKey: id) else { return }
            refreshDevicePaths()
            guard let (json, nmea) = Self.gpsdModes(&connections.values[index]) else { return }
            let shapes = gpsdFront.shapes(of: fix, accuracy: accuracy, serial: publisher.reportSerial, nmea: nmea)
            Self.gpsdRemember(shapes, in: &connections.values[index])
            // SKY first: gpsd clients (gpxlogger, cgps) pair a TPV with the SKY received before it, and gpsd sends a
            // cycle's SKY (at its last GSV) before the TPV of the cycle's last position sentence.
            switch (json, nmea) {
            case (true, false): send(at: index, id, shapes.skyAndTPV, isLocation: true, gpsd: true)
            case (false, true): send(at: index, id, shapes.nmea, isLocation: true, gpsd: true)
            case (true, true): send(at: index, id, shapes.skyAndTPV + shapes.nmea, isLocation: true, gpsd: true)
            case (false, false): break
            }
        case let .noFixEpoch(id, lost):
            guard let fix = publisher.latest, !fix.hasPosition, let index = connections.index(forKey: id) else { return }
            // The daemon's own no-fix (a fix gone stale, a receiver gone): a bare `mode` 1 TPV says the fix was lost,
            // once; it has no epoch to report after that.
            guard lost || !GpsdFrontState.isAnnounced(fix) else { return }
            refreshDevicePaths()
            guard let (json, nmea) = Self.gpsdModes(&connections.values[index]) else { return }
            let shapes = gpsdFront.noFixShapes(of: fix, device: gpsdDefaultDevice(seesState: true), nmea: nmea)
            // `?POLL;` answers with it, as gpsd's with its latest TPV and SKY.
            Self.gpsdRemember(shapes, in: &connections.values[index])
            // An NMEA watcher gets the epoch's sentences without a fix (RMC status V), as gpsd passes a receiver's on.
            switch (json, nmea) {
            case (true, false): send(at: index, id, shapes.skyAndTPV, isLocation: true, gpsd: true)
            case (false, true): if !shapes.nmea.isEmpty { send(at: index, id, shapes.nmea, isLocation: true, gpsd: true) }
            case (true, true): send(at: index, id, shapes.skyAndTPV + shapes.nmea, isLocation: true, gpsd: true)
            case (false, false): break
            }
        case .silence(let id, .noFix):
            // A reduced watcher's no-fix notice: gpsd says "no fix" with a `mode` 1 TPV, and has no word for when the
            // next report is due.
            connections[id]?.gpsd?.lastTPV = []
            connections[id]?.gpsd?.lastSKY = []
            gpsdTell(id, gpsdFront.noFixTPV(device: gpsdDefaultDevice(seesState: true)))
        case .silence:
            // Reduced between paced reports, When In Use without a session: gpsd's protocol has no message for "nothing
            // for now, until then" (a `mode` 1 TPV would say the fix was lost); the blind watchers get gpsd's no-fix TPVs.
            break
        case let .fixState(id, fix):
            if !fix {
                connections[id]?.gpsd?.lastTPV = []
                connections[id]?.gpsd?.lastSKY = []
                gpsdTell(id, gpsdFront.noFixTPV(device: gpsdDefaultDevice(seesState: true)))
            }
        case let .authorization(id, state):
            // Decided (a rule, an agent's answer, a grant revoked or expired): a watcher starts streaming,
            // or watches blind.
            guard let session = connections[id]?.gpsd, session.conversation.policy.enable else { return }
            let streaming = publisher.subscribers[id]?.watching == true
            if state.status.isAuthorized, !streaming {
                gpsdStream(id, state, at: Moment.now())
            } else if !state.status.isAuthorized {
                publisher.stopWatching(id)
                gpsdWatchBlind(id)
            }
            // When In Use: blind while the user has no active session, streaming again once it has.
            if state.status.isAuthorized {
                if state.inUse { gpsdFront.blind.remove(id) } else { gpsdWatchBlind(id) }
            }
        case let .watchEnded(id, _):
            connections[id]?.gpsd?.lastTPV = []
            connections[id]?.gpsd?.lastSKY = []
            if connections[id]?.gpsd?.conversation.policy.enable == true { gpsdWatchBlind(id) }
            gpsdTell(id, gpsdFront.noFixTPV(device: gpsdDefaultDevice(seesState: false)))
        case .pollReply, .audit:
            break
        }
    }

    /// A gpsd connection's watch modes (`json`, NMEA wanted), read in place; nil for a native connection.
    private static func gpsdModes(_ connection: inout Connection) -> (json: Bool, nmea: Bool)? {
        guard let session = connection.gpsd else { return nil }
        return (session.conversation.policy.json, session.wantsNMEA)
    }

    /// Keeps the reports a gpsd connection was sent, for its `?POLL;`.
    private static func gpsdRemember(_ shapes: GpsdShapes, in connection: inout Connection) {
        connection.gpsd?.lastTPV = shapes.tpv
        connection.gpsd?.lastSKY = shapes.sky
    }

    /// Client `id` watches blind from now on: it may see nothing (or, When In Use, nothing now). The blind
    /// clock starts if it is not running.
    private mutating func gpsdWatchBlind(_ id: Int) {
        gpsdFront.blind.insert(id)
        armBlindClock()
    }

    /// Schedules the next blind tick unless one is scheduled.
    private mutating func armBlindClock() {
        guard !gpsdFront.blindClockRunning else { return }
        gpsdFront.blindClockRunning = true
        effects.append(.schedule(.blindTick, after: GpsdFrontState.blindInterval))
    }

    /// The blind clock ticked: every blind watcher gets a `mode` 1 TPV, as gpsd sends a no-fix epoch. On
    /// the daemon's own clock, not the receiver's epochs: the cadence of fixes (and when one is lost) is
    /// something a client that may see nothing must not learn (docs/SECURITY.md "Timing").
    mutating func gpsdBlindTick() {
        gpsdFront.blindClockRunning = false
        guard !gpsdFront.blind.isEmpty else { return }
        refreshDevicePaths()
        let tpv = gpsdFront.noFixTPV(device: gpsdDefaultDevice(seesState: false))
        for id in gpsdFront.blind.sorted() { gpsdTell(id, tpv) }
        if !gpsdFront.blind.isEmpty { armBlindClock() }
    }

    /// A `mode` 1 TPV to a JSON watcher (an NMEA-only watcher gets nothing: no sentence without a fix).
    private mutating func gpsdTell(_ id: Int, _ tpv: [UInt8]) {
        guard let session = connections[id]?.gpsd, session.conversation.policy.enable, session.conversation.policy.json else { return }
        send(id, tpv, isLocation: true, gpsd: true)
    }

    /// The first receiver's device path (TPV.device of a fix-less TPV; names no location): as gpsd names it for a
    /// client told the fix was lost (full accuracy: it may see the receivers' state), else the configured one.
    private func gpsdDefaultDevice(seesState: Bool) -> String? {
        gpsdFront.devicePaths.map { seesState ? $0.path : $0.shown }.sorted().first
    }

    /// Receiver names → device paths, from the receivers' snapshot (refreshed at each client read).
    private mutating func refreshDevicePaths() {
        guard gpsdFront.devicePaths.isEmpty else { return }
        for r in context.receivers.receiverReports() { gpsdFront.setDevicePath(of: r) }
    }
}
