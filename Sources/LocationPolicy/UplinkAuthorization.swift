extension Policy {
    /// An uplink's authorization (an `[uplink NAME]` section: a fleet's MQTT broker, ARCHITECTURE.md
    /// "Data flow"). The uplink is a client like any other, identified as the daemon's own service — its
    /// executable, user, groups and systemd unit, as the kernel tells them — so the rule that applies is
    /// the `[client]` section matching the daemon (say `executable = /usr/sbin/locationd` or
    /// `unit = locationd.service`), else the `[policy]` defaults. The section itself stands for the
    /// administrator's Always grant at its `accuracy`: like any grant it is capped by that rule's
    /// `accuracy`, and a rule that denies access leaves the uplink nothing (`restricted`), as it would a
    /// client (Core Location's restricted, GeoClue's app not allowed). `ask` and `once` do not hold it
    /// back: no agent is asked about a section the administrator wrote. Stored grants are not consulted:
    /// the section is the uplink's grant, removed by removing the section (locationd.conf(5)).
    /// - Parameters:
    ///   - identity: the daemon's own identity.
    ///   - requested: the section's `accuracy`.
    ///   - rules: the rules in force.
    /// - Returns: `authorizedPersistent` at the lesser of `requested` and the rule's ceiling, with a reason
    ///   naming the rule when it caps it; or `restricted` with no accuracy when the rule denies access.
    public static func uplinkState(_ identity: ClientIdentity, requested: AccuracyAuthorization, rules: PolicyRules) -> AuthorizationState {
        let rule = rules.effective(for: identity)
        if rule.access == .deny {
            return AuthorizationState(status: .restricted, accuracy: nil, reason: "\(rule.source) denies access: nothing is published")
        }
        guard rule.accuracy < requested else {
            return AuthorizationState(status: .authorizedPersistent, accuracy: requested,
                                      reason: "\(requested.rawValue) accuracy, as the [uplink] section asks; \(rule.source) allows it")
        }
        return AuthorizationState(status: .authorizedPersistent, accuracy: rule.accuracy,
                                  reason: "\(rule.source) allows no more than \(rule.accuracy.rawValue) accuracy")
    }
}
