import LocationCore
import LocationPolicy
import LocationWire

/// The Publisher's decisions as the native front's messages (docs/PROTOCOL.md "Server messages"); a gpsd
/// client's go to `gpsdDeliver`.
extension ServerState {
    /// Turns the Publisher's decisions into messages.
    mutating func deliver(_ deliveries: [Delivery], at wall: Double) {
        var noFixReason: (full: String, reduced: String)?
        for delivery in deliveries {
            if case .audit(let event) = delivery {
                context.store.record(event, at: wall)
                continue
            }
            // Looked up once, by index, and read in place: `connections[id]?.gpsd` would copy the whole
            // connection for every client and fix.
            var wantsSatellites = false
            guard let id = delivery.client, let index = connections.index(forKey: id) else { continue }
            if Self.speaksGpsd(&connections.values[index]) {
                gpsdDeliver(delivery, at: wall)
                continue
            }
            wantsSatellites = Self.wantsSatellites(&connections.values[index])
            switch delivery {
            case let .report(id, accuracy):
                send(at: index, id, accuracy == .full && wantsSatellites ? publisher.fullReportWithSatellites() : publisher.reportBytes(accuracy),
                     isLocation: true)
            case let .pollReply(id, accuracy):
                // Encoded for this reply (POLLs are few; the stream's TPV is cached once per fix): the same TPV bytes.
                let tpv = publisher.reportFix(accuracy).map { [ServerMessage.TPV($0, accuracy: accuracy)] } ?? []
                send(id, ServerMessage.poll(.init(tpv: tpv)).encoded())
            case let .fixState(id, fix):
                // Full accuracy: a reduced client's fix is lost by `.silence(.noFix)`.
                if !fix, noFixReason == nil { noFixReason = self.noFixReasons() }
                tellFixState(at: index, id, fix: fix, reason: fix ? nil : noFixReason?.full)
            case let .noFixEpoch(id, lost):
                // STATE is a change of state: the first no-fix says it, a later epoch only a new reason (a receiver
                // gone, its fixes rejected), once.
                if noFixReason == nil { noFixReason = self.noFixReasons() }
                guard lost || connections.values[index].noFixReasonTold != noFixReason?.full else { break }
                tellFixState(at: index, id, fix: false, reason: noFixReason?.full)
            case let .authorization(id, state):
                send(id, ServerMessage.authorization(status: state.status, accuracy: state.accuracy, reason: state.reason, standing: state.standing, inUse: state.inUse))
            case let .watchEnded(id, state):
                send(id, ServerMessage.error(request: "WATCH", message: "not authorized: \(state.reason)"))
            case let .silence(id, silence):
                if case .noFix = silence, noFixReason == nil { noFixReason = self.noFixReasons() }
                send(id, Self.state(silence, noFixReason: noFixReason?.reduced ?? ""))
            case .audit:
                break
            }
        }
    }

    /// `STATE` with `fix` and, without one, `reason`, remembered so that a reason is told once.
    private mutating func tellFixState(at index: [Int: Connection].Index, _ id: Int, fix: Bool, reason: String?) {
        connections.values[index].noFixReasonTold = reason
        send(at: index, id, ServerMessage.state(fix: fix, reason: reason))
    }

    /// The `STATE` of a silence (docs/PROTOCOL.md "STATE"): `waiting` and its reason, with `nextReportIn` (seconds, whole,
    /// rounded up, as a POLL's) when a reduced report is due later.
    /// - Parameter noFixReason: why there is no fix, as a reduced client may be told (`noFixReasons`).
    static func state(_ silence: Silence, noFixReason: String) -> [UInt8] {
        switch silence {
        case .notInUse(let reason):
            return ServerMessage.state(fix: false, reason: reason, waiting: ServerMessage.State.insufficientlyInUse)
        case let .paced(wait, fix):
            let (seconds, text) = Self.due(wait)
            return ServerMessage.state(fix: fix, reason: "reduced accuracy: the next report is due " + text,
                                       waiting: ServerMessage.State.accuracyLimited, nextReportIn: Double(seconds))
        case .noFix(let wait):
            let (seconds, text) = Self.due(wait)
            return ServerMessage.state(fix: false, reason: noFixReason + "; at reduced accuracy the next report is due " + text,
                                       nextReportIn: Double(seconds))
        }
    }

    /// `wait` in whole seconds, rounded up, and in words: "in 14 min 58 s", or "now, with the next fix" at zero.
    static func due(_ wait: Duration) -> (seconds: Int, text: String) {
        let seconds = Int(wait.components.seconds) + (wait.components.attoseconds > 0 ? 1 : 0)
        return (seconds, seconds > 0 ? "in \(DurationText.minutesAndSeconds(seconds))" : "now, with the next fix")
    }

    /// Why there is no fix, from the receivers' snapshot: none configured, all unavailable (and why), fixes rejected by
    /// a plausibility rule (docs/RECEIVERS.md "Bad receivers"), or no fix. `full` names the rejection's reason, as STATUS
    /// shows it to full accuracy; `reduced` only its rule — the reason may tell of the fix (an impossible jump's speed),
    /// as STATUS hides it from reduced clients.
    func noFixReasons() -> (full: String, reduced: String) {
        let reports = context.receivers.receiverReports()
        if reports.isEmpty { return ("no receiver is configured", "no receiver is configured") }
        if reports.allSatisfy({ $0.state != "connected" }) {
            let text = "receivers unavailable: " + reports.map { "\($0.name): \($0.reason ?? $0.state ?? "?")" }.joined(separator: "; ")
            return (text, text)
        }
        let rejecting = context.receivers.currentRejections()
        guard !rejecting.isEmpty else { return ("no receiver has a fix", "no receiver has a fix") }
        return ("fixes rejected: " + rejecting.map { "\($0.receiver): \($0.rejection.reason ?? $0.rejection.rule)" }.joined(separator: "; "),
                "fixes rejected: " + rejecting.map { "\($0.receiver): \($0.rejection.rule)" }.joined(separator: "; "))
    }
}
