import Dispatch
import LocationCore
import LocationPolicy
import LocationPosix
import LocationWire

/// The policy's files — the grant store, the audit file, the fudger's secret, and the sharing switch's file —
/// written and read on a queue of their own, never on the fan-out path: an fsync of the grant store or a read
/// of the audit file delays no client's location.
///
/// Every call returns at once; work runs in the order of the calls, and a completion runs on the store's
/// queue (the caller hops back to its own state). The sharing file's writes come through the server's uplinks'
/// queue (`Effect.saveSharing`), so they are in order with each other, not with the grant store's. The grants in memory live in the server's `Publisher`;
/// this type writes the copies it is handed.
public final class PolicyStore: Sendable {
    /// Where the grants are stored (`directory/grants.json`).
    public let grantsPath: String
    let directory: String
    let log: Log
    /// The default QoS, as every queue of the daemon (NativeFront.queue says why).
    private let queue = DispatchQueue(label: "locationd.policy-store")
    /// Sound as `@unchecked Sendable`: both are touched only on `queue` (after `init`).
    private let files: Files

    private final class Files: @unchecked Sendable {
        let grants: GrantStore
        let audit: AuditLog
        /// Records per user and kind and minute (`AuditBudget`); grants and revokes are not counted.
        var budget = AuditBudget()
        /// Records that could not be written since the last one that could (`noteAudit`).
        var auditLost = 0

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

    /// Writes the sharing switch's state file (`writeSharingFile`: temporary file, fsync, rename, fsync of
    /// the directory; nil text removes it), after every earlier write of this store, then calls `completion`.
    func saveSharing(_ text: String?, at path: String, completion: @escaping @Sendable () -> Void) {
        queue.async {
            writeSharingFile(path, text)
            completion()
        }
    }

    /// Appends one audit record (and logs it): who, what was asked, the outcome and why — to the file of
    /// the client's user (`AuditBucket`), within that user's budget for the event's kind (`AuditBudget`:
    /// the rest are counted, and the next recorded one says how many); an administrator's grant or revoke
    /// to the administrators' file, always.
    func record(_ event: AuditEvent, at wall: Double) {
        let now = ContinuousClock.now
        queue.async { [files, log] in
            var event = event
            // Cut first, so that the note about omissions is never cut off.
            event.reason = AuditText.bounded(event.reason)
            let bucket = AuditBucket(event: event.event, uid: event.identity.uid)
            if case .user(let uid) = bucket {
                guard case .record(let omitted) = files.budget.admit(uid: uid, kind: event.event, now: now) else { return }
                if omitted > 0 {
                    event.reason += " (and \(omitted) more \(event.event) events of uid \(uid) before this one, not recorded)"
                }
            }
            Self.noteAudit(files.audit.append(Self.auditRecord(event, at: wall).encoded(), to: bucket), files: files, log: log)
            let identity = event.identity
            log.info("policy \(event.event)", ["client.pid": String(identity.pid), "client.uid": String(identity.uid),
                                               "client.exe": AuditText.bounded(identity.program) ?? "?",
                                               "client.identified": AuditText.bounded(Optional(identity.strength.description)) ?? "?",
                                               "request": AuditText.bounded(event.request) ?? "-",
                                               "status": event.status ?? "-", "accuracy": event.accuracy?.rawValue ?? "-",
                                               "reason": event.reason])
        }
    }

    /// Reads one page of the audit (`AuditPage`): the lines at or after `since` (Unix seconds) and after
    /// `cursor`, oldest first, at most `limit` of them; then calls `completion`.
    func readAudit(since: Double?, cursor: AuditCursor?, limit: Int?, completion: @escaping @Sendable (AuditPage) -> Void) {
        queue.async { [files] in
            completion(files.audit.page(since: since, after: cursor, limit: limit ?? AuditPage.maximumEvents))
        }
    }

