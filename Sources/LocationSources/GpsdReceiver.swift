#if canImport(Glibc)
import Glibc
#endif
import CLibgps
import LocationCore
import LocationPosix

/// Reads fixes from a gpsd daemon through libgps (gpsd 3.22, API 11): connects with `gps_open`, asks for
/// JSON reports with `gps_stream` (`?WATCH={"enable":true,"json":true}`, plus `"device"` when one device
/// is configured), and maps every TPV report to a `Fix`. gpsd has already decoded the receiver, so this
/// receiver skips the NMEA stage.
///
/// Reads are event-driven, as every receiver's: a `ReadabilityThread` polls the socket
/// (`gps_data_t.gps_fd`, non-blocking) and runs the read on the receiver's queue, where `gps_read` is
/// called until it has no complete report left, so a quiet gpsd costs no CPU. A refused connection, an unresolvable host, or gpsd going away (`gps_read`
/// returns -1: end of file or a read error) makes it `unavailable` with the reason; it then reconnects
/// with capped exponential backoff, and fixes resume by themselves once gpsd is back.
///
/// Each connection owns its own `gps_data_t`; once the reader thread no longer polls the socket,
/// `gps_close` (which closes the socket and frees libgps's buffer) runs, so every socket is closed
/// exactly once.
///
/// Blocking: connecting runs on the receiver's queue. One non-blocking connection attempt, bounded by
/// `connectTimeout` per address, comes first (it also names the cause of a failure, which
/// `gps_open` reduces to "can't connect"); `gps_open` then resolves the host and connects again, at once
/// for a gpsd that just answered. Host name resolution itself is bounded only by the resolver's timeouts.
///
/// Its status's `device` is gpsd's device: the configured `device`, else gpsd's one device (its `DEVICES` answer to
/// the WATCH, and the `DEVICE` reports of devices it opens later). The gpsd front lists the receiver by it, as gpsd does, to the clients that may see the receivers'
/// state. It is not taken from each TPV: with several devices it would change at each device's fixes, and tell
/// their times (found by a helper attacking the daemon as another uid).
///
/// The `sentences` of its status count gpsd's JSON reports (TPV, SKY, DEVICE, ...), over all connections.
///
/// `@unchecked Sendable`: `connection` and `reports` are only touched on `core.queue` (the reader
/// thread runs its handler there); the rest never changes.
public final class GpsdReceiver: Receiver, @unchecked Sendable {
    /// The config section name; every fix's `device`.
    public let name: String
    /// Configured priority: higher wins while it has a valid fix.
    public let priority: Int
    /// Configured `stale-after`; nil = 3 cycles (`FixSelector` judges).
    public let staleAfter: Duration?
    /// Every plausibility rule; the date rules only with `check-date` on (docs/RECEIVERS.md).
    public let plausibility: FixPlausibility.Configuration
    /// gpsd's host name or address (config `server`, default `localhost`).
    public let host: String
    /// gpsd's TCP port (config `server`, default 2947, IANA `gpsd`).
    public let port: Int
    /// When set, only this device's fixes (gpsd_json(5) `TPV.device`, e.g. `/dev/ttyACM0`) are used, and
    /// gpsd is asked to send only its reports (`?WATCH` `device`).
    public let device: String?
    /// `host:port`, as shown in the status (`[host]:port` for an IPv6 address).
    public let path: String
    /// Besides root, the user that may run a gpsd on this host (config `server-user`).
    public let serverUser: String
    private let core: ReceiverCore

    /// The current connection; only touched on `core.queue`.
    private var connection: GpsdConnection?
    /// JSON reports read over all connections (status `sentences`).
    private var reports = 0
    /// Read errors over all connections (status `errors`).
    private var readErrors = 0

    /// - Parameter configuration: a `.gpsd` receiver.
    /// Loads libgps (`libgps.so.28`, Debian's libgps28), which the daemon maps only when a gpsd receiver is
    /// configured; once for the process.
    /// - Returns: nil when it is loaded, else why it cannot be (the dynamic loader's message).
    public static func loadLibrary() -> String? {
        locationd_libgps_load().map { String(cString: $0) }
    }

    public init(_ configuration: ReceiverConfiguration) {
        guard case let .gpsd(host, port, device) = configuration.source else {
            preconditionFailure("GpsdReceiver needs a gpsd configuration")
        }
        self.name = configuration.name
        self.priority = configuration.priority
        self.staleAfter = configuration.staleAfter
        self.plausibility = FixPlausibility.Configuration(checksDate: configuration.checkDate)
        self.host = host
        self.port = port
        self.device = device
        self.path = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        self.serverUser = configuration.serverUser
        self.core = ReceiverCore(configuration: configuration, type: "gpsd", path: path)
    }

