#if canImport(Glibc)
import Glibc
#endif
import CMosquitto
import Dispatch
import LocationCore
import LocationWire
import Synchronization

/// How loud an uplink event is; the daemon maps it onto its log levels (never above warning here).
public enum UplinkLogLevel: Sendable {
    case warning, notice, info
}

/// Receives an uplink's log events: level, message, and key–value context (`uplink.name`, `reason`).
public typealias UplinkLogger = @Sendable (UplinkLogLevel, String, [(String, String)]) -> Void

/// Publishes reports to one MQTT broker through libmosquitto, holding every report until the broker
/// acknowledges it (store and forward, `UplinkSpool`).
///
/// libmosquitto runs its own network thread (`mosquitto_loop_start`): it connects, reconnects with a
/// back-off, resends messages that were in flight when the link dropped, and calls back on that thread.
/// Reports go to libmosquitto only while connected; while not, they wait in the spool, bounded by
/// `spool-max` (the oldest go first, counted and logged), and leave in order once the broker is back.
///
/// A retained status message on `TOPIC/status` says `online` once connected; the MQTT last will (the
/// broker sends it when the link dies) and a clean stop say `offline`.
///
/// Sound as `@unchecked Sendable`: the libmosquitto handle is used by libmosquitto's own thread and
/// through its thread-safe calls (`mosquitto_publish`); everything else mutable is in `state`.
public final class MQTTUplink: @unchecked Sendable {
    public let configuration: UplinkConfiguration
    private let handle: OpaquePointer
    private let state: Mutex<State>
    private let spool: UplinkSpool
    private let log: UplinkLogger
    /// Writes the spool file, off the publishing path.
    private let spoolQueue: DispatchQueue

    struct Pending {
        var payload: [UInt8]
        /// The message id libmosquitto gave it; nil while it waits for the link.
        var mid: Int32?
    }

