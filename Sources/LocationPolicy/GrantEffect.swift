/// What an administrator's grant will give the clients it covers under the rules in force — the rule's
/// ceiling applied, as `Policy.state` applies it — for the reply to `GRANT` (docs/PROTOCOL.md "GRANTS,
/// GRANT, REVOKE"), so that the administrator is not told "full accuracy" where a rule caps it.
public struct GrantEffect: Hashable, Sendable {
    /// The accuracy the subject's clients get under the grant: the lesser of the grant's and their
    /// rule's ceiling, for the clients the subject's own keys decide (see `reason` for clients a more
    /// specific rule may match). nil when their rule denies access: the grant does not apply.
    public var accuracy: AccuracyAuthorization?
    /// Why, when it is not simply the accuracy granted: the rule that caps or denies it, and the rules
    /// that may decide otherwise for some of the subject's clients. nil when the grant applies as made.
    public var reason: String?

    public init(accuracy: AccuracyAuthorization?, reason: String?) {
        self.accuracy = accuracy
        self.reason = reason
    }
}

extension PolicyRules {
    /// What granting `accuracy` to `subject` gives its clients (`GrantEffect`).
    ///
    /// A rule's key is decided by the subject when the subject names it (its executable or unit, its
    /// user); `group` never is (a process's groups are its own), nor are keys the subject leaves open.
    /// The rule that applies to the subject's clients is the most specific one the subject decides (the
    /// first on a tie, as `rule(for:)`), else the `[policy]` defaults; rules that might match some of
    /// its clients and are at least as specific are named in the reason when they would give otherwise.
    ///
    /// A pre-approval (`kind` once) is not used where the rule allows always: the rule's accuracy applies.
    /// - Parameters:
    ///   - accuracy: the accuracy granted.
    ///   - kind: `.persistent` (a stored grant, weighed before the rule's access) or `.once` (a pre-approval).
    ///   - subject: whom the grant is for.
    ///   - userAliases: the names the subject's user goes by — its user name and its uid as digits, as
    ///     the daemon resolved them; ignored when the subject names no user.
    /// - Returns: the accuracy that will apply, with the reason when a rule changes it.
    public func effect(ofGranting accuracy: AccuracyAuthorization, kind: AuthorizationKind, to subject: GrantSubject,
                       userAliases: Set<String>) -> GrantEffect {
        var decided: (rule: ClientRule, keys: Int)? = nil
        var undecided: [(rule: ClientRule, keys: Int)] = []
        for rule in clients {
            switch Self.match(rule, subject, userAliases) {
            case .no: continue
            case .sure(let keys): if decided == nil || keys > decided!.keys { decided = (rule, keys) }
            case .maybe(let keys): undecided.append((rule, keys))
            }
        }
        let base = decided.map { ($0.rule.access, $0.rule.accuracy, "rule [client \($0.rule.name)]") }
            ?? (defaults.access, defaults.accuracy, "the [policy] default")
        func outcome(_ access: AccessRule, _ ceiling: AccuracyAuthorization) -> AccuracyAuthorization? {
            access == .deny ? nil : kind == .once && access == .always ? ceiling : min(accuracy, ceiling)
        }
        let applied = outcome(base.0, base.1)
        var reasons: [String] = []
        if applied == nil {
            reasons.append("\(base.2) denies access: the grant does not apply")
        } else if kind == .once && base.0 == .always {
            reasons.append("\(base.2) allows always, at \(base.1.rawValue) accuracy: the pre-approval is not used")
        } else if base.1 < accuracy {
            reasons.append("\(base.2) allows no more than \(base.1.rawValue) accuracy")
        }
        for other in undecided where other.keys >= (decided?.keys ?? 0) {
            let theirs = outcome(other.rule.access, other.rule.accuracy)
            guard theirs != applied else { continue }
            reasons.append("clients that rule [client \(other.rule.name)] matches get "
                           + (theirs.map { "\($0.rawValue) accuracy" } ?? "no access (it denies it)"))
        }
        return GrantEffect(accuracy: applied, reason: reasons.isEmpty ? nil : reasons.joined(separator: "; "))
    }

    private enum Match { case no, sure(Int), maybe(Int) }

    /// Whether `rule` applies to `subject`'s clients: surely, perhaps (a key the subject leaves open),
    /// or not (a key it contradicts), with the rule's number of keys.
    private static func match(_ rule: ClientRule, _ subject: GrantSubject, _ userAliases: Set<String>) -> Match {
        let (executable, unit, hasUser): (String?, String?, Bool)
        switch subject {
        case let .executable(e, user): (executable, unit, hasUser) = (e, nil, user != nil)
        case let .unit(u, user): (executable, unit, hasUser) = (nil, u, user != nil)
        case .user: (executable, unit, hasUser) = (nil, nil, true)
        }
        var keys = 0
        var open = false
        func check(_ key: String?, _ known: Bool, _ equal: (String) -> Bool) -> Bool {
            guard let key else { return true }
            keys += 1
            if !known { open = true; return true }
            return equal(key)
        }
        guard check(rule.executable, executable != nil, { $0 == executable }),
              check(rule.user, hasUser, { userAliases.contains($0) }),
              check(rule.group, false, { _ in true }),
              check(rule.unit, unit != nil, { $0 == unit }) else { return .no }
        return open ? .maybe(keys) : .sure(keys)
    }
}
