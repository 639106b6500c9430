import LocationCore
import LocationSources
import LocationWire

/// What the server needs to know about the receivers for STATUS and STATE messages: a snapshot, never
/// the receivers themselves.
public protocol ReceiverStatusProvider: Sendable {
    func receiverReports() -> [ReceiverReport]
    /// The connected receivers whose last fix with a position a plausibility rule rejected (docs/RECEIVERS.md "Bad
    /// receivers"), with that rejection's rule and reason: why there is no fix now (`STATE`'s reason).
    func currentRejections() -> [(receiver: String, rejection: ServerMessage.Status.Rejection)]
}

extension ReceiverStatusProvider {
    /// None: a provider that does not judge fixes.
    public func currentRejections() -> [(receiver: String, rejection: ServerMessage.Status.Rejection)] { [] }
}

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
                                  connectedSince: s.connectedSince.map { UTCTime(unixSeconds: $0) }, sentences: s.sentences, fixes: s.fixes, errors: s.errors + s.implausibleFixes,
                                  lastFixTime: s.lastFixTime, priority: s.priority, device: s.device,
                                  rejected: s.rejectedFixes.isEmpty ? nil : s.rejectedFixes.sorted { $0.key < $1.key }.map { .init(rule: $0.key, count: $0.value) },
                                  lastRejection: s.lastRejection.map { .init(rule: $0.rule, reason: $0.reason) })
        }
    }

    func currentRejections() -> [(receiver: String, rejection: ServerMessage.Status.Rejection)] {
        set.statuses.compactMap { s in
            guard s.isConnected, let r = s.rejecting else { return nil }
            return (s.name, .init(rule: r.rule, reason: r.reason))
        }
    }
}
