/// How precisely a client may see the location (Core Location's accuracy authorization).
public enum AccuracyLevel: String, Sendable, Hashable {
    case full, reduced
}

/// The policy's answer for one client, asked at one clear point: when it subscribes or polls, and for
/// every fix before anything is written to it.
public enum AuthorizationDecision: Hashable, Sendable {
    case allowed(AccuracyLevel)
    case denied(reason: String)
}

/// The decision point the server calls. The permission-policy work (issue 5) replaces the rules-only
/// implementation below with grants, agents and reduced accuracy.
public protocol LocationAuthorizer: Sendable {
    func decide(_ identity: ClientIdentity) -> AuthorizationDecision
}

/// Decides from the config's rules alone: the most specific matching `[client]` rule, else `[policy]`.
/// `always` and `once` allow at full accuracy when the rule allows full; everything else is refused
/// (fail closed): `ask` needs an agent and reduced accuracy needs the location fudger, neither of
/// which exists yet.
public struct RuleAuthorizer: LocationAuthorizer {
    public let defaults: PolicyDefaults
    public let rules: [ClientRule]

    public init(defaults: PolicyDefaults, rules: [ClientRule]) {
        self.defaults = defaults
        self.rules = rules
    }

    /// The rule that applies: among the rules whose every given key matches, the one with most keys;
    /// on a tie, the first in the config.
    public func rule(for identity: ClientIdentity) -> ClientRule? {
        var best: (rule: ClientRule, keys: Int)? = nil
        for rule in rules {
            var keys = 0
            if let e = rule.executable { guard e == identity.executable else { continue }; keys += 1 }
            if let u = rule.user { guard u == identity.user || u == String(identity.uid) else { continue }; keys += 1 }
            if let g = rule.group { guard identity.groups.contains(g) else { continue }; keys += 1 }
            if let u = rule.unit { guard u == identity.unit else { continue }; keys += 1 }
            if best == nil || keys > best!.keys { best = (rule, keys) }
        }
        return best?.rule
    }

    public func decide(_ identity: ClientIdentity) -> AuthorizationDecision {
        let rule = rule(for: identity)
        let access = rule?.access ?? defaults.access
        let accuracy = rule?.accuracy ?? defaults.accuracy
        let source = rule.map { "rule [client \($0.name)]" } ?? "[policy] default"
        switch access {
        case .deny:
            return .denied(reason: "denied by \(source)")
        case .ask:
            return .denied(reason: "\(source) says ask, and no agent is available")
        case .once, .always:
            guard accuracy == .full else {
                return .denied(reason: "\(source) allows reduced accuracy only, which this build cannot serve yet")
            }
            return .allowed(.full)
        }
    }
}
