import LocationCore
import LocationPolicy
import LocationPosix
import LocationWire

/// The daemon's side of the policy: the rules in force, the grant store, the audit file and the location
/// fudger. `LocationPolicy` decides; this object remembers and writes. Used on the server's queue only.
public final class PolicyEngine: @unchecked Sendable {
    public private(set) var rules: PolicyRules
    public let store: GrantStore
    public let audit: AuditLog
    public let adminGroup: String
    var fudger: LocationFudger
    let log: Log
    /// Changes whenever the rules or the grants do: an authorization computed under another generation is
    /// stale (the per-client cache in `SocketServer.authorization(of:now:)`).
    private(set) var generation = 1
    /// The earliest expiry of a persistent grant (Unix seconds), for this generation: until then no
    /// stored grant changes by itself.
    private var earliestExpiry: (generation: Int, times: [Double]) = (0, [])

    /// - Parameters:
    ///   - stateDirectory: holds grants.json, audit.jsonl and fudger.secret.
    public init(rules: PolicyRules, adminGroup: String, stateDirectory: String, log: Log) {
        self.rules = rules
        self.adminGroup = adminGroup
        self.log = log
        store = GrantStore(directory: stateDirectory, log: log)
        audit = AuditLog(directory: stateDirectory)
        let secret = FudgerSecret.load(directory: stateDirectory, log: log)
        fudger = LocationFudger(gridMeters: rules.defaults.reducedGrid, secret: secret.secret, originHour: secret.originHour)
    }

    /// New rules (config reload). The fudger's grid follows `reduced-grid`.
    public func replaceRules(_ new: PolicyRules) {
        if new.defaults.reducedGrid != rules.defaults.reducedGrid {
            let secret = FudgerSecret.load(directory: String(store.path[..<store.path.lastIndex(of: "/")!]), log: log)
            fudger = LocationFudger(gridMeters: new.defaults.reducedGrid, secret: secret.secret, originHour: secret.originHour)
        }
        rules = new
        generation += 1
    }

    /// Changes the stored grants and writes them durably (`GrantStore.update`).
    /// - Throws: `Errno` when the file cannot be written (the grants in memory change all the same).
    func updateGrants(_ change: (inout GrantSet) -> Void) throws(Errno) {
        generation += 1
        try store.update(change)
    }

    /// The first persistent-grant expiry after `now` (Unix seconds), or infinity.
    func nextGrantExpiry(after now: Double) -> Double {
        if earliestExpiry.generation != generation {
            earliestExpiry = (generation, store.grants.persistent.compactMap(\.expires).sorted())
        }
        return earliestExpiry.times.first { $0 > now } ?? .infinity
    }

    /// The client's current authorization.
    func state(_ identity: ClientIdentity, _ session: SessionAuthorization, now: Double) -> AuthorizationState {
        Policy.state(identity, session: session, rules: rules, grants: store.grants, now: now)
    }

    /// Root and members of the admin group may run agents and admin commands.
    func isAdmin(_ identity: ClientIdentity) -> Bool {
        identity.uid == 0 || identity.groups.contains(adminGroup)
    }

    /// Writes one audit event (and logs it): who, what was asked, the outcome and why.
    func record(_ event: String, identity: ClientIdentity, name: String? = nil, request: String?, status: String?,
                accuracy: String?, reason: String) {
        let now = wallClockSeconds()
        var m = JSONMembers()
        m.number("unix", (now * 1000).rounded() / 1000)
        m.string("time", isoTime(now))
        m.string("event", event)
        var client = JSONMembers()
        client.integer("pid", Int(identity.pid))
        client.integer("uid", Int(identity.uid))
        client.string("user", identity.user)
        client.string("exe", identity.executable)
        client.string("unit", identity.unit)
        client.string("name", name)
        m.object("client", client)
        m.string("request", request)
        m.string("status", status)
        m.string("accuracy", accuracy)
        m.string("reason", reason)
        audit.append(Array("{".utf8) + m.bytes + Array("}".utf8))
        log.info("policy \(event)", ["client.pid": String(identity.pid), "client.uid": String(identity.uid),
                                     "client.exe": identity.executable ?? "?", "request": request ?? "-",
                                     "status": status ?? "-", "accuracy": accuracy ?? "-", "reason": reason])
    }
}

/// ISO 8601 UTC with milliseconds for a Unix time.
func isoTime(_ unixSeconds: Double) -> String {
    let ms = Int((unixSeconds * 1000).rounded(.down))
    let day = UTCTime.millisecondsPerDay
    let days = ms >= 0 ? ms / day : (ms - day + 1) / day
    return UTCTime(date: CivilDate(daysSinceUnixEpoch: days), millisecondsOfDay: ms - days * day).iso8601
}
