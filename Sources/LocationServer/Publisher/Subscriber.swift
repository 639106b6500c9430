import LocationCore
import LocationPolicy

/// One client as the Publisher sees it: who it is (from the kernel), what it asked for, and what it was
/// last told. Hot fields first: the fan-out reads them for every fix.
struct Subscriber: Sendable {
    /// Streaming (WATCH enabled).
    var watching = false
    /// POLLs waiting for the next fix, by id, oldest first.
    var pendingPolls: [Int] = []
    var filter = DeliveryFilter()
    /// The last STATE told: nil before any, true with a fix, false without.
    var toldFix: Bool?
    var cache = AuthorizationCache()

    let identity: ClientIdentity
    /// Whom reduced-accuracy pacing counts for (user and program).
    let pacingKey: ReducedPacing.Key
    /// The connection's one-time grant and temporary full accuracy; a change drops the cached authorization.
    var session = SessionAuthorization() { didSet { cache = AuthorizationCache() } }
    /// Display text the client declared (AUTHORIZE name), escaped: shown to the agent, never a key.
    var displayName: String?
    /// The authorization last sent to the client.
    var announced: AuthorizationState?
    /// The authorization whose first delivery was audited.
    var auditedDelivery: AuthorizationState?

    init(identity: ClientIdentity) {
        self.identity = identity
        self.pacingKey = ReducedPacing.Key(identity)
    }

    /// Whether the fan-out has anything to do for this client.
    var wantsReports: Bool { watching || !pendingPolls.isEmpty }
}

/// A subscriber's filters (WATCH `minInterval`, `distanceFilter`) and what they measure from.
struct DeliveryFilter: Sendable {
    var minInterval: Duration = .zero
    /// Metres; 0: off.
    var distanceFilter = 0.0
    var lastAt: ContinuousClock.Instant?
    var lastPosition: Position?

    /// Whether a report at `position` passes now; if it does, it counts as delivered.
    mutating func admit(_ position: Position?, now: ContinuousClock.Instant) -> Bool {
        if let lastAt, now - lastAt < minInterval { return false }
        if distanceFilter > 0 {
            if let last = lastPosition, let position,
               Geodesy.distance(latitude1: last.latitude, longitude1: last.longitude,
                                latitude2: position.latitude, longitude2: position.longitude) < distanceFilter {
                return false
            }
            if let position { lastPosition = position }
        }
        lastAt = now
        return true
    }
}

/// A client's authorization as last computed: it holds until the rules or grants change (the policy's
/// generation), the session's grants change (the cache is dropped), or the wall clock reaches `until`
/// (a grant expires) — so the fan-out does not evaluate rules and grants for every client on every fix.
struct AuthorizationCache: Sendable {
    var state: AuthorizationState?
    /// The accuracy `state` allows; nil: none.
    var accuracy: AccuracyAuthorization?
    var generation = 0
    /// Unix seconds.
    var until = 0.0
    /// Computed anew since the last delivery: see whether the first delivery needs auditing.
    var auditPending = true

    func holds(generation: Int, wall: Double) -> Bool {
        state != nil && self.generation == generation && wall < until
    }
}
