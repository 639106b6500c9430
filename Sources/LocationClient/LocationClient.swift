#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationPosix
import LocationWire

/// A connection to locationd for programs that consume location: the Swift side of the socket protocol
/// (docs/PROTOCOL.md), shaped like Core Location's `CLLocationManager`.
///
/// ```swift
/// let client = try await LocationClient.connect()
/// for try await update in client.updates(minInterval: 1) {
///     if case .location(let location) = update { print(location.latitude, location.longitude) }
/// }
/// ```
///
/// One client is one connection, hence one identity to the daemon's policy and at most one
/// subscription. Calls may come from any task; replies are matched to requests by class, in order.
/// The connection closes on `close()` or when the client and every stream it made are gone.
public final class LocationClient: Sendable {
    /// The socket used when neither the `socketPath` argument nor `LOCATIOND_SOCKET` names one.
    public static let defaultSocketPath = "/run/locationd/locationd.sock"
    /// The environment variable naming the socket.
    public static let socketPathEnvironmentVariable = "LOCATIOND_SOCKET"
    /// The protocol major version this library speaks (`VERSION.proto_major`).
    public static let supportedProtocolMajor = ProtocolVersion.major
    /// Seconds allowed beyond a request's own timeout for the daemon's reply to arrive before a call
    /// fails with `.timedOut`.
    public static let replyGracePeriod = 5.0
    /// Seconds a request may take to write before the call fails with `.timedOut` (a daemon that
    /// stopped reading).
    public static let sendTimeout = 10.0

    /// The socket path this client connected to.
    public let socketPath: String
    /// The daemon's version (`VERSION.release`), e.g. `"0.1.0"`; nil when it did not say.
    public let serverRelease: String?
    /// The daemon's protocol minor version (`VERSION.proto_minor`): compatible additions.
    public let serverProtocolMinor: Int

    let connection: Connection

    private init(connection: Connection, socketPath: String, serverRelease: String?, serverProtocolMinor: Int) {
        self.connection = connection
        self.socketPath = socketPath
        self.serverRelease = serverRelease
        self.serverProtocolMinor = serverProtocolMinor
    }

    deinit {
        connection.close()
    }

