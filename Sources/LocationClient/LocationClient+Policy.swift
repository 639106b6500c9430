import LocationCore
import LocationWire

// The permission policy from the client's side (docs/PROTOCOL.md "Authorization"), and the agent's and
// administrator's requests ("Agents and administrators"), which the daemon allows for root and its
// `admin-group` only.

extension LocationClient {
    /// Seconds the authorization calls wait by default: the daemon may ask an agent first and waits up
    /// to its `ask-timeout` (30 s unless configured) for an answer; `replyGracePeriod` is added.
    public static let authorizationTimeout = 60.0

    /// Asks for authorization to see locations (`AUTHORIZE`; Core Location's
    /// `requestWhenInUseAuthorization` / `requestAlwaysAuthorization`). The daemon decides by its
    /// rules and stored grants, or asks an agent (a person) and waits for the answer.
    ///
    /// A refusal is not an error: the returned status says it (`denied`, `restricted`, or
    /// `notDetermined`) with the daemon's reason, e.g. "no agent is running to ask".
    /// - Parameters:
    ///   - kind: `.once` for this connection only, `.persistent` to be remembered.
    ///   - accuracy: the most precise the client wants; the daemon's rule may allow less.
    ///   - name: display text for the agent (e.g. the program's name); never used to decide.
    ///   - timeout: seconds to wait for the answer (plus `replyGracePeriod`).
    /// - Returns: the authorization now in force.
    /// - Throws: `LocationClientError.server(request: "AUTHORIZE", ...)` for a malformed request,
    ///   `.timedOut`, `.disconnected`, `.invalidReply`; `CancellationError`.
    public func requestAuthorization(_ kind: AuthorizationKind = .once, accuracy: AccuracyAuthorization = .fullAccuracy,
                                     name: String? = nil,
                                     timeout: Double = LocationClient.authorizationTimeout) async throws -> Authorization {
        let request = Request.authorize(kind: kind, accuracy: accuracy, name: name)
        return try await authorizationRoundTrip(request.encoded(), requestClass: "AUTHORIZE", timeout: timeout)
    }

    /// This client's authorization as it stands (`AUTHORIZATION`; Core Location's
    /// `authorizationStatus` and `accuracyAuthorization`).
    /// - Parameter timeout: seconds to wait for the reply (plus `replyGracePeriod`).
    /// - Returns: the authorization.
    /// - Throws: `LocationClientError.timedOut`, `.disconnected`, `.invalidReply`; `CancellationError`.
    public func authorizationStatus(timeout: Double = 10) async throws -> Authorization {
        return try await authorizationRoundTrip(Request.authorization.encoded(), requestClass: "AUTHORIZATION", timeout: timeout)
    }

    /// Asks for full accuracy for this connection, citing a purpose key declared for this client in the
    /// daemon's configuration (`FULLACCURACY`; Core Location's
    /// `requestTemporaryFullAccuracyAuthorization(withPurposeKey:)`). The agent sees the purpose text.
    /// For a client authorized at reduced accuracy; one with full accuracy gets its authorization back
    /// unchanged.
    /// - Parameters:
    ///   - purposeKey: the key, e.g. `"Navigation"` (`purpose.Navigation = text` in the config).
    ///   - timeout: seconds to wait for the answer (plus `replyGracePeriod`).
    /// - Returns: the authorization now in force: `accuracy` is `.fullAccuracy` when granted, still
    ///   `.reducedAccuracy` when the agent refused; a client not authorized at all gets its status.
    /// - Throws: `LocationClientError.server(request: "FULLACCURACY", message:)` when the key is not
    ///   declared for this client (no agent is asked); `.timedOut`, `.disconnected`, `.invalidReply`;
    ///   `CancellationError`.
    public func requestTemporaryFullAccuracy(purposeKey: String,
                                             timeout: Double = LocationClient.authorizationTimeout) async throws -> Authorization {
        return try await authorizationRoundTrip(Request.fullAccuracy(purposeKey: purposeKey).encoded(), requestClass: "FULLACCURACY", timeout: timeout)
    }

