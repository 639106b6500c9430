import LocationWire

/// Who a client is, as the kernel tells it (SO_PEERCRED, /proc/PID/exe, the cgroup's systemd unit).
/// A name the client declares is never part of it.
public struct ClientIdentity: Hashable, Sendable, CustomStringConvertible {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// User name of `uid`, when it has one.
    public var user: String?
    /// Names of the groups of `uid` (primary and supplementary).
    public var groups: [String]
    /// Resolved executable path; nil when it could not be read safely.
    public var executable: String?
    /// systemd unit (`navit.service`, or a user unit), when the process runs in one.
    public var unit: String?
    /// True when the executable was read while a pidfd pinned the process.
    public var verifiedByPidFD: Bool
    /// The sandboxed app the kernel vouches the process is — `snap:NAME` (its AppArmor label) or
    /// `flatpak:ID` (its `/.flatpak-info`, read as xdg-desktop-portal reads it) — nil for any other process.
    public var appID: String?

    public init(pid: Int32, uid: UInt32, gid: UInt32, user: String? = nil, groups: [String] = [], executable: String? = nil,
                unit: String? = nil, verifiedByPidFD: Bool = false, appID: String? = nil) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.user = user
        self.groups = groups
        self.executable = executable
        self.unit = unit
        self.verifiedByPidFD = verifiedByPidFD
        self.appID = appID
    }

    public var description: String {
        "pid=\(pid) uid=\(uid) exe=\(executable ?? "?") unit=\(unit ?? "-")"
    }
}

/// Access a rule grants (chosen by the administrator).
public enum AccessRule: String, Sendable, Hashable, Codable {
    /// Never: the client's status is `restricted`.
    case deny
    /// An agent decides.
    case ask
    /// One-time grants without asking (CoreLocationUI's LocationButton).
    case once
    /// Always allowed.
    case always
}

// The vocabulary shared with clients (accuracy authorization, authorization status and kind) is
// LocationWire's, declared once there; these names let the policy's users keep naming it without
// importing LocationWire.

/// How precisely a client may see the location: `LocationWire.AccuracyAuthorization`.
public typealias AccuracyAuthorization = LocationWire.AccuracyAuthorization
/// Core Location's authorization status, as a client reads it: `LocationWire.AuthorizationStatus`.
public typealias AuthorizationStatus = LocationWire.AuthorizationStatus
/// What kind of authorization a client asks for: `LocationWire.AuthorizationKind`.
public typealias AuthorizationKind = LocationWire.AuthorizationKind

/// The texts an agent is shown when a client asks for authorization, set by the administrator in the
/// client's rule — never by the client, whose declared name is display text only. They stand for an
/// app's Info.plist usage descriptions (docs/PROTOCOL.md "Usage texts").
public struct UsageTexts: Sendable, Hashable {
    /// `usage.when-in-use`: Core Location's `NSLocationWhenInUseUsageDescription`, shown for When In Use
    /// and one-time access (`AUTHORIZE` `whenInUse`, `once`).
    public var whenInUse: String?
    /// `usage.always`: Core Location's `NSLocationAlwaysAndWhenInUseUsageDescription`, shown for access
    /// across connections and restarts (`AUTHORIZE` `persistent`, which is Always).
    public var always: String?

    public init(whenInUse: String? = nil, always: String? = nil) {
        self.whenInUse = whenInUse
        self.always = always
    }

    /// The text for a request of `kind`; nil when the rule sets none (the agent is shown no text).
    public func text(for kind: AuthorizationKind) -> String? {
        switch kind {
        case .once, .whenInUse: return whenInUse
        case .persistent: return always
        }
    }
}

/// A `[client NAME]` rule: which clients it matches (every key given must match) and what they get.
public struct ClientRule: Sendable, Hashable {
    public var name: String
    public var executable: String?
    public var user: String?
    public var group: String?
    public var unit: String?
    /// A sandboxed app's id, `flatpak:ID` or `snap:NAME`, matched exactly against `ClientIdentity.appID`.
    public var appID: String?
    public var access: AccessRule
    /// The most precise accuracy the rule allows.
    public var accuracy: AccuracyAuthorization
    /// Purpose keys the client may cite for temporary full accuracy, with their texts.
    public var purposes: [String: String]
    /// The usage texts the agent is shown for this rule's clients (`usage.when-in-use`, `usage.always`).
    public var usage: UsageTexts
    /// Line of the section, for messages.
    public var line: Int

    public init(name: String, executable: String? = nil, user: String? = nil, group: String? = nil, unit: String? = nil,
                access: AccessRule, accuracy: AccuracyAuthorization, purposes: [String: String] = [:], usage: UsageTexts = UsageTexts(),
                line: Int = 0, appID: String? = nil) {
        self.name = name
        self.executable = executable
        self.user = user
        self.group = group
        self.unit = unit
        self.access = access
        self.accuracy = accuracy
        self.purposes = purposes
        self.usage = usage
        self.line = line
        self.appID = appID
    }

    /// Number of keys that match `identity`, or nil when any given key does not (the rule does not apply).
    public func specificity(for identity: ClientIdentity) -> Int? {
        var keys = 0
        if let e = executable { guard e == identity.executable else { return nil }; keys += 1 }
        if let u = user { guard u == identity.user || u == String(identity.uid) else { return nil }; keys += 1 }
        if let g = group { guard identity.groups.contains(g) else { return nil }; keys += 1 }
        if let u = unit { guard u == identity.unit else { return nil }; keys += 1 }
        if let a = appID { guard a == identity.appID else { return nil }; keys += 1 }
        return keys
    }
}

/// The `[policy]` defaults, and the rule for clients no `[client]` section matches.
public struct PolicyDefaults: Sendable, Hashable {
    public var access: AccessRule = .ask
    public var accuracy: AccuracyAuthorization = .reduced
    /// Seconds a one-time grant lasts at most.
    public var onceLifetime: Double = 3600
    /// Seconds to wait for an agent's answer.
    public var askTimeout: Double = 30
    /// Reduced-accuracy grid step, metres.
    public var reducedGrid: Double = 2000
    /// Seconds between reduced-accuracy updates.
    public var reducedInterval: Double = 900

    public init() {}
}

/// The rules in force: the defaults and the `[client]` sections, in config order.
public struct PolicyRules: Sendable, Hashable {
    public var defaults: PolicyDefaults
    public var clients: [ClientRule]

    public init(defaults: PolicyDefaults = PolicyDefaults(), clients: [ClientRule] = []) {
        self.defaults = defaults
        self.clients = clients
    }

    /// The rule that applies: among the rules whose every key matches, the one with the most keys; on a
    /// tie the first in the config. nil means the `[policy]` defaults apply.
    public func rule(for identity: ClientIdentity) -> ClientRule? {
        var best: (rule: ClientRule, keys: Int)? = nil
        for rule in clients {
            guard let keys = rule.specificity(for: identity) else { continue }
            if keys > best?.keys ?? Int.min { best = (rule, keys) }
        }
        return best?.rule
    }

    /// Access, accuracy ceiling and purposes that apply to `identity`, with a text naming their source.
    public func effective(for identity: ClientIdentity) -> (access: AccessRule, accuracy: AccuracyAuthorization, purposes: [String: String], source: String) {
        if let r = rule(for: identity) { return (r.access, r.accuracy, r.purposes, "rule [client \(r.name)]") }
        return (defaults.access, defaults.accuracy, [:], "[policy] default")
    }
}