    /// The socket path a client uses: `explicit` when given, else `$LOCATIOND_SOCKET` when set and not
    /// empty, else `defaultSocketPath`.
    public static func resolveSocketPath(_ explicit: String? = nil) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let value = getenv(socketPathEnvironmentVariable) {
            let path = String(cString: value)
            if !path.isEmpty { return path }
        }
        return defaultSocketPath
    }

    /// Connects to the daemon and checks its `VERSION` greeting.
    /// - Parameters:
    ///   - socketPath: the socket; nil for `resolveSocketPath(nil)` (`$LOCATIOND_SOCKET`, else
    ///     `/run/locationd/locationd.sock`).
    ///   - timeout: seconds to wait for the greeting.
    /// - Returns: the connected client.
    /// - Throws: `LocationClientError.cannotConnect` (with the path and errno),
    ///   `.protocolMismatch` (the daemon's `proto_major` is not `supportedProtocolMajor`), `.server` (the
    ///   daemon greeted with an `ERROR`, e.g. too many clients), `.invalidReply` (a greeting that is not
    ///   `VERSION`), `.timedOut`, `.disconnected`; `CancellationError`.
    public static func connect(socketPath: String? = nil, timeout: Double = 10) async throws -> LocationClient {
        let path = resolveSocketPath(socketPath)
        let fd: Int32
        switch UnixSocketOps.connect(path: path) {
        case .success(let connected): fd = connected
        case .failure(let errno): throw LocationClientError.cannotConnect(path: path, errno: errno)
        }
        _ = UnixSocketOps.setSendTimeout(fd, seconds: sendTimeout)
        let connection = Connection(fd: fd)
        if let errno = connection.startReader() {
            throw LocationClientError.cannotConnect(path: path, errno: errno)
        }
        do {
            let line = try await connection.roundTrip(nil, replyClass: "VERSION", timeout: timeout)
            let version: ServerMessage.Version
            switch line.result {
            case .success(.version(let greeting)):
                version = greeting
            case .failure(let error) where error.className == "VERSION":
                throw LocationClientError.invalidReply("unreadable VERSION greeting: \(error)")
            default:
                throw LocationClientError.invalidReply("expected a VERSION greeting, got \(line.excerpt(80))")
            }
            guard version.protocolMajor == supportedProtocolMajor else {
                throw LocationClientError.protocolMismatch(serverMajor: version.protocolMajor,
                                                           supportedMajor: supportedProtocolMajor)
            }
            return LocationClient(connection: connection, socketPath: path, serverRelease: version.release,
                                  serverProtocolMinor: version.protocolMinor ?? 0)
        } catch {
            connection.close()
            throw error
        }
    }

    /// Subscribes to location updates (`WATCH`; Core Location's `startUpdatingLocation` and
    /// `CLLocationUpdate.liveUpdates`).
    ///
    /// The daemon sends the latest known fix at once when it has one, then new ones as they come,
    /// filtered by `minInterval` and `distanceFilter`. Fix-state changes arrive as `.state`: from the
    /// daemon's `STATE` objects, or a `TPV` without a fix (mode 1); only changes are reported. When nothing
    /// comes for now though the client is authorized (reduced accuracy between paced reports, When In Use
    /// without an active session), `.waiting` says why and until when.
    /// Authorization changes the daemon announces unasked (a grant revoked or expired) arrive as
    /// `.authorization`; ask for authorization first (`requestAuthorization`), since the daemon refuses
    /// a subscription without it (the sequence then yields the status and throws). A
    /// connection has one subscription: calling `updates` again replaces it, finishing the earlier
    /// sequence. Ending the iteration (break, task cancellation, dropping the sequence) unsubscribes.
    /// If the consumer falls behind, the oldest buffered updates beyond 100 are dropped.
    /// - Parameters:
    ///   - minInterval: at most one location per this many seconds (≥ 0; 0 = every fix).
    ///   - distanceFilter: only report a location this many metres or more from the last reported one
    ///     (≥ 0; 0 = every fix; Core Location's `distanceFilter`).
    ///   - satellites: also deliver `.satellites` (the `SKY` after each location) at full accuracy.
    /// - Returns: the updates. The sequence keeps this client alive while it exists. It ends without
    ///   an error after `close()`, and throws `LocationClientError`: `.server(request: "WATCH", ...)`
    ///   when the daemon refuses the subscription (bad arguments, not authorized), `.disconnected` when
    ///   the daemon goes away.
    public func updates(minInterval: Double = 0, distanceFilter: Double = 0, satellites: Bool = false)
        -> AsyncThrowingStream<LocationUpdate, any Error>
    {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: LocationUpdate.self, throwing: (any Error).self, bufferingPolicy: .bufferingNewest(100))
        let id = connection.makeWatchID()
        continuation.onTermination = { [self] _ in
            connection.stopWatch(id: id, request: Self.watchRequest(enable: false))
        }
        connection.startWatch(id: id, continuation: continuation,
                              request: Self.watchRequest(enable: true, minInterval: minInterval,
                                                         distanceFilter: distanceFilter, satellites: satellites),
                              satellites: satellites)
        return stream
    }

    /// Asks for one fresh location (`POLL`; Core Location's `requestLocation()`): the first fix the
    /// daemon gets after the request.
    /// - Parameter timeout: seconds the daemon waits for a fix, 0 < timeout ≤ 300.
    /// - Returns: the location.
    /// - Throws: `LocationClientError.server(request: "POLL", message:)` when the daemon answers with an
    ///   `ERROR` — `"no fix within N s"` when no fix came in time (`meansNoFixInTime` is true), or a
    ///   refusal (bad timeout, not authorized); `.paced` at once when the client sees reduced accuracy
    ///   and its next report is not due within `timeout`, or when it was due and no fix came in the 2.5 s the
    ///   daemon then waits (`meansNoFixInTime` true, `"no fix yet; at reduced accuracy …"`); `.timedOut` when no answer came within `timeout` plus
    ///   `replyGracePeriod`; `.disconnected`; `.invalidReply`; `CancellationError`.
    public func requestLocation(timeout: Double = 10) async throws -> Location {
        let line = try await connection.roundTrip(Request.poll(timeout: timeout).encoded(), replyClass: "POLL",
                                                  timeout: max(0, timeout) + Self.replyGracePeriod)
        guard case .poll(let reply)? = line.message else {
            throw LocationClientError.invalidReply("unreadable POLL reply")
        }
        guard let tpv = reply.tpv.first else {
            throw LocationClientError.invalidReply("POLL reply without a TPV")
        }
        let json = JSONText.objectElements(ofArrayMember: "tpv", in: line.bytes)?.first
            .map { String(decoding: $0, as: UTF8.self) }
        guard let location = tpv.location(json: json) else {
            throw LocationClientError.invalidReply("POLL reply TPV without a position")
        }
        return location
    }

    /// Asks for the daemon's state (`STATUS`): fix mode, clients, receivers.
    /// - Parameter timeout: seconds to wait for the reply.
    /// - Returns: the status, receivers decoded.
    /// - Throws: `LocationClientError.server(request: "STATUS", ...)`, `.timedOut`, `.disconnected`,
    ///   `.invalidReply`; `CancellationError`.
    public func status(timeout: Double = 10) async throws -> DaemonStatus {
        let line = try await connection.roundTrip(Request.status.encoded(), replyClass: "STATUS", timeout: timeout)
        guard case .status(let reply)? = line.message else {
            throw LocationClientError.invalidReply("unreadable STATUS reply")
        }
        return reply.status(json: line.text)
    }

    /// Closes the connection: calls still waiting fail with `.disconnected`, a subscription's sequence
    /// ends normally. Closing twice is harmless.
    public func close() {
        connection.close()
    }

    static func watchRequest(enable: Bool, minInterval: Double = 0, distanceFilter: Double = 0, satellites: Bool = false) -> [UInt8] {
        Request.watch(enable: enable, minInterval: minInterval, distanceFilter: distanceFilter, satellites: satellites).encoded()
    }
}