    private func authorizationRoundTrip(_ request: [UInt8], requestClass: String, timeout: Double) async throws -> Authorization {
        let line = try await connection.roundTrip(request, requestClass: requestClass, replyClass: "AUTHORIZATION",
                                                  timeout: max(0, timeout) + Self.replyGracePeriod)
        guard case .authorization(let reply)? = line.message else {
            throw LocationClientError.invalidReply("AUTHORIZATION without a known status: \(line.excerpt(120))")
        }
        return reply.authorization(json: line.text)
    }

    // MARK: - Agent

    /// Registers this connection as an agent (`AGENT`; root or the daemon's `admin-group`): the daemon
    /// then sends it every authorization request it has to ask a person about, and tells it how each
    /// ended. Answer with `answer(id:answer:accuracy:)`.
    ///
    /// The connection stays an agent until it closes (`close()`); ending the iteration only stops the
    /// events. A second call replaces the stream, which ends. The stream keeps this client alive while
    /// it exists; events beyond what the consumer has taken are buffered.
    /// - Parameter timeout: seconds to wait for the daemon's acknowledgement.
    /// - Returns: the events, `.ask` and `.answered`, once the daemon has accepted the agent. The
    ///   sequence ends without an error after `close()`, and throws `.disconnected` when the daemon
    ///   goes away.
    /// - Throws: `LocationClientError.server(request: "AGENT", message: "permission denied: ...")` for
    ///   a user who may not be an agent (`meansNotAuthorized`); `.timedOut`, `.disconnected`;
    ///   `CancellationError`.
    public func registerAgent(timeout: Double = 10) async throws -> AsyncThrowingStream<AgentEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: AgentEvent.self, throwing: (any Error).self)
        let id = connection.makeWatchID()
        continuation.onTermination = { [self] _ in connection.stopAgentStream(id: id) }
        connection.startAgentStream(id: id, continuation: continuation)
        do {
            _ = try await connection.roundTrip(Request.agent.encoded(), replyClass: "AGENT",
                                               timeout: timeout)
        } catch {
            connection.stopAgentStream(id: id, error: error)
            throw error
        }
        return stream
    }

    /// Answers an agent's question (`ANSWER`). The first answer wins; every agent is then told
    /// (`ANSWERED`, also in the `registerAgent()` stream).
    /// - Parameters:
    ///   - id: the question's id (`AgentQuestion.id`).
    ///   - answer: allow once, allow always or deny.
    ///   - accuracy: `.reducedAccuracy` to grant less than asked; nil to grant what was asked.
    ///   - timeout: seconds to wait for the daemon's confirmation.
    /// - Returns: how the question ended: this answer, or — when another agent or the timeout came
    ///   first — that outcome (`answer` `"timeout"`, `"withdrawn"`, or another agent's answer).
    /// - Throws: `LocationClientError.server(request: "ANSWER", message:)` when no such question waits
    ///   (already answered, withdrawn or timed out) or this connection is not an agent; `.timedOut`,
    ///   `.disconnected`; `CancellationError`.
    @discardableResult
    public func answer(id: Int, answer: AgentAnswer, accuracy: AccuracyAuthorization? = nil,
                       timeout: Double = 10) async throws -> AnsweredNotice {
        let request = Request.answer(id: id, answer: answer, accuracy: accuracy)
        let line = try await connection.roundTrip(request.encoded(), requestClass: "ANSWER", replyClass: "ANSWERED",
                                                  replyID: id, timeout: timeout)
        guard case .answered(let reply)? = line.message else {
            throw LocationClientError.invalidReply("unreadable ANSWERED")
        }
        return reply
    }

    // MARK: - Administration

    /// The daemon's grants (`GRANTS`; root or `admin-group`): stored decisions, pre-approved one-time
    /// grants and the live one-time grants of connected clients.
    /// - Parameter timeout: seconds to wait for the reply.
    /// - Throws: `LocationClientError.server(request: "GRANTS", message: "permission denied: ...")`
    ///   (`meansNotAuthorized`), `.timedOut`, `.disconnected`, `.invalidReply`; `CancellationError`.
    public func grants(timeout: Double = 10) async throws -> GrantList {
        try await grantsRoundTrip(Request.grants.encoded(), requestClass: "GRANTS", timeout: timeout)
    }

    /// Grants ahead of asking (`GRANT`; root or `admin-group`). `.persistent` stores an "allow always"
    /// (replacing the subject's stored decision, a refusal included); `.once` pre-approves the
    /// subject's next connection that asks for one-time access ("Allow Once" pressed ahead).
    /// - Parameters:
    ///   - subject: the executable or unit (of one user, or of every user when none is given), or the user.
    ///   - kind: `.persistent` or `.once`.
    ///   - accuracy: the accuracy granted.
    ///   - expires: seconds from now until the grant lapses; nil: never.
    ///   - standing: with `.once`, a standing approval: every later connection of the subject that asks
    ///     for one-time access gets a one-time grant without asking, until revoked (protocol 1.3).
    ///   - timeout: seconds to wait for the reply.
    /// - Returns: the grants afterwards.
    /// - Throws: `LocationClientError.server(request: "GRANT", ...)` (permission denied, bad
    ///   arguments), `.timedOut`, `.disconnected`, `.invalidReply`; `CancellationError`.
    @discardableResult
    public func grant(subject: GrantSubject, kind: AuthorizationKind = .persistent,
                      accuracy: AccuracyAuthorization = .fullAccuracy, expires: Double? = nil, standing: Bool = false,
                      timeout: Double = 10) async throws -> GrantList {
        let request = Request.grant(subject: subject, kind: kind, accuracy: accuracy, expires: expires, standing: standing)
        return try await grantsRoundTrip(request.encoded(), requestClass: "GRANT", timeout: timeout)
    }

    /// Removes every grant and stored decision of `subject` and ends its live one-time grants
    /// (`REVOKE`; root or `admin-group`). Its clients stop receiving locations at once and are told
    /// their new status (`LocationUpdate.authorization`).
    /// - Parameters:
    ///   - subject: the executable, unit or user.
    ///   - timeout: seconds to wait for the reply.
    /// - Returns: the grants afterwards.
    /// - Throws: `LocationClientError.server(request: "REVOKE", ...)`, `.timedOut`, `.disconnected`,
    ///   `.invalidReply`; `CancellationError`.
    @discardableResult
    public func revoke(subject: GrantSubject, timeout: Double = 10) async throws -> GrantList {
        return try await grantsRoundTrip(Request.revoke(subject: subject).encoded(), requestClass: "REVOKE", timeout: timeout)
    }

    /// The audit trail (`AUDIT`; root or `admin-group`): every decision, each grant's first delivery of
    /// a location, every grant and revoke, oldest first — all of it, page after page (protocol 1.2: each
    /// reply holds one page and the cursor of the next; a 1.1 daemon's single reply is the only page).
    /// - Parameters:
    ///   - since: Unix seconds; only events at or after it. nil: all the daemon kept.
    ///   - timeout: seconds to wait for each reply.
    /// - Returns: the events.
    /// - Throws: `LocationClientError.server(request: "AUDIT", ...)`, `.timedOut`, `.disconnected`,
    ///   `.invalidReply` (also for a reply whose cursor does not move on); `CancellationError`.
    public func audit(since: Double? = nil, timeout: Double = 10) async throws -> [AuditEvent] {
        var events: [AuditEvent] = []
        var cursor: String? = nil
        repeat {
            let request = Request.audit(since: since, cursor: cursor)
            let line = try await connection.roundTrip(request.encoded(), replyClass: "AUDIT", timeout: timeout)
            guard let elements = JSONText.objectElements(ofArrayMember: "events", in: line.bytes) else {
                throw LocationClientError.invalidReply("AUDIT reply without an events array")
            }
            guard case .audit(let reply)? = line.message, reply.events.count == elements.count else {
                throw LocationClientError.invalidReply("unreadable AUDIT reply: \(line.result)")
            }
            events += zip(reply.events, elements).map { event, text in event.event(json: String(decoding: text, as: UTF8.self)) }
            if let next = reply.next, next == cursor || reply.events.isEmpty {
                throw LocationClientError.invalidReply("AUDIT reply whose next page (\(next)) does not move on")
            }
            cursor = reply.next
        } while cursor != nil
        return events
    }

    private func grantsRoundTrip(_ request: [UInt8], requestClass: String, timeout: Double) async throws -> GrantList {
        let line = try await connection.roundTrip(request, requestClass: requestClass, replyClass: "GRANTS", timeout: timeout)
        guard case .grants(let reply)? = line.message else {
            throw LocationClientError.invalidReply("unreadable GRANTS reply")
        }
        return reply.list(json: line.text)
    }
}
