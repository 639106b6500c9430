import LocationPolicy

/// What the Publisher decided a subscriber gets; the front turns it into bytes on the client's socket
/// (docs/PROTOCOL.md names each message).
///
/// A fan-out makes one per client and fix, so the common cases are two words: the rare ones that carry
/// an authorization or an audit record are boxed (`indirect`), or every element of the array would be
/// as large as an audit record.
enum Delivery: Sendable {
    /// The current report (`Publisher.report(_:)`), as a streamed `TPV` at this accuracy.
    case report(to: Int, AccuracyAuthorization)
    /// The current report wrapped in a `POLL` reply: the client's pending POLLs are answered.
    case pollReply(to: Int, AccuracyAuthorization)
    /// `STATE`: the fix was lost (false) or is back (true).
    case fixState(to: Int, fix: Bool)
    /// A no-fix (`Publisher.latest`) to a full-accuracy watcher: on the native front `STATE` when `lost` (the first
    /// since the fix), nothing otherwise; on the gpsd front gpsd's no-fix epoch (a `mode` 1 TPV with the
    /// receiver's time, and its satellites).
    case noFixEpoch(to: Int, lost: Bool)
    /// `AUTHORIZATION`: the client's status changed (or it asked).
    indirect case authorization(to: Int, AuthorizationState)
    /// The client lost its authorization while streaming or polling: an `ERROR` for `WATCH` with the reason
    /// (its `AUTHORIZATION` goes before it, as its own delivery).
    indirect case watchEnded(to: Int, AuthorizationState)
    /// An audit record to write (first delivery under a grant).
    indirect case audit(AuditEvent)
    /// `STATE` with `waiting` or `nextReportIn`: an authorized watcher gets no location for now, and is told why and
    /// until when (issue 33, "every silence explained").
    indirect case silence(to: Int, Silence)
}

/// Why an authorized watcher gets nothing for now (`Delivery.silence`; docs/PROTOCOL.md "STATE").
enum Silence: Sendable, Equatable {
    /// When In Use while the client's user has no active login session: nothing until one is active; `reason` is the
    /// policy's (`AuthorizationState.reason`).
    case notInUse(reason: String)
    /// Reduced accuracy between two paced reports: the next is due in `nextReportIn` (`ReducedPacing.timeUntilDue`,
    /// the figure a POLL is told); `fix` is what the client was last told (true after a report), never news.
    case paced(nextReportIn: Duration, fix: Bool)
    /// Reduced accuracy, a report was due and there was no fix (a notice, which used the cadence's slot): the fix's
    /// return shows no sooner than `nextReportIn` from now.
    case noFix(nextReportIn: Duration)
}

/// One audit record: who, what was asked, the outcome and why (docs/PROTOCOL.md "AUDIT").
struct AuditEvent: Sendable {
    /// "decision", "delivery", "grant" or "revoke".
    var event: String
    var identity: ClientIdentity
    /// The display name the client declared, escaped; never a key.
    var name: String?
    var request: String?
    var status: String?
    /// The accuracy granted or delivered.
    var accuracy: AccuracyAuthorization?
    var reason: String
}

extension Delivery {
    /// The client a delivery is for; nil for an audit record.
    var client: Int? {
        switch self {
        case .report(let id, _), .pollReply(let id, _), .fixState(let id, _), .noFixEpoch(let id, _),
             .authorization(let id, _), .watchEnded(let id, _), .silence(let id, _): return id
        case .audit: return nil
        }
    }
}
