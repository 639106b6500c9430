import LocationWire

// Where each line from the server goes (the routing rules are in `Connection`'s comment).
extension Connection {
    /// Routes one line from the server (see `Connection`): a reply to its waiter, `TPV`/`STATE`/`SKY` and
    /// unasked `AUTHORIZATION` to the subscription, `ASK`/`ANSWERED` to the agent stream.
    func handle(_ line: ServerLine) {
        guard let replyClass = line.className else {
            end(.invalidReply("not a JSON object: \(Self.excerpt(line.bytes))"))
            return
        }
        let first = state.withLock { s -> Bool in
            defer { s.greeted = true }
            return !s.greeted
        }
        if first {
            let greeting: Result<ServerLine, LocationClientError> =
                replyClass == "ERROR" ? .failure(serverError(line)) : .success(line)
            if !resolve("VERSION", with: greeting) { state.withLock { $0.greeting = greeting } }
            return
        }
        switch replyClass {
        case "TPV", "STATE", "SKY":
            deliverToWatcher(line)
        case "POLL", "STATUS", "AGENT", "GRANTS", "AUDIT", "SHARE":
            resolve(replyClass, with: .success(line))
        case "AUTHORIZATION":
            // A reply when a request waits for one; otherwise the daemon telling of a change.
            guard let waiter = takeWaiter(replyClass: replyClass, id: nil) else {
                deliverAuthorization(line)
                return
            }
            if waiter.requestClass == "FULLACCURACY", case .authorization(let reply)? = line.message,
               reply.status.isAuthorized, reply.accuracy != .full {
                // Refused by the agent: the daemon follows this reply with an ERROR about the same
                // request, which must not fail a later FULLACCURACY.
                state.withLock { $0.staleFullAccuracyErrors += 1 }
            }
            waiter.continuation.resume(returning: line)
        case "ASK":
            guard case .ask(let ask)? = line.message else { return }
            deliverToAgent(.ask(ask.question(json: line.text)))
        case "ANSWERED":
            guard case .answered(let reply)? = line.message else { return }
            resolve(replyClass, id: reply.id, with: .success(line))
            deliverToAgent(.answered(reply))
        case "ERROR":
            let error = serverError(line)
            guard let request = error.serverRequest else { return }
            switch request {
            case "POLL", "STATUS":
                if !reject(request, with: error) { state.withLock { $0.unroutedError = error } }
            case "WATCH":
                let watcher = state.withLock { s -> Watcher? in
                    defer { s.watcher = nil }
                    return s.watcher
                }
                if let watcher { watcher.continuation.finish(throwing: error) }
            case "FULLACCURACY" where state.withLock({ s in
                guard s.staleFullAccuracyErrors > 0 else { return false }
                s.staleFullAccuracyErrors -= 1
                return true
            }):
                break
            case "ANSWER":
                // "no question 7 is waiting ...": the question may have ended before the daemon read the
                // answer (timed out, withdrawn, another agent first), and that ANSWERED already
                // completed the call; then this ERROR is stale.
                guard case let .server(_, message) = error, let id = Self.questionID(in: message) else {
                    reject(request, with: error)
                    return
                }
                let waiter = state.withLock { s -> Waiter? in
                    guard let index = s.waiters.firstIndex(where: { $0.requestClass == request && $0.replyID == id }) else { return nil }
                    return s.waiters.remove(at: index)
                }
                waiter?.continuation.resume(throwing: error)
            case "AUTHORIZE", "AUTHORIZATION", "FULLACCURACY", "AGENT", "GRANTS", "GRANT", "REVOKE", "AUDIT", "SHARE":
                // When no such request waits, there is nobody to tell.
                reject(request, with: error)
            default:
                state.withLock { $0.unroutedError = error }
            }
        default:
            // WATCH acknowledgements, and classes a newer daemon may add.
            break
        }
    }

    /// An `AUTHORIZATION` no request waited for: a `.authorization` event for the subscription.
    private func deliverAuthorization(_ line: ServerLine) {
        guard case .authorization(let reply)? = line.message else { return }
        let continuation = state.withLock { $0.watcher?.continuation }
        continuation?.yield(.authorization(reply.authorization(json: line.text)))
    }

    private func deliverToAgent(_ event: AgentEvent) {
        let continuation = state.withLock { $0.agent?.continuation }
        continuation?.yield(event)
    }

    /// The `ERROR` in `line`; an unreadable one names request `"?"` with an empty message.
    private func serverError(_ line: ServerLine) -> LocationClientError {
        guard case .error(let reply)? = line.message else { return .server(request: "?", message: "") }
        if let wait = reply.nextReportIn {
            return .paced(request: reply.request ?? "?", message: reply.message ?? "", nextReportIn: wait)
        }
        return .server(request: reply.request ?? "?", message: reply.message ?? "")
    }

    /// Turns a TPV, STATE or SKY line into subscription events; only fix-state changes become `.state`.
    private func deliverToWatcher(_ line: ServerLine) {
        guard state.withLock({ $0.watcher != nil }) else { return }
        var location: Location? = nil
        var fix: Bool
        var reason: String? = nil
        let replyClass: String
        switch line.message {
        case .tpv(let tpv)?:
            replyClass = "TPV"
            location = tpv.location(json: line.text)
            if location == nil && tpv.mode != .noFix { return }  // 2D/3D without a position: nothing to say
            fix = location != nil
        case .state(let reply)? where reply.waiting != nil:
            // Not a change of the fix: why nothing comes for now, each time the daemon says it.
            let continuation = state.withLock { $0.watcher?.continuation }
            continuation?.yield(.waiting(Waiting(reply, waiting: reply.waiting ?? "", json: line.text)))
            return
        case .state(let reply)?:
            replyClass = "STATE"
            fix = reply.fix
            reason = reply.reason
        case .sky(let sky)?:
            let continuation = state.withLock { $0.watcher.flatMap { $0.satellites ? $0.continuation : nil } }
            continuation?.yield(.satellites(SatelliteView(sky, json: line.text)))
            return
        default:
            return
        }
        let (continuation, events) = state.withLock { s -> (AsyncThrowingStream<LocationUpdate, any Error>.Continuation?, [LocationUpdate]) in
            guard var watcher = s.watcher else { return (nil, []) }
            var events: [LocationUpdate] = []
            // The first report says "no fix yet" when there is none; a fix is news only after one was lost.
            let changed = fix
                ? watcher.fix == false
                : watcher.fix != false || (replyClass == "STATE" && reason != nil && reason != watcher.reason)
            if changed {
                events.append(.state(fix: fix, reason: fix ? nil : reason))
                watcher.fix = fix
                watcher.reason = fix ? nil : reason
            }
            if let location { events.append(.location(location)) }
            s.watcher = watcher
            return (watcher.continuation, events)
        }
        for event in events { continuation?.yield(event) }
    }
}
