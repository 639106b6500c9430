#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import LocationCore
import LocationPosix
import LocationSources
import LocationWire

/// The daemon's version (LocationWire's `Release`, shared with locationctl).
public let locationdRelease = Release.version

/// Why the daemon could not start.
public enum DaemonError: Error, CustomStringConvertible {
    case socket(path: String, errno: Errno)
    /// A `gpsd-listen` address could not be bound; `reason` says why and, when in use, by what.
    case gpsdListen(address: String, reason: String)
    case stateDirectory(path: String, errno: Errno)
    /// The state directory is not the daemon's own (`Daemon.checkStateDirectory`).
    case unsafeStateDirectory(path: String, reason: String)

    public var description: String {
        switch self {
        case let .socket(path, e):
            return e == .addressInUse ? "socket \(path) is in use by a running daemon" : "cannot listen on \(path): \(e)"
        case let .gpsdListen(_, reason): return reason
        case let .stateDirectory(path, e): return "cannot create state directory \(path): \(e)"
        case let .unsafeStateDirectory(path, reason):
            return "state directory \(path) is not safe: \(reason); it must be the daemon's own, writable by it alone (0700)"
        }
    }
}

/// Runs the daemon: receivers from the config, the socket server, signal handling.
///
/// Sound as `@unchecked Sendable`: its mutable state (`configuration`, `signalSource`, `isReady`) is
/// touched only on the main queue — in `run`, and in the signal and timer handlers it installs there;
/// the server and receivers it holds are `Sendable` themselves.
public final class Daemon: @unchecked Sendable {
    /// The configuration in force; a successful reload (SIGHUP) replaces it. Main queue.
    public private(set) var configuration: DaemonConfiguration
    /// The file the configuration was read from, read again with its drop-ins on SIGHUP; nil: no reload.
    public let configurationPath: String?
    let log: Log
    let receivers: ReceiverSet
    let server: NativeFront
    /// sd_notify: readiness, status, watchdog, reload, stop (Systemd.swift).
    let systemd: SystemdNotifier
    /// True when systemd passed the listening socket (socket activation): it stays, never unlinked.
    let socketActivated: Bool
    /// True when systemd passed the NMEA socket: it stays, never unlinked.
    let nmeaSocketActivated: Bool
    /// The signal pipe's read source (SIGTERM, SIGINT, SIGHUP), kept for the daemon's life. Main queue.
    private var signalSource: (any DispatchSourceRead)?
    /// READY=1 was sent (main queue): a reload before it does not announce readiness early.
    private var isReady = false
    /// Run on SIGTERM/SIGINT after the receivers stopped (the uplinks say offline and keep their spool). Main queue.
    private var stopHandlers: [() -> Void] = []
    /// The state each receiver was last logged in (from the receivers' threads): a status event also comes when
    /// only its device changed. The daemon's own, so that it lives as long as the daemon (held by the event
    /// handler alone, LeakSanitizer found it unreachable at exit).
    private let loggedStates = Locked([String: ReceiverStatus.State]())