    /// The current snapshot: type `gpsd`, path `host:port`.
    public var status: ReceiverStatus { core.status }

    /// Connects and starts reading; `handler` gets the events on the receiver's queue, in order.
    public func start(_ handler: @escaping @Sendable (ReceiverEvent) -> Void) {
        core.start(handler) { self.connect() }
    }

    /// Stops reading and closes the connection. The socket is closed on the receiver's queue once the
    /// reader thread has stopped polling it, right after this returns.
    public func stop() {
        core.stop { disconnect() }
    }

    // MARK: - Connection (all on core.queue)

    private func connect() {
        // gps_open connects with a blocking connect(2) and keeps only "can't connect" of its errno: one
        // bounded attempt first says why gpsd cannot be reached, without blocking the queue for minutes.
        let reachable = clibgps_probe_connect(host, String(port), Self.connectTimeout.pollMilliseconds)
        guard reachable == 0 else {
            unavailable(reachable < 0 ? "cannot resolve host \(host)" : Self.lowercasedFirst(Errno(rawValue: reachable).description))
            return
        }
        let connection = GpsdConnection()
        guard connection.open(host: host, port: port) else {
            // libgps leaves a negative netlib code in errno; nothing is open.
            unavailable(Self.describeOpenFailure(errno))
            return
        }
        let fd = connection.data.pointee.gps_fd
        FileDescriptorOps.setCloseOnExec(fd)  // not inherited by programs the daemon starts
        if let refusal = Self.untrustedServer(socket: fd, serverUser: serverUser) {
            connection.close()
            unavailable(refusal)
            return
        }
        if case let .failure(error) = FileDescriptorOps.setNonBlocking(fd) {
            connection.close()
            unavailable("cannot make the socket non-blocking: \(error)")
            return
        }
        var flags = WATCH_ENABLE | WATCH_JSON
        if device != nil { flags |= WATCH_DEVICE }
        let streamed: Int32
        if let device {
            streamed = device.withCString { clibgps_stream(connection.data, flags, $0) }
        } else {
            streamed = clibgps_stream(connection.data, flags, nil)
        }
        guard streamed == 0 else {
            let error = Errno.current
            connection.close()
            unavailable("sending ?WATCH failed: \(error)")
            return
        }

        do {
            connection.reader = try ReadabilityThread(fileDescriptor: fd, queue: core.queue) { [weak self] _ in
                guard let self else {
                    connection.stopReading()
                    return nil
                }
                self.readAvailable(connection)
                return nil
            }
        } catch {
            connection.close()
            unavailable("cannot watch the socket: \(error)")
            return
        }
        self.connection = connection
        core.setState(.connected)
        if let device { core.setDevice(device) }
    }

    /// Why the gpsd at the other end of `socket` must not be read, or nil when it may. On this host the
    /// kernel's socket table (sock_diag, as `ss -p`) says who owns gpsd's end: root (gpsd started by
    /// systemd, or as root, keeps root's socket after it drops privileges) or `serverUser` (a name or a
    /// uid) may; anyone else is a user's program on gpsd's port, free to any unprivileged user while gpsd is
    /// down. gpsd's end is in the table only once gpsd has accepted the connection, which it tells with its
    /// `VERSION` greeting: that is waited for first (up to `connectTimeout`), and left unread for libgps. A
    /// server not in the table then is on another host, and trusted as the network is; one at an address of
    /// this host that is not in it is refused.
    static func untrustedServer(socket fd: Int32, serverUser: String) -> String? {
        let greeted = FileDescriptorOps.poll(fd, events: Int16(POLLIN), timeoutMilliseconds: Self.connectTimeout.pollMilliseconds)
        guard case .success(let events) = greeted, events != 0 else {
            return "no greeting from the server within \(Self.connectTimeout)"
        }
        guard case .success(let ours) = TCPAddress.of(socket: fd, peer: false),
              case .success(let peer) = TCPAddress.of(socket: fd, peer: true) else {
            return "cannot read the connection's addresses"
        }
        guard let owner = PeerProcess.tcpSocketOwner(peer: peer, ours: ours) else {
            return peer.isOnThisHost ? "cannot tell who runs the server at \(peer): it is not in the kernel's socket table" : nil
        }
        if owner.uid == 0 || owner.uid == (UInt32(serverUser) ?? UserDatabase.userID(named: serverUser)) { return nil }
        let user = UserDatabase.name(ofUser: owner.uid).map { "\($0) (uid \(owner.uid))" } ?? "uid \(owner.uid)"
        return "refused: the server at \(peer) is run by \(user), not by root or \(serverUser) (server-user)"
    }

