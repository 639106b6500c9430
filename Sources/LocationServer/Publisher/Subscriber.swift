import LocationCore
import LocationPolicy

/// One client as the Publisher sees it: what the fan-out reads for every fix, inline and first, and who
/// it is and what it was last told in its `profile`, boxed — so that a fan-out over 1000 clients walks a
/// table of small values (a few cache lines each), not one of whole identities.
struct Subscriber {
    /// The client's id on its front.
    let id: Int
    /// Streaming (WATCH enabled).
    var watching = false
    /// The last STATE told: nil before any, true with a fix, false without.
    var toldFix: Bool?
    /// POLLs waiting for the next fix, by id, oldest first.
    var pendingPolls: [Int] = []
    var filter = DeliveryFilter()
    var cache = AuthorizationCache()
    /// The rest; only the Publisher that holds this subscriber reaches it.
    let profile: SubscriberProfile

    init(id: Int, identity: ClientIdentity) {
        self.id = id
        profile = SubscriberProfile(identity: identity)
    }

    /// Whether the fan-out has anything to do for this client.
    var wantsReports: Bool { watching || !pendingPolls.isEmpty }

    /// Who it is, from the kernel.
    var identity: ClientIdentity { profile.identity }
    /// The connection's one-time grant and temporary full accuracy; a change drops the cached authorization.
    var session: SessionAuthorization {
        get { profile.session }
        set {
            profile.session = newValue
            cache = AuthorizationCache()
        }
    }
    /// Display text the client declared (AUTHORIZE name), escaped: shown to the agent, never a key.
    var displayName: String? {
        get { profile.displayName }
        nonmutating set { profile.displayName = newValue }
    }
    /// The authorization last sent to the client.
    var announced: AuthorizationState? {
        get { profile.announced }
        nonmutating set { profile.announced = newValue }
    }
    /// The authorization whose first delivery was audited.
    var auditedDelivery: AuthorizationState? {
        get { profile.auditedDelivery }
        nonmutating set { profile.auditedDelivery = newValue }
    }
}

/// A subscriber's identity and what it was told: read on requests and when its authorization is
/// computed anew, not on every fix. A class so that it stays out of the fan-out's table; its one owner is
/// the `Subscriber` (and so the `Publisher`) that made it.
final class SubscriberProfile {
    let identity: ClientIdentity
    var session = SessionAuthorization()
    var displayName: String?
    var announced: AuthorizationState?
    var auditedDelivery: AuthorizationState?
    /// The authorization `Subscriber.cache` holds the accuracy of.
    var cachedState: AuthorizationState?

    init(identity: ClientIdentity) {
        self.identity = identity
    }
}

/// A subscriber's filters (WATCH `minInterval`, `distanceFilter`) and what they measure from. Its time is
/// kept as `sinceOrigin` (fixed layout, see there).
struct DeliveryFilter: Sendable {
    var minInterval: Duration = .zero
    /// Metres; 0: off.
    var distanceFilter = 0.0
    /// When a report last passed (`ContinuousClock.Instant.sinceOrigin`).
    var lastAt: Duration?
    var lastPosition: Position?

    /// Whether a report at `position` passes now; if it does, it counts as delivered.
    /// - Parameter now: `ContinuousClock.Instant.sinceOrigin` (a `Moment`'s).
    mutating func admit(_ position: Position?, now: Duration) -> Bool {
        // No interval asked, no report held back: not even one whose time reads earlier than the last.
        if minInterval > .zero, let lastAt, now - lastAt < minInterval { return false }
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
/// generation), the session's grants change (the cache is dropped), the wall clock reaches `until` (a stored
/// grant expires at its date) or the monotonic clock reaches `onceEnds` (the one-time grant's lifetime
/// ends) — so the fan-out does not evaluate rules and grants for every client on every fix.
struct AuthorizationCache: Sendable {
    /// Computed at all (the state itself is the profile's `cachedState`).
    var valid = false
    /// The accuracy the state allows; nil: none.
    var accuracy: AccuracyAuthorization?
    var generation = 0
    /// Unix seconds: the next stored grant's expiry.
    var until = 0.0
    /// When the one-time grant it relied on ends, monotonic; nil: none.
    /// (`ContinuousClock.Instant.sinceOrigin`: the cache is read in place per client and fix, and an
    /// instant would make its layout a run-time matter.)
    var onceEnds: Duration?
    /// Computed anew since the last delivery: see whether the first delivery needs auditing.
    var auditPending = true

    func holds(generation: Int, at now: Moment) -> Bool {
        valid && self.generation == generation && now.wall < until && onceEnds.map { now.sinceOrigin < $0 } ?? true
    }
}
