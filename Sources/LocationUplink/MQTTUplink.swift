#if canImport(Glibc)
import Glibc
#endif
import CMosquitto
import Dispatch
import LocationCore
import LocationPosix
import LocationWire

/// Publishes reports to one MQTT broker through libmosquitto, holding every report until the broker
/// acknowledges it (store and forward, `UplinkSpool`).
///
/// libmosquitto runs its own network thread (`mosquitto_loop_start`): it connects, reconnects with a
/// back-off, resends messages that were in flight when the link dropped, and calls back on that thread.
///
/// A report goes through the spool: `submit` numbers it and queues it (cheap; the daemon calls it on its
/// uplinks' queue, after the fix's turn); the
/// spool queue appends it to the spool file and syncs it, and only then hands it to libmosquitto — at
/// most `window` at a time, while connected, oldest first; libmosquitto's `on_publish` (the broker's
/// PUBACK) removes it. So a report accepted for sending survives a SIGKILL of the daemon, and
/// `spool-max` bounds what is held, in memory and on disk, at every moment: past it the oldest report
/// not yet handed to libmosquitto is dropped (counted and logged).
///
/// A retained status message on `TOPIC/status` says `online` once connected (`paused` while sharing is off,
/// when the spool keeps what it holds: `setSharing`); the MQTT last will (the broker sends it when the link
/// dies) and a clean stop say `offline`.
///
/// Sound as `@unchecked Sendable`: the libmosquitto handle is used by libmosquitto's own thread and
/// through its thread-safe calls (`mosquitto_publish`); the spool only on `spoolQueue`; everything else
/// mutable is in `state`.
public final class MQTTUplink: @unchecked Sendable {
    public let configuration: UplinkConfiguration
    private let handle: OpaquePointer
    private let state: Locked<State>
    private let spool: UplinkSpool
    private let log: UplinkLogger
    /// Writes the spool file and hands reports to libmosquitto, off the publishing path.
    private let spoolQueue: DispatchQueue
    /// Most reports handed to libmosquitto and not yet acknowledged (libmosquitto's own default
    /// `max_inflight_messages` is 20): a bounded queue in libmosquitto, the rest in the spool.
    let window: Int

    /// Loads libmosquitto (`libmosquitto.so.1`, Debian's libmosquitto1), which the daemon maps only when an
    /// uplink is configured; once for the process.
    /// - Returns: nil when it is loaded, else why it cannot be (the dynamic loader's message).
    public static func loadLibrary() -> String? {
        locationd_mosquitto_load().map { String(cString: $0) }
    }

    /// Makes the uplink and loads its spool; `start()` connects.
    /// - Parameters:
    ///   - configuration: its `[uplink NAME]` section.
    ///   - password: the first line of `password-file`, if any.
    ///   - stateDirectory: where the spool file lives.
    ///   - log: where events go.
    public init(configuration: UplinkConfiguration, password: String?, stateDirectory: String, log: @escaping UplinkLogger) {
        self.configuration = configuration
        self.log = log
        spool = UplinkSpool(directory: stateDirectory, name: configuration.name)
        spoolQueue = DispatchQueue(label: "locationd.uplink.\(configuration.name).spool")
        window = max(1, min(20, configuration.spoolMax / 2))
        mosquitto_lib_init()
        var initial = State()
        do {
            var held = try spool.open()
            if held.count > configuration.spoolMax {
                // A smaller spool-max than the file was written under: the oldest go.
                initial.dropped = held.count - configuration.spoolMax
                held.removeFirst(initial.dropped)
                try spool.rewrite(held)
                log(.warning, "uplink spool full: oldest reports dropped", [("uplink.name", configuration.name),
                    ("spool.max", String(configuration.spoolMax)), ("dropped", String(initial.dropped))])
            }
            initial.pending = held.map { Entry(sequence: $0.sequence, payload: $0.payload, durable: true, mid: nil) }
            initial.nextSequence = (held.last?.sequence ?? 0) + 1
            if !held.isEmpty {
                log(.notice, "uplink spool loaded", [("uplink.name", configuration.name), ("spool.reports", String(held.count))])
            }
        } catch {
            log(.warning, "uplink spool unreadable; starting empty", [("uplink.name", configuration.name), ("reason", error.description)])
        }
        state = Locked(initial)
        // clean_session false: the broker keeps the session's QoS 1 state across a reconnect.
        guard let mosq = mosquitto_new(configuration.clientID, false, nil) else {
            fatalError("mosquitto_new failed: out of memory")
        }
        handle = mosq
        mosquitto_user_data_set(mosq, Unmanaged.passUnretained(self).toOpaque())
        if let username = configuration.username { mosquitto_username_pw_set(mosq, username, password) }
        let offline = Array("offline".utf8)
        _ = mosquitto_will_set(mosq, configuration.statusTopic, Int32(offline.count), offline, 1, true)
        _ = mosquitto_reconnect_delay_set(mosq, 1, 30, true)
        if configuration.broker.tls {
            // Certificates are verified, and the broker's name against its certificate (no insecure mode).
            let code = mosquitto_tls_set(mosq, configuration.caFile, configuration.caFile == nil ? "/etc/ssl/certs" : nil,
                                         configuration.certFile, configuration.keyFile, nil)
            if code != MOSQ_ERR_SUCCESS.rawValue {
                log(.warning, "uplink TLS settings refused", [("uplink.name", configuration.name), ("reason", UplinkProblem.libmosquitto(code))])
            }
        }
        // libmosquitto's own errors (a TLS handshake that failed, a certificate that did not verify) say
        // why a connection never got as far as the broker's answer.
        mosquitto_log_callback_set(mosq) { _, object, level, text in
            guard let object, let text, level & Int32(MOSQ_LOG_ERR) != 0 else { return }
            let uplink = Unmanaged<MQTTUplink>.fromOpaque(object).takeUnretainedValue()
            guard !uplink.state.withLock({ $0.connected }) else { return }
            let message = String(cString: text)
            uplink.noteProblem(message.hasPrefix("OpenSSL") ? UplinkProblem.tls(message, clientCertificate: uplink.configuration.certFile != nil) : message)
        }
        mosquitto_connect_callback_set(mosq) { _, object, code in
            guard let object else { return }
            Unmanaged<MQTTUplink>.fromOpaque(object).takeUnretainedValue().didConnect(code)
        }
        mosquitto_disconnect_callback_set(mosq) { _, object, code in
            guard let object else { return }
            Unmanaged<MQTTUplink>.fromOpaque(object).takeUnretainedValue().didDisconnect(code)
        }
        mosquitto_publish_callback_set(mosq) { _, object, mid in
            guard let object else { return }
            Unmanaged<MQTTUplink>.fromOpaque(object).takeUnretainedValue().didPublish(mid)
        }
    }

