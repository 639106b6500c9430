import LocationPolicy

/// The policy in force, as a value: the rules from the config, the grants in memory (the grant store
/// writes a copy durably, off the fan-out path), and a generation that changes whenever either does, so
/// that an authorization computed under another generation is known to be stale.
struct PolicyState: Sendable {
    private(set) var rules: PolicyRules
    private(set) var grants: GrantSet
    /// Root and members of this group may run agents and admin commands.
    let adminGroup: String
    private(set) var generation = 1
    /// The uids whose user has an active login session (logind's "active"), as last asked of logind: their
    /// When-In-Use clients are sent locations, the others' are not.
    private(set) var usersInUse: Set<UInt32> = []
    /// Whether any authorization may depend on a user's login session: a When-In-Use grant is stored, or
    /// an `ask` rule lets agents answer with one. Until then the front does not ask logind (nor load
    /// libsystemd, `LoginSessions`); once true it stays watched.
    private(set) var dependsOnLoginSessions = false
    /// The persistent grants' expiry times (Unix seconds), sorted, for `generation`.
    private var expiries: (generation: Int, times: [Double]) = (0, [])

    init(rules: PolicyRules, grants: GrantSet, adminGroup: String) {
        self.rules = rules
        self.grants = grants
        self.adminGroup = adminGroup
        dependsOnLoginSessions = Self.dependsOnLoginSessions(rules, grants)
    }

    /// True when `rules` has an `ask` rule (agents grant When In Use) or `grants` a When-In-Use grant.
    static func dependsOnLoginSessions(_ rules: PolicyRules, _ grants: GrantSet) -> Bool {
        rules.defaults.access == .ask || rules.clients.contains { $0.access == .ask }
            || grants.persistent.contains { $0.whenInUse }
    }

    /// New rules (config reload).
    mutating func replaceRules(_ new: PolicyRules) {
        rules = new
        generation += 1
        dependsOnLoginSessions = Self.dependsOnLoginSessions(rules, grants)
    }

    /// Changes the grants in memory; the caller has them written.
    mutating func changeGrants(_ change: (inout GrantSet) -> Void) {
        change(&grants)
        generation += 1
        dependsOnLoginSessions = Self.dependsOnLoginSessions(rules, grants)
    }

    /// A client's authorization now (`Policy.state`).
    func state(_ identity: ClientIdentity, _ session: SessionAuthorization, at now: Moment) -> AuthorizationState {
        Policy.state(identity, session: session, rules: rules, grants: grants, now: now, userInUse: usersInUse.contains(identity.uid))
    }

    /// Records whether `uid` has an active login session; true when that changed (authorizations are then
    /// stale: the generation moves on).
    mutating func setUser(_ uid: UInt32, inUse: Bool) -> Bool {
        guard usersInUse.contains(uid) != inUse else { return false }
        if inUse { usersInUse.insert(uid) } else { usersInUse.remove(uid) }
        generation += 1
        return true
    }

    /// The first persistent-grant expiry after `wall` (Unix seconds), or infinity.
    mutating func nextGrantExpiry(after wall: Double) -> Double {
        if expiries.generation != generation {
            expiries = (generation, grants.persistent.compactMap(\.expires).sorted())
        }
        return expiries.times.first { $0 > wall } ?? .infinity
    }

    /// Root and members of the admin group may run agents and admin commands.
    func isAdmin(_ identity: ClientIdentity) -> Bool {
        identity.uid == 0 || identity.groups.contains(adminGroup)
    }
}