    /// Opens the socket — or takes the one systemd passed (socket activation) — and prepares the
    /// receivers (not started yet).
    /// - Parameters:
    ///   - configuration: the loaded configuration.
    ///   - configurationPath: its file, read again (with the drop-ins beside it) on SIGHUP; nil disables reload.
    ///   - log: the daemon's log; a reload changes its level.
    /// - Throws: `DaemonError` when the socket or state directory cannot be made; `SocketActivationError`
    ///   when systemd passed descriptors of which none is a listening Unix stream socket.
    public init(configuration: DaemonConfiguration, configurationPath: String? = nil, log: Log) throws {
        self.configuration = configuration
        self.configurationPath = configurationPath
        self.log = log
        systemd = SystemdNotifier(log: log)
        signal(SIGPIPE, SIG_IGN)
        try Self.makeDirectory(configuration.stateDirectory, mode: 0o700)
        try Self.checkStateDirectory(configuration.stateDirectory)
        let listener: ListeningSocket
        var gpsdListeners: [TCPListener] = []
        var nmeaListener: ListeningSocket?
        // systemd: socket activation (LISTEN_FDS) gives the sockets; otherwise they are bound here.
        let inherited = try SocketActivation.inheritedListeners(configuredPath: configuration.socketPath, log: log)
        if let inherited {
            gpsdListeners = inherited.gpsd
            nmeaListener = inherited.nmea
        }
        socketActivated = inherited != nil
        // The gpsd front: the TCP sockets systemd passed (locationd-gpsd.socket), else gpsd-listen's.
        let bindGpsd = gpsdListeners.isEmpty
        for address in configuration.gpsdListen where bindGpsd {
            do {
                gpsdListeners.append(try TCPListener(address: address))
            } catch {
                gpsdListeners.forEach { $0.close() }
                throw DaemonError.gpsdListen(address: address.description, reason: AddressHolder.bindError(address, error))
            }
        }
        // The NMEA socket (GeoClue): the Unix socket named `nmea` systemd passed, else nmea-socket's. Anyone may
        // connect (mode 0666, as the native socket): the policy decides what each client gets.
        nmeaSocketActivated = nmeaListener != nil
        if nmeaListener == nil, let path = configuration.nmeaSocket {
            let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
            if !directory.isEmpty { try? Self.makeDirectory(directory, mode: 0o755) }
            do {
                nmeaListener = try ListeningSocket(path: path, mode: 0o666)
            } catch {
                gpsdListeners.forEach { $0.close() }
                throw DaemonError.socket(path: path, errno: error)
            }
        }
        // The native socket last: once it accepts, every other listener is there too (a client, or a test,
        // that waits for it may use the NMEA socket or the gpsd port at once).
        if let inherited {
            listener = inherited.unix
        } else {
            let socketDirectory = String(configuration.socketPath[..<(configuration.socketPath.lastIndex(of: "/") ?? configuration.socketPath.startIndex)])
            if !socketDirectory.isEmpty { try? Self.makeDirectory(socketDirectory, mode: 0o755) }
            do {
                listener = try ListeningSocket(path: configuration.socketPath, mode: 0o666)
            } catch {
                gpsdListeners.forEach { $0.close() }
                nmeaListener?.close(unlinking: !nmeaSocketActivated)
                throw DaemonError.socket(path: configuration.socketPath, errno: error)
            }
        }
        receivers = ReceiverSet(configuration.receivers.map(makeReceiver))
        var limits = ServerLimits()
        limits.maxClients = configuration.maxClients
        limits.maxClientsPerUser = configuration.maxClientsPerUser
        Self.checkDescriptorLimit(maxClients: configuration.maxClients, log: log)
        limits.clientTimeout = .seconds(configuration.clientTimeout)
        let store = PolicyStore(stateDirectory: configuration.stateDirectory, log: log)
        server = NativeFront(listener: listener, limits: limits, rules: configuration.rules, adminGroup: configuration.adminGroup,
                             store: store, receivers: ReceiverSetReports(set: receivers), log: log, release: locationdRelease,
                             gpsdListeners: gpsdListeners, nmeaListener: nmeaListener)
        server.configureSharing(group: configuration.shareGroup, stateFile: configuration.stateDirectory + "/sharing")
    }

    /// Adds work for a clean stop (before `run`): it runs once the receivers stopped, within the 1.5 s
    /// the daemon allows itself to exit.
    public func onStop(_ body: @escaping () -> Void) {
        stopHandlers.append(body)
    }

    /// Subscribes an uplink to the Publisher (before `run`); see `NativeFront.addUplink`.
    public func addUplink(_ subscription: UplinkSubscription, sink: @escaping UplinkSink, sharing: SharingSink? = nil,
                          status: (@Sendable () -> ServerMessage.Status.Uplink)? = nil) {
        server.addUplink(subscription, sink: sink, sharing: sharing, status: status)
    }

    /// Descriptors the daemon needs besides its clients' (receivers, the store, the log, identity reads).
    static let descriptorsBesidesClients: rlim_t = 64

    /// Raises the soft limit on open files to what `max-clients` needs, up to the hard limit; says so when
    /// even that is too low (the unit's `LimitNOFILE=` should fit `max-clients`). At the limit, accepting
    /// backs off (`NativeFront`) instead of spinning.
    static func checkDescriptorLimit(maxClients: Int, log: Log) {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let needed = rlim_t(maxClients) + descriptorsBesidesClients
        guard limit.rlim_cur < needed else { return }
        var raised = limit
        raised.rlim_cur = min(needed, limit.rlim_max)
        if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        if limit.rlim_cur < needed {
            log.warning("the open-file limit is below what max-clients needs; clients beyond it wait until others leave",
                        ["limit.nofile": String(limit.rlim_cur), "max-clients": String(maxClients), "needed": String(needed)])
        }
    }

    static func makeDirectory(_ path: String, mode: mode_t) throws {
        var partial = ""
        for component in path.split(separator: "/") {
            partial += "/" + component
            if case .failure(let e) = FileDescriptorOps.makeDirectory(partial, mode: mode), e != .fileExists {
                throw DaemonError.stateDirectory(path: path, errno: e)
            }
        }
    }

