import Dispatch
import LocationCore
import LocationPolicy
import LocationPosix
import LocationWire

/// The policy's files — the grant store, the audit file, the fudger's secret — written and read on a
/// queue of their own, never on the fan-out path: an fsync of the grant store or a read of the audit
/// file delays no client's location.
///
/// Every call returns at once; work runs in the order of the calls, and a completion runs on the store's
/// queue (the caller hops back to its own state). The grants in memory live in the server's `Publisher`;
/// this type writes the copies it is handed.
public final class PolicyStore: Sendable {
    /// Where the grants are stored (`directory/grants.json`).
    public let grantsPath: String
    let directory: String
    let log: Log
    private let queue = DispatchQueue(label: "locationd.policy-store", qos: .utility)
    /// Sound as `@unchecked Sendable`: both are touched only on `queue` (after `init`).
    private let files: Files

    private final class Files: @unchecked Sendable {
        let grants: GrantStore
        let audit: AuditLog

        init(grants: GrantStore, audit: AuditLog) {
            self.grants = grants
            self.audit = audit
        }
    }

    /// Opens the store in `stateDirectory` (grants.json, audit.jsonl, fudger.secret); a corrupt grant
    /// store is moved aside and read as empty (`GrantStore`).
    public init(stateDirectory: String, log: Log) {
        self.directory = stateDirectory
        self.log = log
        let grants = GrantStore(directory: stateDirectory, log: log)
        grantsPath = grants.path
        files = Files(grants: grants, audit: AuditLog(directory: stateDirectory))
    }

    /// The grants as loaded at start.
    var initialGrants: GrantSet { queue.sync { files.grants.grants } }

    /// A fudger for `gridMeters` with the secret from the state directory (made on first use).
    func fudger(gridMeters: Double) -> LocationFudger {
        let secret = queue.sync { FudgerSecret.load(directory: directory, log: log) }
        return LocationFudger(gridMeters: gridMeters, secret: secret.secret, originHour: secret.originHour)
    }

    /// Writes `grants` durably (`GrantStore.update`: temp file, fsync, rename, fsync of the directory),
    /// then calls `completion` with nil, or the error that kept them from disk (they still hold in memory).
    func save(_ grants: GrantSet, completion: @escaping @Sendable (Errno?) -> Void) {
        queue.async { [files, log] in
            do throws(Errno) {
                try files.grants.update { $0 = grants }
                completion(nil)
            } catch {
                log.error("cannot write the grant store", ["path": files.grants.path, "errno": error.description])
                completion(error)
            }
        }
    }

    /// Appends one audit record (and logs it): who, what was asked, the outcome and why.
    func record(_ event: AuditEvent, at wall: Double) {
        queue.async { [files, log] in
            files.audit.append(Self.line(event, at: wall))
            let identity = event.identity
            log.info("policy \(event.event)", ["client.pid": String(identity.pid), "client.uid": String(identity.uid),
                                               "client.exe": identity.executable ?? "?", "request": event.request ?? "-",
                                               "status": event.status ?? "-", "accuracy": event.accuracy ?? "-",
                                               "reason": event.reason])
        }
    }

    /// Reads the audit lines at or after `since` (Unix seconds), oldest first, then calls `completion`.
    func readAudit(since: Double?, completion: @escaping @Sendable ([String]) -> Void) {
        queue.async { [files] in completion(files.audit.lines(since: since)) }
    }

    /// Waits for every write queued so far and flushes the audit file (on shutdown).
    func sync() {
        queue.sync { files.audit.sync() }
    }

    static func line(_ event: AuditEvent, at wall: Double) -> [UInt8] {
        var m = JSONMembers()
        m.number("unix", (wall * 1000).rounded() / 1000)
        m.string("time", isoTime(wall))
        m.string("event", event.event)
        var client = JSONMembers()
        client.integer("pid", Int(event.identity.pid))
        client.integer("uid", Int(event.identity.uid))
        client.string("user", event.identity.user)
        client.string("exe", event.identity.executable)
        client.string("unit", event.identity.unit)
        client.string("name", event.name)
        m.object("client", client)
        m.string("request", event.request)
        m.string("status", event.status)
        m.string("accuracy", event.accuracy)
        m.string("reason", event.reason)
        return Array("{".utf8) + m.bytes + Array("}".utf8)
    }
}

/// ISO 8601 UTC with milliseconds for a Unix time.
func isoTime(_ unixSeconds: Double) -> String {
    let ms = Int((unixSeconds * 1000).rounded(.down))
    let day = UTCTime.millisecondsPerDay
    let days = ms >= 0 ? ms / day : (ms - day + 1) / day
    return UTCTime(date: CivilDate(daysSinceUnixEpoch: days), millisecondsOfDay: ms - days * day).iso8601
}
