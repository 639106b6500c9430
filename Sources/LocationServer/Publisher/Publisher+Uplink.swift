#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationPolicy
import LocationWire

/// An uplink (ARCHITECTURE.md "Data flow": a fleet broker) as a subscriber of the Publisher: it streams
/// like a watching client, with its own identity, accuracy and filters, so that `reduced` means the same
/// fudged position on the same cadence (`reduced-interval`, the one grid of `ReducedPacing`) as every reduced client gets.
public struct UplinkSubscription: Sendable {
    /// The uplink's name (`[uplink NAME]`), shown in the audit as `uplink NAME`.
    public var name: String
    /// `mqtt://host:port` or `mqtts://host:port`.
    public var broker: String
    /// Where its reports go.
    public var topic: String
    /// `owntracks` or `tpv`, for `GRANTS`.
    public var format: String
    /// The accuracy the section asks for; the policy caps it (`Policy.uplinkState`).
    public var accuracy: AccuracyAuthorization
    /// Least time between two full-accuracy reports; reduced reports keep the pacing's cadence.
    public var minInterval: Duration
    /// Metres a full-accuracy position must move before the next report; 0: off.
    public var distanceFilter: Double

    /// Where it publishes, for the audit (e.g. `mqtt://broker:1883 owntracks/fleet/van7`).
    public var destination: String { "\(broker) \(topic)" }

    /// Makes a subscription; each parameter is the property of the same name.
    public init(name: String, broker: String, topic: String, format: String, accuracy: AccuracyAuthorization,
                minInterval: Duration, distanceFilter: Double) {
        self.name = name
        self.broker = broker
        self.topic = topic
        self.format = format
        self.accuracy = accuracy
        self.minInterval = minInterval
        self.distanceFilter = distanceFilter
    }
}

/// Takes an uplink's reports: the fix cut to its accuracy (reduced: the fudger's fix). Called on the uplinks'
/// own queue (`NativeFront.uplinkQueue`), after the fix's turn and in the order of the fixes and of the
/// sharing switch's changes (`UplinkWork`); it encodes the report there, off the fan-out path.
public typealias UplinkSink = @Sendable (Fix, AccuracyAuthorization) -> Void

/// What an uplink is told of the sharing switch (`SHARE`, `locationctl share`).
public enum SharingChange: Sendable, Equatable {
    /// Sharing is on: the uplink publishes again, what its spool holds first.
    case on
    /// Sharing is off: nothing leaves, not even what the spool holds; with `discard`, the spool's reports are
    /// dropped, so that they never go.
    case off(discard: Bool)
}

/// Told of the sharing switch when the uplink is added (at once, before any report), then of every change
/// on the uplinks' queue, in order with the reports (`UplinkWork`).
public typealias SharingSink = @Sendable (SharingChange) -> Void

/// Work for the uplinks, decided in a server turn and done on their own queue, in the order decided: a report
/// decided before the switch went off reaches its uplink before the switch does (so that the uplink spools it
/// with what it holds, and `discard` drops it), and none decided after.
enum UplinkWork: Sendable {
    /// A report (`UplinkSink`).
    case report(UplinkHandOff)
    /// The sharing switch changed (`SharingSink`).
    case sharing(SharingSink, SharingChange)

    /// Does it: calls the sink.
    func run() {
        switch self {
        case .report(let handOff): handOff.sink(handOff.fix, handOff.accuracy)
        case let .sharing(sink, change): sink(change)
        }
    }
}

/// One uplink in the Publisher.
struct UplinkSubscriber {
    let subscription: UplinkSubscription
    let identity: ClientIdentity
    let sink: UplinkSink
    /// Told when sharing is switched off or on.
    let sharingSink: SharingSink?
    /// The uplink's state for STATUS (root and the admin group).
    let statusProvider: (@Sendable () -> ServerMessage.Status.Uplink)?
    var filter: DeliveryFilter
    /// The report serial it was last handed at reduced accuracy: the cadence's slot report goes to it once.
    var lastReducedReport: UInt64?
    /// Its first delivery was audited.
    var audited = false
    /// Its authorization as last audited, and the policy generation it was decided under: worked out again
    /// only when the rules change (not per fix), and audited again when that changes it.
    var lastState: AuthorizationState?
    var stateGeneration = 0
}

/// The Publisher's uplinks, in the order they were added.
struct UplinkTable {
    var entries: [UplinkSubscriber] = []
    /// The sharing switch: while paused, no uplink gets a report.
    var sharing = SharingState()
    var settings = SharingSettings()
}