    /// The state directory holds the grants, the audit, the fudger's secret and the uplinks' spools; the
    /// daemon writes and renames files in it as whoever it runs as. One that another user can write to
    /// (mode 1777, say) lets that user plant links and files the daemon then writes through or publishes
    /// (found by a helper attacking the uplink), and one another user owns lets that user change its
    /// mode: either is refused, as sshd's StrictModes refuses such a home.
    /// - Throws: `DaemonError.unsafeStateDirectory`.
    static func checkStateDirectory(_ path: String) throws {
        var st = stat()
        guard stat(path, &st) == 0 else { throw DaemonError.stateDirectory(path: path, errno: Errno.current) }
        if st.st_uid != geteuid() {
            throw DaemonError.unsafeStateDirectory(path: path, reason: "it is owned by uid \(st.st_uid), not the daemon's uid \(geteuid())")
        }
        if st.st_mode & 0o022 != 0 {
            let mode = String(st.st_mode & 0o7777, radix: 8)
            throw DaemonError.unsafeStateDirectory(path: path, reason: "others may write to it (mode \(mode))")
        }
    }

    /// Starts receivers and server, then serves until SIGTERM or SIGINT; never returns.
    /// - Parameter signals: the pipe that receives `handledSignals` (made first thing in `main`).
    public func run(signals: SignalPipe) -> Never {
        let log = self.log
        let server = self.server
        // Signals come through the pipe main made before any thread started: one sent since — even before
        // this line, right after the socket was bound — waits there (SignalPipe).
        let source = DispatchSource.makeReadSource(fileDescriptor: signals.descriptor.rawValue, queue: .main)
        source.setEventHandler { [self] in
            // A stop wins over reloads taken with it, and reloads taken together are one (a storm of SIGHUPs
            // re-read the configuration 87,000 times in 3 s, one read each).
            let taken = signals.take()
            if let sig = taken.first(where: { $0 != SIGHUP }) { stop(signal: sig) }
            if taken.contains(SIGHUP) { reload() }
        }
        source.resume()
        signalSource = source
        server.start()
        receivers.start { [loggedStates] event in
            switch event {
            case .fix(let fix):
                server.publish(fix)
            case .status(let s):
                server.receiverChanged()
                let changed = loggedStates.withLock { states in
                    defer { states[s.name] = s.state }
                    return states[s.name] != s.state
                }
                guard changed else { return }
                switch s.state {
                case .connected:
                    log.info("receiver connected", ["receiver.name": s.name, "receiver.path": s.path, "receiver.speed": s.speed.map(String.init) ?? "-"])
                case .unavailable(let why):
                    log.warning("receiver unavailable", ["receiver.name": s.name, "receiver.path": s.path, "reason": why])
                default: break
                }
            case .rejected(let name, let rejection):
                // Once per change of reason (ReceiverSet), and within the receiver lines' budget.
                log.receiver(.warning, rejection.reason, receiver: name, ["receiver.name": name, "rule": rejection.rule])
            }
        }
        log.notice("locationd \(locationdRelease) started", ["socket": server.listener.path ?? configuration.socketPath,
                                                             "receivers": String(configuration.receivers.count),
                                                             "socket.activated": socketActivated ? "yes" : "no"])
        // systemd: READY=1 once the receivers are opened (the socket listens already); status, watchdog.
        announceReadiness(deadline: .now() + 5)
        dispatchMain()
    }

    /// Sends READY=1 and starts the status and watchdog updates, on the main queue, once every receiver
    /// has opened its source or said why it cannot (left `starting`), or at `deadline` (an autobauding
    /// serial port may take longer; it goes on in the background). Signals are handled meanwhile.
    func announceReadiness(deadline: DispatchTime) {
        if systemd.isEnabled && DispatchTime.now() < deadline && receivers.statuses.contains(where: { $0.state == .starting }) {
            DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(10)) { self.announceReadiness(deadline: deadline) }
            return
        }
        isReady = true
        systemd.ready(status: currentStatus())
        systemd.startPeriodicUpdates { [receivers, server] in
            SystemdNotifier.statusText(fix: receivers.latestFix, receivers: receivers.receivers.count, clients: server.clientCount)
        }
    }

    /// The systemd status line now.
    func currentStatus() -> String {
        SystemdNotifier.statusText(fix: receivers.latestFix, receivers: receivers.receivers.count, clients: server.clientCount)
    }

    /// The drop-in directory of a configuration file: `conf.d` beside it.
    /// - Parameter path: the main configuration file, e.g. `/etc/locationd/locationd.conf`.
    /// - Returns: e.g. `/etc/locationd/conf.d`.
    public static func dropInDirectory(forConfiguration path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "conf.d" }
        return String(path[..<slash]) + "/conf.d"
    }
}

// MARK: - Signals