    /// Reads every complete report libgps can get now: `gps_read` (libgps(3)) returns one JSON line per
    /// call, > 0 for a report, 0 when no complete line is buffered and the non-blocking socket has nothing
    /// more (EAGAIN), -1 at end of file or on a read error. Draining until 0 is what `gps_waiting(&data, 0)`
    /// would tell, without its `select(2)`, which cannot take descriptors ≥ FD_SETSIZE.
    private func readAvailable(_ connection: GpsdConnection) {
        guard self.connection === connection else { return }
        var budget = 1024
        while true {
            connection.data.pointee.set = 0
            errno = 0
            // The start of the line is enough to know its class: gpsd writes `{"class":"...` first.
            let n = connection.message.withUnsafeMutableBufferPointer {
                gps_read(connection.data, $0.baseAddress, Int32($0.count))
            }
            if n < 0 {
                let code = errno
                if code == 0 || code == ECONNRESET {
                    fail(code == 0 ? "gpsd closed the connection" : "gpsd reset the connection")
                } else {
                    readErrors += 1
                    core.count(sentences: reports, errors: readErrors)
                    fail("read: \(Errno(rawValue: code))")
                }
                return
            }
            if n == 0 {
                core.count(sentences: reports, errors: readErrors)
                return
            }
            handleReport(connection)
            if self.connection !== connection { return }
            budget -= 1
            if budget == 0 {
                core.count(sentences: reports, errors: readErrors)
                // A very chatty gpsd: let stop() and other work in, then carry on.
                core.queue.async { [weak self] in self?.readAvailable(connection) }
                return
            }
        }
    }

    /// One JSON report has been unpacked into `connection.data`; `set` holds only what it carried (cleared
    /// before `gps_read`), `connection.message` the start of its line.
    private func handleReport(_ connection: GpsdConnection) {
        reports += 1
        if !connection.hadReport {
            // gpsd answered (its VERSION greeting): the connection works, start backoff afresh next time.
            connection.hadReport = true
            core.backoff.reset()
        }
        let data = connection.data
        let set = data.pointee.set
        let reportDevice = Self.string(fromCharacters: data.pointee.dev.path)
        guard device == nil || reportDevice == device else { return }
        if device == nil, connection.messageIs(class: "DEVICES") || connection.messageIs(class: "DEVICE") {
            // gpsd's devices: its answer to the WATCH lists them, and each one it opens later is told in a DEVICE.
            // With one device, that is where the fixes come from.
            if connection.messageIs(class: "DEVICES") {
                let count = max(0, min(Int(data.pointee.devices.ndevices), Int(MAXUSERDEVS)))
                connection.devices = withUnsafeBytes(of: &data.pointee.devices.list) { raw in
                    (0..<count).map { Self.string(fromCharacters: raw.load(fromByteOffset: $0 * MemoryLayout<devconfig_t>.stride,
                                                                           as: devconfig_t.self).path) }
                }
            } else if !reportDevice.isEmpty, !connection.devices.contains(reportDevice), connection.devices.count < 16 {
                connection.devices.append(reportDevice)
            }
            if connection.devices.count == 1, !connection.devices[0].isEmpty { core.setDevice(connection.devices[0]) }
            return
        }
        if connection.messageIs(class: "SKY") {
            connection.noteSky(from: data, device: reportDevice)
            return
        }
        // libgps sets STATUS_SET only when it unpacks a TPV report, MODE_SET when that carried a mode.
        guard set & STATUS_SET != 0, set & MODE_SET != 0 else { return }
        var fix = Self.fix(from: data.pointee.fix, set: set)
        fix.satellitesUpdated = false
        if let sky = connection.sky[reportDevice] {
            fix.satellitesUsed = sky.satellitesUsed
            fix.satellitesVisible = sky.satellitesVisible
            fix.satellites = sky.satellites
            fix.dop = sky.dop
            fix.dopIsComplete = true
            fix.satellitesUpdated = sky.fresh
            connection.sky[reportDevice]?.fresh = false
        }
        core.deliver(fix)
    }

    private func fail(_ reason: String) {
        disconnect()
        unavailable(reason)
    }

    private func unavailable(_ reason: String) {
        core.setState(.unavailable(reason: "gpsd at \(path): \(reason)"))
        core.retryLater { [weak self] in self?.connect() }
    }

    private func disconnect() {
        guard let connection else { return }
        self.connection = nil
        connection.stopReading()
    }
}