/// A report for an uplink, decided in the fix's turn and handed to its sink after it (`UplinkWork`).
struct UplinkHandOff: Sendable {
    let sink: UplinkSink
    let fix: Fix
    let accuracy: AccuracyAuthorization
}

extension Publisher {
    /// Adds an uplink: from the next fix on it gets reports as a watching client at its accuracy would.
    /// - Parameter identity: whom the policy sees: the daemon's own service (`ClientIdentity.ofDaemon()`).
    mutating func addUplink(_ subscription: UplinkSubscription, identity: ClientIdentity, sink: @escaping UplinkSink,
                            sharing: SharingSink? = nil, status: (@Sendable () -> ServerMessage.Status.Uplink)? = nil) {
        uplinks.entries.append(UplinkSubscriber(subscription: subscription, identity: identity, sink: sink, sharingSink: sharing, statusProvider: status,
                                                filter: DeliveryFilter(minInterval: subscription.minInterval,
                                                                       distanceFilter: subscription.distanceFilter)))
    }

    /// The uplinks' reports for the fix `publish` just took (call right after it): each uplink due gets
    /// the latest fix at its accuracy, through the same filters, fudger and pacing clients have; its first
    /// delivery is audited into `out`.
    mutating func publishUplinks(at now: Moment, into out: inout [Delivery]) -> [UplinkHandOff] {
        guard !uplinks.entries.isEmpty, !uplinks.sharing.isPaused(at: now.wall), let latest, latest.hasPosition else { return [] }
        var handOffs: [UplinkHandOff] = []
        let interval = reducedInterval
        for index in uplinks.entries.indices {
            if uplinks.entries[index].stateGeneration != policy.generation {
                uplinks.entries[index].stateGeneration = policy.generation
                let state = uplinkState(index)
                if state != uplinks.entries[index].lastState {
                    uplinks.entries[index].lastState = state
                    let uplink = uplinks.entries[index]
                    out.append(.audit(AuditEvent(event: "decision", identity: uplink.identity, name: "uplink " + uplink.subscription.name,
                                                 request: nil, status: state.status.rawValue, accuracy: state.accuracy,
                                                 reason: "uplink \(uplink.subscription.name) → \(uplink.subscription.destination): \(state.reason)")))
                }
            }
            guard let accuracy = uplinks.entries[index].lastState?.accuracy else { continue }
            guard ensureReport(accuracy, wall: now.wall), let fix = reportFix(accuracy) else { continue }
            if accuracy == .full {
                guard uplinks.entries[index].filter.admit(Position(fix), now: now.sinceOrigin) else { continue }
            } else {
                // The daemon's one cadence: the slot's report, the same the reduced clients got (or the first of a slot
                // none of them used), once.
                guard uplinks.entries[index].lastReducedReport != reportSerial,
                      pacing.allows(report: reportSerial, now: now.monotonic, interval: interval) else { continue }
                recordReducedReport(at: now)
                uplinks.entries[index].lastReducedReport = reportSerial
            }
            handOffs.append(UplinkHandOff(sink: uplinks.entries[index].sink, fix: fix, accuracy: accuracy))
            if !uplinks.entries[index].audited {
                uplinks.entries[index].audited = true
                let subscription = uplinks.entries[index].subscription
                out.append(.audit(AuditEvent(event: "delivery", identity: uplinks.entries[index].identity, name: "uplink " + subscription.name,
                                             request: nil, status: "authorizedPersistent", accuracy: accuracy,
                                             reason: "uplink \(subscription.name) → \(subscription.destination): first delivery")))
            }
        }
        return handOffs
    }
}

extension Publisher {
    /// The authorization of the uplink at `index` under the rules in force (`Policy.uplinkState`).
    func uplinkState(_ index: Int) -> AuthorizationState {
        let uplink = uplinks.entries[index]
        return Policy.uplinkState(uplink.identity, requested: uplink.subscription.accuracy, rules: policy.rules)
    }

    /// The uplinks as `GRANTS` lists them: each with the accuracy the policy lets it have and whether
    /// sharing is paused at `wall` (Unix seconds).
    func uplinkGrants(at wall: Double) -> [ServerMessage.Grants.Uplink] {
        let sharing = !uplinks.sharing.isPaused(at: wall)
        return uplinks.entries.indices.map { index in
            let uplink = uplinks.entries[index].subscription
            let state = uplinkState(index)
            return ServerMessage.Grants.Uplink(name: uplink.name, broker: uplink.broker, topic: uplink.topic, format: uplink.format,
                                               accuracy: state.accuracy, requested: uplink.accuracy, sharing: sharing, reason: state.reason)
        }
    }
}