    deinit {
        mosquitto_destroy(handle)
    }

    /// Connects, and starts libmosquitto's thread, which keeps the link (reconnecting with a back-off).
    /// A first attempt refused at once (nothing listens yet) is retried here, 1 s, 2 s, … 30 s apart:
    /// libmosquitto's thread ends when it has no connection to keep, so it starts with the first one.
    public func start() {
        let broker = configuration.broker
        connect(retryingAfter: 1)
        // A broker that never answers leaves no callback behind: say so after a while.
        DispatchQueue.global().asyncAfter(deadline: .now() + 10) { [weak self] in
            guard let self else { return }
            let silent = self.state.withLock { !$0.connected && $0.problem == nil && $0.sent == 0 }
            if silent { self.noteProblem("no answer from \(broker) after 10 s (unreachable or misnamed?)") }
        }
    }

    private func connect(retryingAfter delay: Int) {
        guard !state.withLock({ $0.stopped }) else { return }
        let broker = configuration.broker
        let code = delay == 1 ? mosquitto_connect_async(handle, broker.host, Int32(broker.port), 30) : mosquitto_reconnect_async(handle)
        guard code == MOSQ_ERR_SUCCESS.rawValue else {
            let failure = "cannot connect to \(broker): \(UplinkProblem.libmosquitto(code))"
            // EPROTO with no OpenSSL error logged just before: the broker closed the TLS handshake.
            let tlsClosed = broker.tls && code == MOSQ_ERR_ERRNO.rawValue && errno == EPROTO
            if !(tlsClosed && UplinkProblem.isSpecific(state.withLock { $0.problem })) {
                noteProblem(tlsClosed ? UplinkProblem.tlsHandshake(failure, clientCertificate: configuration.certFile != nil) : failure)
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(delay)) { [weak self] in
                self?.connect(retryingAfter: min(delay * 2, 30))
            }
            return
        }
        let started = mosquitto_loop_start(handle)
        if started != MOSQ_ERR_SUCCESS.rawValue {
            log(.warning, "uplink cannot start its network thread", [("uplink.name", configuration.name), ("reason", UplinkProblem.libmosquitto(started))])
        }
    }

    /// Says `offline` (retained), disconnects and stops the network thread; the spool keeps what is left
    /// (reports in flight included: they were not acknowledged), its last removals written.
    public func stop() {
        let connected = state.withLock { s -> Bool in
            s.stopped = true
            return s.connected
        }
        if connected {
            let offline = Array("offline".utf8)
            _ = mosquitto_publish(handle, nil, configuration.statusTopic, Int32(offline.count), offline, 1, true)
        }
        mosquitto_disconnect(handle)
        mosquitto_loop_stop(handle, false)
        spoolQueue.sync { pump() }
    }

