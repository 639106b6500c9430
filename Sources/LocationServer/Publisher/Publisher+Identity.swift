import LocationPolicy

extension Publisher {
    /// What client `id` would be authorized for now if it were `identity` — its own session (one-time grant,
    /// temporary full accuracy, the accuracy it asked) under the rules and grants in force; nil when it is not
    /// connected. For a re-check of its holders (`ServerState.holdersChecked`): a change that leaves it the
    /// same authorization costs it nothing.
    func authorization(of id: Int, as identity: ClientIdentity, at now: Moment) -> AuthorizationState? {
        guard let slot = subscribers.slot(of: id) else { return nil }
        return policy.state(identity, subscribers.entries[slot].profile.session, at: now)
    }
}