extension Daemon {
    /// The signals the daemon handles: SIGTERM and SIGINT stop it cleanly, SIGHUP reloads the configuration.
    public static let handledSignals = [SIGTERM, SIGINT, SIGHUP]

    /// SIGTERM or SIGINT: stops receivers, uplinks and the server, tells every client why, and exits 0 —
    /// within 2 s whatever a receiver does while it closes.
    func stop(signal sig: Int32) {
        log.notice("stopping", ["signal": sig == SIGTERM ? "TERM" : "INT"])
        systemd.stopping()
        DispatchQueue.global().asyncAfter(deadline: .now() + 1.5) { [log] in
            log.warning("stopping took more than 1.5 s; exiting now")
            _exit(0)
        }
        receivers.stop()
        server.drainUplinks()
        stopHandlers.forEach { $0() }
        server.stop(reason: "locationd is stopping")
        server.listener.close(unlinking: !socketActivated)
        server.nmeaListener?.close(unlinking: !nmeaSocketActivated)
        exit(0)
    }
}

// MARK: - Reload (SIGHUP)

extension Daemon {
    /// Reads the configuration file and its drop-ins again and applies what changed, on the main queue.
    ///
    /// An invalid file is rejected with a logged error naming file, line and key, and the running
    /// configuration stays. Otherwise: the log level applies at once; receivers whose settings changed
    /// are stopped and reopened, new ones started, removed ones stopped, the others left untouched;
    /// the policy (rules, defaults) is handed to the server; grants are kept. `socket`,
    /// `state-directory`, `max-clients` and `client-timeout` keep their values until the next restart.
    /// systemd is told `RELOADING=1` before and `READY=1` after.
    func reload() {
        if isReady { systemd.reloading() }
        defer { if isReady { systemd.ready(status: currentStatus()) } }
        guard let path = configurationPath else {
            log.warning("SIGHUP ignored: the daemon was not started from a configuration file")
            return
        }
        log.notice("reloading the configuration", ["config.file": path])
        var new: DaemonConfiguration
        do {
            new = try DaemonConfiguration.load(path: path, dropInDirectory: Self.dropInDirectory(forConfiguration: path))
        } catch {
            log.error("configuration not reloaded, the running one stays: \(error)",
                      ["config.file": error.file, "config.line": error.line.map(String.init) ?? "-", "config.key": error.key ?? "-"])
            return
        }
        let old = configuration

        // Settings that only a restart changes: keep the running values.
        var needRestart: [String] = []
        if new.socketPath != old.socketPath { needRestart.append("socket"); new.socketPath = old.socketPath }
        if new.stateDirectory != old.stateDirectory { needRestart.append("state-directory"); new.stateDirectory = old.stateDirectory }
        if new.maxClients != old.maxClients { needRestart.append("max-clients"); new.maxClients = old.maxClients }
        if new.maxClientsPerUser != old.maxClientsPerUser {
            needRestart.append("max-clients-per-user")
            new.maxClientsPerUser = old.maxClientsPerUser
        }
        if new.clientTimeout != old.clientTimeout { needRestart.append("client-timeout"); new.clientTimeout = old.clientTimeout }
        if new.gpsdListen != old.gpsdListen { needRestart.append("gpsd-listen"); new.gpsdListen = old.gpsdListen }
        if new.nmeaSocket != old.nmeaSocket { needRestart.append("nmea-socket"); new.nmeaSocket = old.nmeaSocket }
        if new.shareGroup != old.shareGroup { needRestart.append("share-group"); new.shareGroup = old.shareGroup }
        if new.uplinkSections != old.uplinkSections { needRestart.append("uplink"); new.uplinkSections = old.uplinkSections }
        if !needRestart.isEmpty {
            log.warning("changed settings apply at the next restart", ["config.keys": needRestart.joined(separator: ",")])
        }

        // Log level.
        log.level.withLock { $0 = new.logLevel }

        // Receivers: reuse the running object where the settings are unchanged, make new ones otherwise.
        let oldSettings = Dictionary(old.receivers.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let running = Dictionary(receivers.receivers.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let list = new.receivers.map { settings -> any Receiver in
            if oldSettings[settings.name] == settings, let receiver = running[settings.name] { return receiver }
            return makeReceiver(settings)
        }
        let change = receivers.replaceReceivers(list)

        // Policy: new rules and defaults apply to connected clients; grants are kept.
        server.applyPolicyRules(new.rules)

        configuration = new
        log.notice("configuration reloaded", ["config.file": path, "log-level": new.logLevel.name,
                                              "receivers.reopened": change.replaced.joined(separator: ","),
                                              "receivers.added": change.added.joined(separator: ","),
                                              "receivers.removed": change.removed.joined(separator: ","),
                                              "receivers.unchanged": change.kept.joined(separator: ",")])
    }
}