    /// A report for the broker, already cut to the uplink's accuracy by the Publisher: encoded here and queued
    /// for the spool (the daemon calls it on its uplinks' queue, after the fix's turn, not on the fan-out path).
    /// - Parameters:
    ///   - fix: the fix as the uplink may see it (reduced: the fudged fix).
    ///   - accuracy: the accuracy it was cut to.
    public func submit(_ fix: Fix, accuracy: AccuracyAuthorization) {
        let payload: [UInt8]?
        switch configuration.format {
        case .owntracks: payload = UplinkReport.owntracks(fix, trackerID: configuration.trackerID)
        case .tpv: payload = UplinkReport.tpv(fix, accuracy: accuracy)
        }
        guard let payload else { return }
        submit(payload: payload)
    }

    /// An encoded report for the broker (see `submit(_:accuracy:)`): numbered and queued for the spool;
    /// past `spool-max` the oldest report not yet handed to libmosquitto is dropped.
    public func submit(payload: [UInt8]) {
        let dropped = state.withLock { s -> (recent: Int, total: Int)? in
            guard !s.stopped else { return nil }
            s.pending.append(Entry(sequence: s.nextSequence, payload: payload, durable: false, mid: nil))
            s.nextSequence += 1
            s.droppedSinceLog += trim(&s)
            schedulePump(&s)
            let now = ContinuousClock.now
            guard s.droppedSinceLog > 0, s.lastDropLog.map({ now - $0 >= .seconds(60) }) ?? true else { return nil }
            defer { s.droppedSinceLog = 0; s.lastDropLog = now }
            return (s.droppedSinceLog, s.dropped)
        }
        if let dropped {
            log(.warning, "uplink spool full: oldest reports dropped",
                [("uplink.name", configuration.name), ("spool.max", String(configuration.spoolMax)),
                 ("dropped", String(dropped.recent)), ("dropped.total", String(dropped.total))])
        }
    }

    /// The sharing switch changed (or is told at start): the retained status says `paused` while it is
    /// off, `online` when it is on again. New reports stop before this (the Publisher hands none while
    /// paused); while off, the spool's reports stay in it (a broker that comes back gets none of them), and
    /// when it is on again they go, oldest first. Reports libmosquitto already had (at most `window`, sent
    /// and not yet acknowledged) are its own: it may send them again after a reconnection, as QoS 1 requires.
    /// - Parameters:
    ///   - on: whether sharing is on.
    ///   - discardingSpool: with `on` false, drop every report the spool holds that libmosquitto does not
    ///     have, in memory and in the spool file (`locationctl share off --discard`): they never go.
    public func setSharing(_ on: Bool, discardingSpool: Bool = false) {
        let discarded = state.withLock { s -> Int in
            if s.sharing != on {
                s.sharing = on
                if s.connected {
                    let status = Array((on ? "online" : "paused").utf8)
                    _ = mosquitto_publish(handle, nil, configuration.statusTopic, Int32(status.count), status, 1, true)
                }
            }
            // On again: the held reports leave through the pump.
            if on { schedulePump(&s) }
            guard !on, discardingSpool else { return 0 }
            let dropped = s.pending.filter { $0.mid == nil }.map(\.sequence)
            s.pending.removeAll { $0.mid == nil }
            s.removed += dropped
            schedulePump(&s)
            return dropped.count
        }
        if discardingSpool && !on {
            log(.notice, "uplink spool discarded", [("uplink.name", configuration.name), ("discarded", String(discarded))])
        }
    }

    /// What `locationctl status` shows of the uplink.
    public var status: UplinkStatus {
        state.withLock { s in
            UplinkStatus(name: configuration.name, broker: configuration.broker.description, topic: configuration.topic,
                         accuracy: configuration.accuracy, connected: s.connected, sharing: s.sharing, problem: s.problem,
                         spooled: s.pending.count, sent: s.sent, dropped: s.dropped)
        }
    }

    // MARK: - Inside

    /// Drops the oldest reports not handed to libmosquitto until `spool-max` holds; returns how many.
    /// (With every report held in flight — at most `window`, half of `spool-max` — none is.)
    private func trim(_ s: inout State) -> Int {
        var dropped = 0
        while s.pending.count > configuration.spoolMax, let index = s.pending.firstIndex(where: { $0.mid == nil }) {
            s.removed.append(s.pending.remove(at: index).sequence)
            dropped += 1
        }
        s.dropped += dropped
        return dropped
    }

