import LocationPolicy

/// When In Use: users' login sessions (logind, `LoginSessions`) decide whether When-In-Use clients are
/// sent locations. logind is asked only once some authorization may depend on it.
extension ServerState {
    /// Records whether each user has an active login session; clients whose authorization changed with
    /// it are told (`AUTHORIZATION` with `inUse`), and When-In-Use streams pause or resume.
    mutating func noteUsers(_ states: [(uid: UInt32, inUse: Bool)], at now: Moment) {
        var changed = false
        for (uid, inUse) in states where publisher.setUser(uid, inUse: inUse) {
            changed = true
            context.log.info("login session state", ["user.uid": String(uid), "user.inUse": inUse ? "yes" : "no"])
        }
        if changed { deliver(publisher.reevaluateAll(because: nil, at: now), at: now.wall) }
    }

    /// Has the front watch logind (`Effect.watchLoginSessions`), once, when the policy has come to depend
    /// on login sessions (`PolicyState.dependsOnLoginSessions`): at start, and after rules or grants change.
    /// A first When-In-Use grant made by an administrator under rules without `ask` applies before its
    /// users' sessions are known: their clients hear `inUse` false until logind has answered, moments later.
    mutating func watchLoginSessionsIfNeeded() {
        guard publisher.policy.dependsOnLoginSessions, !loginSessionsWatched else { return }
        loginSessionsWatched = true
        effects.append(.watchLoginSessions)
    }
}
