#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import LocationCore
import LocationPosix
import LocationWire

/// One connection to the daemon: the socket, a reader thread that splits what arrives into lines and
/// routes each to whoever waits for it, and the waiters.
///
/// Routing follows the protocol: replies carry no request id, but each request class has its reply
/// class (`POLL` → `POLL`, `STATUS` → `STATUS`; `AUTHORIZE`, `AUTHORIZATION` and `FULLACCURACY` →
/// `AUTHORIZATION`; `GRANTS`, `GRANT` and `REVOKE` → `GRANTS`; `AGENT` → `AGENT`; `AUDIT` → `AUDIT`;
/// `ANSWER` → the `ANSWERED` with its id) and every `ERROR` names its request's class, and the server
/// answers a connection's requests in order; so a reply goes to the oldest waiter of its class, an
/// `ERROR` to the oldest waiter of its request's class.
/// `TPV` and `STATE` go to the subscription (`updates`), at most one per connection as on the server,
/// and so does an `AUTHORIZATION` no request waits for (the daemon telling of a status change).
/// `ASK` and `ANSWERED` go to the agent stream (`registerAgent`), at most one per connection.
///
/// Lifetime: the reader thread holds the connection until the socket reaches end of file; `close()`
/// shuts the socket down to get there. The descriptor is closed when the last reference goes, so no
/// other thread can ever write to a reused descriptor number.
final class Connection: Sendable {
    /// The longest server line read, bytes (a `STATUS` with many receivers stays far below it).
    static let maximumLineLength = 1 << 20

    /// The socket.
    let fd: Int32

    struct Waiter: Sendable {
        let id: Int
        /// The class of the request, which an `ERROR` names.
        let requestClass: String
        /// The class of the reply.
        let replyClass: String
        /// For `ANSWERED`: the id the reply must carry.
        let replyID: Int?
        let continuation: CheckedContinuation<ServerLine, any Error>
    }

    struct AgentSubscriber: Sendable {
        let id: Int
        let continuation: AsyncThrowingStream<AgentEvent, any Error>.Continuation
    }

    struct Watcher: Sendable {
        let id: Int
        let continuation: AsyncThrowingStream<LocationUpdate, any Error>.Continuation
        /// The fix state last reported to it; nil before the first report.
        var fix: Bool? = nil
        var reason: String? = nil
        /// It asked for satellites (`WATCH` `satellites`): `SKY` lines become `.satellites`.
        var satellites = false
    }

    struct State: Sendable {
        /// Set once, when the connection ended: what every later call fails with.
        var ended: LocationClientError? = nil
        var closedByClient = false
        var nextID = 1
        /// Ids handed out whose waiter is not registered yet, and failures (timeout, cancellation)
        /// that came first.
        var unregistered: Set<Int> = []
        var earlyFailures: [Int: any Error] = [:]
        /// Waiting requests, oldest first.
        var waiters: [Waiter] = []
        var watcher: Watcher? = nil
        /// The agent stream, when this connection registered as an agent.
        var agent: AgentSubscriber? = nil
        /// Whether the first line (the greeting) has arrived; the greeting itself while nobody waits for it.
        var greeted = false
        var greeting: Result<ServerLine, LocationClientError>? = nil
        /// An `ERROR` no request claimed (request `"?"`): reported instead of `.disconnected` if the
        /// server then closes the connection (too many clients, flooding).
        var unroutedError: LocationClientError? = nil
        /// `ERROR`s about `FULLACCURACY` still to come after the `AUTHORIZATION` that answered the
        /// request, to drop: when an agent refuses temporary full accuracy, the daemon sends the
        /// client's (unchanged, reduced) authorization and then an `ERROR` saying so.
        var staleFullAccuracyErrors = 0
    }

    let state = Locked(State())
    /// Held while registering a waiter and writing its request, so that waiters queue in the order
    /// their requests reach the server.
    private let sendLock = Locked(())

    /// Takes ownership of the connected socket `fd`.
    init(fd: Int32) {
        self.fd = fd
    }

    deinit {
        FileDescriptorOps.close(fd)
    }

    /// Starts the reader thread. Returns the errno when no thread could be created.
    func startReader() -> Errno? {
        spawnThread { [self] in readLoop() }
    }

    /// Ends the connection from this side: pending calls fail with `.disconnected`, a subscription
    /// finishes without an error.
    func close() {
        state.withLock { $0.closedByClient = true }
        UnixSocketOps.shutdown(fd)
    }

    // MARK: Requests