    struct State {
        /// Reports not yet acknowledged, oldest first.
        var pending: [Pending] = []
        var connected = false
        /// Why the link is down, as last logged; nil while connected or never tried.
        var problem: String?
        /// Reports dropped because the spool was full, since start.
        var dropped = 0
        /// Reports the broker acknowledged, since start.
        var sent = 0
        /// The spool file holds reports (or may): it must be written again when `pending` changes.
        var spoolDirty = false
        /// When a full spool was last logged: at most once a minute, with the count since.
        var lastDropLog: ContinuousClock.Instant?
        var droppedSinceLog = 0
        var spoolWriteScheduled = false
        var stopped = false
        /// The sharing switch (`locationctl share`): off → the status topic says `paused`.
        var sharing = true
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
        mosquitto_lib_init()
        var initial = State()
        do {
            let held = try spool.load()
            initial.pending = held.map { Pending(payload: $0, mid: nil) }
            if !held.isEmpty {
                initial.spoolDirty = true
                log(.notice, "uplink spool loaded", [("uplink.name", configuration.name), ("spool.reports", String(held.count))])
            }
        } catch {
            log(.warning, "uplink spool unreadable; starting empty", [("uplink.name", configuration.name), ("reason", error.description)])
        }
        state = Mutex(initial)
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
                log(.warning, "uplink TLS settings refused", [("uplink.name", configuration.name), ("reason", Self.describe(code))])
            }
        }
        // libmosquitto's own errors (a TLS handshake that failed, a certificate that did not verify) say
        // why a connection never got as far as the broker's answer.
        mosquitto_log_callback_set(mosq) { _, object, level, text in
            guard let object, let text, level & Int32(MOSQ_LOG_ERR) != 0 else { return }
            let uplink = Unmanaged<MQTTUplink>.fromOpaque(object).takeUnretainedValue()
            if !uplink.state.withLock({ $0.connected }) { uplink.noteProblem(String(cString: text)) }
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

    /// Starts libmosquitto's thread, which connects (and reconnects) to the broker.
    public func start() {
        let broker = configuration.broker
        let code = mosquitto_connect_async(handle, broker.host, Int32(broker.port), 30)
        if code != MOSQ_ERR_SUCCESS.rawValue {
            // Not fatal: the network thread keeps trying.
            noteProblem("cannot connect to \(broker): \(Self.describe(code))")
        }
        let started = mosquitto_loop_start(handle)
        if started != MOSQ_ERR_SUCCESS.rawValue {
            log(.warning, "uplink cannot start its network thread", [("uplink.name", configuration.name), ("reason", Self.describe(started))])
        }
        // A broker that never answers leaves no callback behind: say so after a while.
        DispatchQueue.global().asyncAfter(deadline: .now() + 10) { [weak self] in
            guard let self else { return }
            let silent = self.state.withLock { !$0.connected && $0.problem == nil && $0.sent == 0 }
            if silent { self.noteProblem("no answer from \(broker) after 10 s (unreachable or misnamed?)") }
        }
    }

    /// Says `offline` (retained), disconnects and stops the network thread; the spool keeps what is left
    /// (reports in flight included: they were not acknowledged).
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
        // On the spool's queue: after any write already scheduled, so an older snapshot cannot land last.
        spoolQueue.sync {
            let held = state.withLock { $0.pending.map(\.payload) }
            do {
                try spool.save(held)
            } catch {
                log(.warning, "uplink spool not written", [("uplink.name", configuration.name), ("reason", "\(error)")])
            }
        }
    }

    /// A report for the broker, already cut to the uplink's accuracy by the Publisher. Cheap: called on
    /// the fan-out path; the message is encoded here and handed to libmosquitto's queue (or the spool).
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

    /// An encoded report for the broker (see `submit(_:accuracy:)`).
    public func submit(payload: [UInt8]) {
        let dropped = state.withLock { s -> (recent: Int, total: Int)? in
            guard !s.stopped else { return nil }
            var entry = Pending(payload: payload, mid: nil)
            if s.connected { entry.mid = publish(payload) }
            s.pending.append(entry)
            if entry.mid == nil {
                s.spoolDirty = true
                s.droppedSinceLog += trim(&s)
            }
            scheduleSpoolWrite(&s)
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
    /// off, `online` when it is on again. Reports stop before this (the Publisher hands none while paused).
    public func setSharing(_ on: Bool) {
        state.withLock { s in
            guard s.sharing != on else { return }
            s.sharing = on
            guard s.connected else { return }
            let status = Array((on ? "online" : "paused").utf8)
            _ = mosquitto_publish(handle, nil, configuration.statusTopic, Int32(status.count), status, 1, true)
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

    /// Drops the oldest reports still waiting for the link until `spool-max` holds; returns how many.
    private func trim(_ s: inout State) -> Int {
        var dropped = 0
        while s.pending.count > configuration.spoolMax, let index = s.pending.firstIndex(where: { $0.mid == nil }) {
            s.pending.remove(at: index)
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
            var waiting = 0
            for index in s.pending.indices where s.pending[index].mid == nil {
                s.pending[index].mid = publish(s.pending[index].payload)
                waiting += 1
            }
            return (waiting, problem)
        }
        log(wasProblem == nil ? .info : .notice, "uplink connected",
            [("uplink.name", configuration.name), ("broker", configuration.broker.description), ("spool.sending", String(waiting))])
    }

    private func didDisconnect(_ code: Int32) {
        let (stopped, refused) = state.withLock { s -> (Bool, Bool) in
            s.connected = false
            return (s.stopped, s.problem?.hasPrefix("broker refused") == true)
        }
        // A refused CONNECT ends in a disconnect too: the broker's reason is the one to keep.
        if !stopped && !refused { noteProblem("connection to \(configuration.broker) lost: \(Self.describe(code))") }
    }

    private func didPublish(_ mid: Int32) {
        state.withLock { s in
            guard let index = s.pending.firstIndex(where: { $0.mid == mid }) else { return }
            s.pending.remove(at: index)
            s.sent += 1
            if s.spoolDirty { scheduleSpoolWrite(&s) }
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

    /// Writes the spool file soon (coalesced) when it holds or may hold reports.
    private func scheduleSpoolWrite(_ s: inout State) {
        guard s.spoolDirty, !s.spoolWriteScheduled else { return }
        s.spoolWriteScheduled = true
        spoolQueue.async { [weak self] in self?.writeSpool() }
    }

    private func writeSpool() {
        let held = state.withLock { s -> [[UInt8]] in
            s.spoolWriteScheduled = false
            // Nothing left: this write clears the file, and until the link drops again it stays clear.
            if s.pending.isEmpty { s.spoolDirty = false }
            return s.pending.map(\.payload)
        }
        do {
            try spool.save(held)
        } catch {
            log(.warning, "uplink spool not written", [("uplink.name", configuration.name), ("reason", error.description)])
        }
    }

    static func describe(_ code: Int32) -> String {
        code == MOSQ_ERR_ERRNO.rawValue ? String(cString: strerror(errno)) : String(cString: mosquitto_strerror(code))
    }
}

/// An uplink's state for `locationctl status`.
public struct UplinkStatus: Sendable {
    public var name: String
    public var broker: String
    public var topic: String
    public var accuracy: AccuracyAuthorization
    public var connected: Bool
    /// The sharing switch is on.
    public var sharing: Bool
    /// Why it is not connected, when it is not.
    public var problem: String?
    /// Reports waiting for the broker's acknowledgement.
    public var spooled: Int
    /// Reports the broker acknowledged since start.
    public var sent: Int
    /// Reports dropped from a full spool since start.
    public var dropped: Int
}