    /// Waits for every write queued so far, records how many events each user had left out since its
    /// last recorded one (no later event will say it), and flushes the audit files (on shutdown).
    func sync() {
        let wall = wallClockSeconds()
        queue.sync {
            for (key, omitted) in files.budget.takeOmissions() {
                let record = AuditRecord(unixTime: Self.auditUnixTime(wall), time: UTCTime(unixSeconds: wall), event: key.kind,
                                         client: ClientDescription(uid: Int(key.uid)),
                                         reason: "\(omitted) more \(key.kind) events of uid \(key.uid) not recorded before the daemon stopped")
                Self.noteAudit(files.audit.append(record.encoded(), to: .user(key.uid)), files: files, log: log)
            }
            files.audit.sync()
        }
    }

    /// Counts an audit record that could not be written (`failure`), and says so in the log once — at the
    /// first loss, not for each record while the disk stays full — and once more when records are written
    /// again, with how many were lost. Location keeps flowing meanwhile: the audit is written off the
    /// fan-out path, and a lost record stops nothing.
    private static func noteAudit(_ failure: Errno?, files: Files, log: Log) {
        if let failure {
            if files.auditLost == 0 {
                log.error("cannot write the audit file; audit records are lost until it can be",
                          ["path": files.audit.directory, "errno": failure.description])
            }
            files.auditLost += 1
        } else if files.auditLost > 0 {
            log.notice("the audit file is written again", ["path": files.audit.directory, "audit.lost": String(files.auditLost)])
            files.auditLost = 0
        }
    }

    /// The audit record of `event` at `wall` (Unix seconds), as the audit file keeps it and `AUDIT` sends it
    /// (LocationWire's `AuditRecord`, written by its `encoded()`): the client's identity and the texts it
    /// influences bounded by `AuditText`.
    static func auditRecord(_ event: AuditEvent, at wall: Double) -> AuditRecord {
        let identity = event.identity
        let client = ClientDescription(pid: Int(identity.pid), uid: Int(identity.uid), user: AuditText.bounded(identity.user),
                                       executable: AuditText.bounded(identity.program),
                                       unit: AuditText.bounded(identity.unit ?? identity.userUnit),
                                       name: AuditText.bounded(event.name, bytes: DisplayText.maximumNameBytes),
                                       identified: AuditText.bounded(Optional(identity.strength.description)))
        return AuditRecord(unixTime: auditUnixTime(wall), time: UTCTime(unixSeconds: wall), event: event.event, client: client,
                           request: AuditText.bounded(event.request), status: event.status, accuracy: event.accuracy,
                           reason: event.reason)  // bounded by `record`
    }

    /// A record's `unix`: `wall` (Unix seconds) to the millisecond.
    static func auditUnixTime(_ wall: Double) -> Double { (wall * 1000).rounded() / 1000 }
}

/// Bounds on text a client influences — its declared name, its executable's path, its unit, a purpose key
/// echoed in a reason — in audit records and agent questions: escaped (`DisplayText`), then cut to a few
/// hundred bytes, so that a record is at most a few KiB whatever a client sends or names itself.
enum AuditText {
    /// A declared name: at most 200 scalars and 400 bytes escaped.
    static func name(_ text: String) -> String {
        DisplayText.escaped(text, maximumScalars: DisplayText.maximumNameScalars, maximumBytes: DisplayText.maximumNameBytes)
    }

    /// A path, unit, user, request or reason — or a name already cut by `name(_:)`, with `bytes` 400 —
    /// escaped and cut to at most `bytes` UTF-8 bytes (text already escaped and within it is unchanged).
    static func bounded(_ text: String?, bytes: Int = 1024) -> String? {
        text.map { bounded($0, bytes: bytes) }
    }

    static func bounded(_ text: String, bytes: Int = 1024) -> String {
        DisplayText.escaped(text, maximumScalars: .max, maximumBytes: bytes)
    }
}