    /// Sends `request` (a JSON line, or nil to only wait) and waits for the reply line of class
    /// `replyClass`.
    /// - Parameters:
    ///   - request: the request line with its newline.
    ///   - requestClass: the request's class, which an `ERROR` about it names; nil when it is
    ///     `replyClass`.
    ///   - replyClass: the class of the expected reply (`"VERSION"`, `"POLL"`, `"STATUS"`,
    ///     `"AUTHORIZATION"`, `"GRANTS"`, ...).
    ///   - replyID: for replies that carry an id (`ANSWERED`), the one to wait for.
    ///   - timeout: seconds to wait for the reply.
    /// - Returns: the reply line (without its newline) and the message LocationWire read in it.
    /// - Throws: `LocationClientError` (`.server` for an `ERROR` naming the request, `.timedOut`,
    ///   `.disconnected`), `CancellationError` when the task is cancelled.
    func roundTrip(_ request: [UInt8]?, requestClass: String? = nil, replyClass: String, replyID: Int? = nil,
                   timeout: Double) async throws -> ServerLine {
        let id = state.withLock { s in
            let id = s.nextID
            s.nextID += 1
            s.unregistered.insert(id)
            return id
        }
        let timer = DispatchWorkItem { [self] in fail(id, with: LocationClientError.timedOut) }
        DispatchQueue.global().asyncAfter(deadline: .now() + max(0, min(timeout, 1e6)), execute: timer)
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                register(Waiter(id: id, requestClass: requestClass ?? replyClass, replyClass: replyClass,
                                replyID: replyID, continuation: continuation), request: request)
            }
        } onCancel: {
            fail(id, with: CancellationError())
        }
    }

    private func register(_ waiter: Waiter, request: [UInt8]?) {
        sendLock.withLock { _ in
            let immediate: Result<ServerLine, any Error>? = state.withLock { s in
                s.unregistered.remove(waiter.id)
                if let early = s.earlyFailures.removeValue(forKey: waiter.id) { return .failure(early) }
                if waiter.replyClass == "VERSION", let greeting = s.greeting {
                    s.greeting = nil
                    return greeting.mapError { $0 }
                }
                if let ended = s.ended { return .failure(ended) }
                s.waiters.append(waiter)
                return nil
            }
            if let immediate {
                waiter.continuation.resume(with: immediate)
                return
            }
            if let request, case .failure(let e) = UnixSocketOps.sendAll(fd, request) {
                fail(waiter.id, with: e == .wouldBlock ? LocationClientError.timedOut : .disconnected)
            }
        }
    }

    /// Fails the waiter `id` with `error`, if it still waits (or has not registered yet).
    private func fail(_ id: Int, with error: any Error) {
        let continuation = state.withLock { s -> CheckedContinuation<ServerLine, any Error>? in
            if let index = s.waiters.firstIndex(where: { $0.id == id }) {
                return s.waiters.remove(at: index).continuation
            }
            if s.unregistered.contains(id), s.earlyFailures[id] == nil { s.earlyFailures[id] = error }
            return nil
        }
        continuation?.resume(throwing: error)
    }

    /// Hands `result` to the oldest waiter for the reply class `replyClass` (and, when the reply carries
    /// one, `replyID`); returns false when there is none.
    @discardableResult
    func resolve(_ replyClass: String, id replyID: Int? = nil,
                         with result: Result<ServerLine, LocationClientError>) -> Bool {
        let waiter = takeWaiter(replyClass: replyClass, id: replyID)
        waiter?.continuation.resume(with: result.mapError { $0 })
        return waiter != nil
    }

    /// Removes and returns the oldest waiter for the reply class `replyClass` (and `replyID`).
    func takeWaiter(replyClass: String, id replyID: Int?) -> Waiter? {
        state.withLock { s -> Waiter? in
            guard let index = s.waiters.firstIndex(where: {
                $0.replyClass == replyClass && ($0.replyID == nil || $0.replyID == replyID)
            }) else { return nil }
            return s.waiters.remove(at: index)
        }
    }

    /// Fails the oldest waiter whose request is of class `requestClass` with `error` (an `ERROR` naming
    /// that class); returns false when there is none.
    @discardableResult
    func reject(_ requestClass: String, with error: LocationClientError) -> Bool {
        let continuation = state.withLock { s -> CheckedContinuation<ServerLine, any Error>? in
            guard let index = s.waiters.firstIndex(where: { $0.requestClass == requestClass }) else { return nil }
            return s.waiters.remove(at: index).continuation
        }
        continuation?.resume(throwing: error)
        return continuation != nil
    }

    // MARK: Subscription

    /// Makes `continuation` the connection's subscription, finishing the one it replaces, and sends
    /// `request` (the WATCH line).
    func startWatch(id: Int, continuation: AsyncThrowingStream<LocationUpdate, any Error>.Continuation,
                    request: [UInt8], satellites: Bool = false) {
        var replaced: Watcher? = nil
        var failure: LocationClientError? = nil
        sendLock.withLock { _ in
            state.withLock { s in
                if let ended = s.ended {
                    failure = ended
                } else {
                    replaced = s.watcher
                    s.watcher = Watcher(id: id, continuation: continuation, satellites: satellites)
                }
            }
            if failure == nil, case .failure(let e) = UnixSocketOps.sendAll(fd, request) {
                failure = e == .wouldBlock ? .timedOut : .disconnected
                state.withLock { s in if s.watcher?.id == id { s.watcher = nil } }
            }
        }
        replaced?.continuation.finish()
        if let failure { continuation.finish(throwing: failure) }
    }

    /// Ends subscription `id` if it is still the current one, sending `request` (WATCH disable) while
    /// the connection lasts.
    func stopWatch(id: Int, request: [UInt8]) {
        sendLock.withLock { _ in
            let current = state.withLock { s -> Bool in
                guard s.watcher?.id == id else { return false }
                s.watcher = nil
                return s.ended == nil
            }
            if current { _ = UnixSocketOps.sendAll(fd, request) }
        }
    }

    /// A fresh id for a subscription.
    func makeWatchID() -> Int {
        state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
    }

    // MARK: Agent stream

    /// Makes `continuation` the connection's agent stream, finishing the one it replaces; false (and
    /// `continuation` finished with the error) when the connection has ended.
    @discardableResult
    func startAgentStream(id: Int, continuation: AsyncThrowingStream<AgentEvent, any Error>.Continuation) -> Bool {
        var replaced: AgentSubscriber? = nil
        let failure = state.withLock { s -> LocationClientError? in
            if let ended = s.ended { return ended }
            replaced = s.agent
            s.agent = AgentSubscriber(id: id, continuation: continuation)
            return nil
        }
        replaced?.continuation.finish()
        if let failure { continuation.finish(throwing: failure) }
        return failure == nil
    }

    /// Ends agent stream `id` if it is still the current one, with `error` (nil: normally).
    func stopAgentStream(id: Int, error: (any Error)? = nil) {
        let current = state.withLock { s -> AgentSubscriber? in
            guard s.agent?.id == id else { return nil }
            defer { s.agent = nil }
            return s.agent
        }
        current?.continuation.finish(throwing: error)
    }

    // MARK: Reading

    private func readLoop() {
        var framer = LineFramer(maximumLineLength: Self.maximumLineLength)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let result = buffer.withUnsafeMutableBytes { FileDescriptorOps.read(fd, into: $0) }
            switch result {
            case .success(0):
                end(.disconnected)
                return
            case .success(let count):
                do {
                    try framer.append(buffer[0..<count]) { handle(ServerLine($0)) }
                } catch {
                    end(.invalidReply("a line longer than \(error.maximumLineLength) bytes"))
                    return
                }
            case .failure:
                // ECONNRESET and the like: the server is gone.
                end(.disconnected)
                return
            }
        }
    }

    /// The connection is over: fail every waiter, finish the subscription, shut the socket down.
    func end(_ error: LocationClientError) {
        let taken = state.withLock { s -> (LocationClientError, Bool, [Waiter], Watcher?, AgentSubscriber?)? in
            guard s.ended == nil else { return nil }
            let final = s.closedByClient ? .disconnected : (s.unroutedError ?? error)
            s.ended = final
            if !s.greeted {
                s.greeted = true
                s.greeting = .failure(final)
            }
            defer {
                s.waiters = []
                s.watcher = nil
                s.agent = nil
            }
            return (final, s.closedByClient, s.waiters, s.watcher, s.agent)
        }
        UnixSocketOps.shutdown(fd)
        guard let (final, closedByClient, waiters, watcher, agent) = taken else { return }
        for waiter in waiters { waiter.continuation.resume(throwing: final) }
        if closedByClient {
            watcher?.continuation.finish()
            agent?.continuation.finish()
        } else {
            watcher?.continuation.finish(throwing: final)
            agent?.continuation.finish(throwing: final)
        }
    }

    /// The id in an `ANSWER` error's message, `"no question 7 is waiting ..."`; nil when it names none.
    static func questionID(in message: String) -> Int? {
        guard let range = message.firstRange(of: "question ") else { return nil }
        let digits = message[range.upperBound...].prefix { $0.isASCII && $0.isNumber }
        return Int(digits)
    }

    static func excerpt(_ line: [UInt8]) -> String {
        let text = String(decoding: line.prefix(80), as: UTF8.self)
        return line.count > 80 ? text + "…" : text
    }
}

/// Runs `body` on a new detached thread (`PosixThread.detach`, the project's one trampoline); returns the
/// error number when the thread could not be created.
private func spawnThread(_ body: @escaping @Sendable () -> Void) -> Errno? {
    do {
        try PosixThread.detach(body)
        return nil
    } catch {
        return error
    }
}
