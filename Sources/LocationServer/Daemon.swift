#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import LocationCore
import LocationPosix
import LocationSources
import LocationWire

/// The daemon's version.
public let locationdRelease = "0.1.0"

/// Reports the receivers' states for STATUS and STATE messages.
struct ReceiverSetReports: ReceiverStatusProvider {
    let set: ReceiverSet

    func receiverReports() -> [ReceiverReport] {
        set.statuses.map { s in
            var state = "starting", reason: String? = nil
            switch s.state {
            case .starting: state = "starting"
            case .connected: state = "connected"
            case .unavailable(let why): state = "unavailable"; reason = why
            case .stopped: state = "stopped"
            }
            return ReceiverReport(name: s.name, type: s.type, path: s.path, state: state, reason: reason, speed: s.speed,
                                  connectedSince: s.connectedSince, sentences: s.sentences, fixes: s.fixes, errors: s.errors,
                                  lastFixTime: s.lastFixTime, priority: s.priority)
        }
    }
}

/// Why the daemon could not start.
public enum DaemonError: Error, CustomStringConvertible {
    case socket(path: String, errno: Errno)
    case stateDirectory(path: String, errno: Errno)

    public var description: String {
        switch self {
        case let .socket(path, e):
            return e == .addressInUse ? "socket \(path) is in use by a running daemon" : "cannot listen on \(path): \(e)"
        case let .stateDirectory(path, e): return "cannot create state directory \(path): \(e)"
        }
    }
}

/// Runs the daemon: receivers from the config, the socket server, signal handling.
public final class Daemon: @unchecked Sendable {
    public let configuration: DaemonConfiguration
    let log: Log
    let receivers: ReceiverSet
    let server: SocketServer
    private var signalSources: [DispatchSourceSignal] = []

    /// Opens the socket and prepares the receivers (not started yet).
    /// - Throws: `DaemonError` when the socket or state directory cannot be made.
    public init(configuration: DaemonConfiguration, log: Log) throws {
        self.configuration = configuration
        self.log = log
        signal(SIGPIPE, SIG_IGN)
        try Self.makeDirectory(configuration.stateDirectory, mode: 0o700)
        let socketDirectory = String(configuration.socketPath[..<(configuration.socketPath.lastIndex(of: "/") ?? configuration.socketPath.startIndex)])
        if !socketDirectory.isEmpty { try? Self.makeDirectory(socketDirectory, mode: 0o755) }
        let listener: ListeningSocket
        do {
            listener = try ListeningSocket(path: configuration.socketPath, mode: 0o666)
        } catch {
            throw DaemonError.socket(path: configuration.socketPath, errno: error)
        }
        receivers = ReceiverSet(configuration.receivers.map(makeReceiver))
        var limits = ServerLimits()
        limits.maxClients = configuration.maxClients
        limits.clientTimeout = configuration.clientTimeout
        let policy = PolicyEngine(rules: configuration.rules, adminGroup: configuration.adminGroup,
                                  stateDirectory: configuration.stateDirectory, log: log)
        server = SocketServer(listener: listener, limits: limits, policy: policy,
                              receivers: ReceiverSetReports(set: receivers), log: log, release: locationdRelease)
    }

    static func makeDirectory(_ path: String, mode: mode_t) throws {
        var partial = ""
        for component in path.split(separator: "/") {
            partial += "/" + component
            if mkdir(partial, mode) != 0 && errno != EEXIST {
                throw DaemonError.stateDirectory(path: path, errno: .current)
            }
        }
    }

    /// Starts receivers and server, then serves until SIGTERM or SIGINT; never returns.
    public func run() -> Never {
        server.start()
        let log = self.log
        let server = self.server
        receivers.start { event in
            switch event {
            case .fix(let fix):
                server.publish(fix)
            case .status(let s):
                switch s.state {
                case .connected:
                    log.info("receiver connected", ["receiver.name": s.name, "receiver.path": s.path, "receiver.speed": s.speed.map(String.init) ?? "-"])
                case .unavailable(let why):
                    log.warning("receiver unavailable", ["receiver.name": s.name, "receiver.path": s.path, "reason": why])
                default: break
                }
            }
        }
        log.notice("locationd \(locationdRelease) started", ["socket": configuration.socketPath, "receivers": String(configuration.receivers.count)])
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .main)
            source.setEventHandler { [self] in
                log.notice("stopping", ["signal": sig == SIGTERM ? "TERM" : "INT"])
                receivers.stop()
                server.stop(reason: "locationd is stopping")
                server.listener.close()
                exit(0)
            }
            source.resume()
            signalSources.append(source)
        }
        dispatchMain()
    }
}