    /// Hands one report to libmosquitto; its message id, or nil when it would not take it.
    private func publish(_ payload: [UInt8]) -> Int32? {
        var mid: Int32 = 0
        let code = mosquitto_publish(handle, &mid, configuration.topic, Int32(payload.count), payload, configuration.qos, configuration.retain)
        return code == MOSQ_ERR_SUCCESS.rawValue ? mid : nil
    }

    /// Runs `pump` soon on the spool queue (coalesced).
    private func schedulePump(_ s: inout State) {
        guard !s.pumpScheduled else { return }
        s.pumpScheduled = true
        spoolQueue.async { [weak self] in self?.pump() }
    }

    /// On the spool queue: writes what changed to the spool file (removals, then new reports, synced;
    /// or the whole file when a compaction is due), then hands libmosquitto the oldest reports on disk
    /// that it does not have, up to `window`, while connected.
    private func pump() {
        let compact = spool.needsCompaction
        let (removed, added) = state.withLock { s -> ([UInt64], [UplinkSpool.Report]) in
            s.pumpScheduled = false
            let removed = s.removed
            s.removed = []
            let added = s.pending.filter { compact || !$0.durable }.map { UplinkSpool.Report(sequence: $0.sequence, payload: $0.payload) }
            return (removed, added)
        }
        do {
            if compact { try spool.rewrite(added) } else { try spool.append(removed: removed, added: added, sync: !added.isEmpty) }
            state.withLock { $0.spoolError = nil }
        } catch {
            // Sent all the same: only a crash would lose them now.
            let first = state.withLock { s -> Bool in
                defer { s.spoolError = error.description }
                return s.spoolError != error.description
            }
            if first { log(.warning, "uplink spool not written", [("uplink.name", configuration.name), ("reason", error.description)]) }
        }
        state.withLock { s in
            var written = Set(added.map(\.sequence))
            for index in s.pending.indices where !written.isEmpty {
                if written.remove(s.pending[index].sequence) != nil { s.pending[index].durable = true }
            }
            // Sharing off: nothing leaves, the spool's reports included (they wait for `setSharing(true)`).
            guard s.connected, !s.stopped, s.sharing else { return }
            for index in s.pending.indices where s.inFlight < window && s.pending[index].durable && s.pending[index].mid == nil {
                guard let mid = publish(s.pending[index].payload) else { break }
                s.pending[index].mid = mid
                s.inFlight += 1
            }
        }
    }

    private func didConnect(_ code: Int32) {
        guard code == 0 else {
            noteProblem("broker refused the connection: \(String(cString: mosquitto_connack_string(code)))")
            return
        }
        let (waiting, wasProblem) = state.withLock { s -> (Int, String?) in
            let status = Array((s.sharing ? "online" : "paused").utf8)
            _ = mosquitto_publish(handle, nil, configuration.statusTopic, Int32(status.count), status, 1, true)
            s.connected = true
            let problem = s.problem
            s.problem = nil
            // What libmosquitto had in flight it sends again itself; the rest leaves through the pump.
            schedulePump(&s)
            return (s.pending.count, problem)
        }
        log(wasProblem == nil ? .info : .notice, "uplink connected",
            [("uplink.name", configuration.name), ("broker", configuration.broker.description), ("spool.sending", String(waiting))])
    }

    private func didDisconnect(_ code: Int32) {
        let (stopped, wasConnected, specific) = state.withLock { s -> (Bool, Bool, Bool) in
            defer { s.connected = false }
            return (s.stopped, s.connected, UplinkProblem.isSpecific(s.problem))
        }
        // A refused CONNECT or a failed TLS handshake ends in a disconnect too: their reason is the one to keep.
        guard !stopped, wasConnected || !specific else { return }
        let lost = "connection to \(configuration.broker) lost: \(UplinkProblem.libmosquitto(code))"
        noteProblem(!wasConnected && configuration.broker.tls ? UplinkProblem.tlsHandshake(lost, clientCertificate: configuration.certFile != nil) : lost)
    }

    /// The broker acknowledged message `mid` (or, QoS 0, libmosquitto sent it): the report leaves the
    /// spool, and the next may go.
    private func didPublish(_ mid: Int32) {
        state.withLock { s in
            guard let index = s.pending.firstIndex(where: { $0.mid == mid }) else { return }
            s.removed.append(s.pending.remove(at: index).sequence)
            s.inFlight -= 1
            s.sent += 1
            schedulePump(&s)
        }
    }

    /// Logs why the link is down, once per reason (a broker that keeps refusing is not logged per retry).
    private func noteProblem(_ problem: String) {
        let changed = state.withLock { s -> Bool in
            s.connected = false
            guard s.problem != problem else { return false }
            s.problem = problem
            return true
        }
        if changed { log(.warning, "uplink not connected: \(problem)", [("uplink.name", configuration.name), ("reason", problem)]) }
    }
}
