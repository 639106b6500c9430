import LocationWire

/// How sure the daemon is of who a client is (ARCHITECTURE.md "Identity strength"; docs/SECURITY.md "Who a
/// client is"). Shown to agents, in `grants`, `status` and the audit as `description`.
public enum IdentityStrength: Hashable, Sendable, CustomStringConvertible {
    /// Every process holding the connection runs in one unit of the system's service manager under
    /// `system.slice`, which only root creates: `unit` rules match it.
    case systemUnit
    /// Every process holding the connection, of any user, runs the same executable, loaded cleanly: only
    /// root-owned files that group and others cannot write are mapped executable in it, its environment
    /// carries no loader or interpreter injection, and it is not traced. `executable` rules match it.
    case verifiedExecutable
    /// A sandboxed app whose id the kernel vouches for (a snap's AppArmor label, a Flatpak's app id).
    case sandboxedApp
    /// Known by its user (and groups) alone: only `user` and `group` rules match it, and an agent's
    /// approval covers every program of that user. `reason` says why, e.g. "LD_PRELOAD in its environment".
    case unverified(reason: String)

    /// `system unit`, `verified executable`, `sandboxed app`, `unverified (REASON)`.
    public var description: String {
        switch self {
        case .systemUnit: return "system unit"
        case .verifiedExecutable: return "verified executable"
        case .sandboxedApp: return "sandboxed app"
        case .unverified(let reason): return "unverified (\(reason))"
        }
    }

    /// False for `unverified`.
    public var isVerified: Bool {
        if case .unverified = self { return false }
        return true
    }
}

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
    /// The executable every holder of the connection runs, loaded cleanly (`IdentityStrength.verifiedExecutable`);
    /// nil when it is not verified, or is an interpreter (then `interpreter`).
    public var executable: String?
    /// The system manager's unit (`navit.service`) every holder runs in; nil when none, or not all the same.
    public var unit: String?
    /// A unit of the user's own service manager (`navit.service` below `user@UID.service`): named freely by
    /// the user, so matched only by the advisory `user-unit` rule key.
    public var userUnit: String?
    /// The verified executable when it is an interpreter (python, perl, sh, ...): any script of its user can
    /// run as it, so only rules that say `interpreter = yes` match it by path.
    public var interpreter: String?
    /// What /proc/PID/exe names, verified or not: for display only (agents, logs, the audit).
    public var program: String?
    /// How the identity was established.
    public var strength: IdentityStrength
    /// True when the executable was read while a pidfd pinned the process.
    public var verifiedByPidFD: Bool
    /// The sandboxed app the kernel vouches the process is — `snap:NAME` (its AppArmor label) or
    /// `flatpak:ID` (its `/.flatpak-info`, read as xdg-desktop-portal reads it) — nil for any other process.
    public var appID: String?
    /// True when the program runs outside every login session — a system service, or a program started with
    /// no login session at all (a headless box's console, a container, a job of root's) — rather than in a
    /// user's session or below the user's own service manager (its cgroup is not under `/user.slice/`). For
    /// such a client, When In Use granted for it is "while it runs" (`PersistentGrant.whileRunning`;
    /// docs/PROTOCOL.md "When In Use and Always"); for the others, "while its user has an active login session".
    public var outsideLoginSessions: Bool

    /// - Parameters:
    ///   - program: what to show as the program; `executable ?? interpreter` when nil.
    ///   - strength: how it was established; when nil, `systemUnit` for a unit, `verifiedExecutable` for an
    ///     executable or interpreter, else `unverified`.
    public init(pid: Int32, uid: UInt32, gid: UInt32, user: String? = nil, groups: [String] = [], executable: String? = nil,
                unit: String? = nil, userUnit: String? = nil, interpreter: String? = nil, program: String? = nil,
                strength: IdentityStrength? = nil, verifiedByPidFD: Bool = false, appID: String? = nil,
                outsideLoginSessions: Bool = false) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.user = user
        self.groups = groups
        self.executable = executable
        self.unit = unit
        self.userUnit = userUnit
        self.interpreter = interpreter
        self.program = program ?? executable ?? interpreter
        self.strength = strength ?? (unit != nil ? .systemUnit : executable != nil ? .verifiedExecutable
            : interpreter != nil ? .unverified(reason: "an interpreter: any script of its user can run as it")
            : .unverified(reason: "no program identified"))
        self.verifiedByPidFD = verifiedByPidFD
        self.appID = appID
        self.outsideLoginSessions = outsideLoginSessions
    }

    public var description: String {
        "pid=\(pid) uid=\(uid) exe=\(program ?? "?") unit=\(unit ?? userUnit ?? "-") (\(strength))"
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
    /// `user-unit =`: a unit of the user's own service manager (advisory: the user names those freely).
    public var userUnit: String?
    /// `interpreter = yes`: the rule names an interpreter and accepts that any script of a matching user
    /// runs as it (without it, a rule naming an interpreter is a config error).
    public var interpreter: Bool
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
                userUnit: String? = nil, interpreter: Bool = false, access: AccessRule, accuracy: AccuracyAuthorization, purposes: [String: String] = [:],
                usage: UsageTexts = UsageTexts(), line: Int = 0, appID: String? = nil) {
        self.name = name
        self.executable = executable
        self.user = user
        self.group = group
        self.unit = unit
        self.userUnit = userUnit
        self.interpreter = interpreter
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
        if let e = executable {
            guard e == identity.executable || (interpreter && e == identity.interpreter) else { return nil }
            keys += 1
        }
        if let u = user { guard u == identity.user || u == String(identity.uid) else { return nil }; keys += 1 }
        if let g = group { guard identity.groups.contains(g) else { return nil }; keys += 1 }
        if let u = unit { guard u == identity.unit else { return nil }; keys += 1 }
        if let u = userUnit { guard u == identity.userUnit else { return nil }; keys += 1 }
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
