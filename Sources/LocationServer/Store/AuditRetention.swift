import LocationWire

/// Which audit file a record goes to: one for the administrators' grants and revokes, one for each user
/// (uid) about whose clients the record speaks. A user's requests only ever fill that user's file, so no
/// user can push another's records — or the administrators' — out of the log (docs/PROTOCOL.md "AUDIT").
enum AuditBucket: Hashable, Sendable {
    /// `audit.jsonl`: GRANT and REVOKE by root or the admin group (and records of daemons before 0.2,
    /// which kept everything there).
    case administrators
    /// `audit-uid-N.jsonl`: decisions, first deliveries and questions about the clients of uid N.
    case user(UInt32)

    /// The bucket of an event: `grant` and `revoke` are the administrators', everything else the
    /// client's user's.
    /// - Parameters:
    ///   - event: the record's `event`, e.g. `"decision"`.
    ///   - uid: the client's uid (`SO_PEERCRED`).
    init(event: String, uid: UInt32) {
        self = event == "grant" || event == "revoke" ? .administrators : .user(uid)
    }

    /// The current file's name in the state directory; the older one adds `.1`.
    var fileName: String {
        switch self {
        case .administrators: return "audit.jsonl"
        case .user(let uid): return "audit-uid-\(uid).jsonl"
        }
    }

    /// The bucket whose current (`audit-uid-N.jsonl`) or older (`….1`) file this is; nil for other files.
    init?(fileName: String) {
        var name = Substring(fileName)
        if name.hasSuffix(".1") { name = name.dropLast(2) }
        if name == "audit.jsonl" {
            self = .administrators
            return
        }
        guard name.hasPrefix("audit-uid-"), name.hasSuffix(".jsonl"),
              let uid = UInt32(name.dropFirst("audit-uid-".count).dropLast(".jsonl".count)) else { return nil }
        self = .user(uid)
    }
}

/// How much of the audit each bucket keeps. A bucket's current file grows to `bytes(for:)`; the record
/// that would take it past that moves it to `.1` (replacing the older one) and starts a new one. So a
/// bucket holds at most twice its size on disk and always at least its newest `bytes − record` bytes —
/// the retention the docs promise, whatever other buckets receive.
struct AuditRetention: Equatable, Sendable {
    /// One user's current file, bytes (256 KiB: about 800 records of 300 bytes).
    var userBytes = 256 << 10
    /// The administrators' current file, bytes (1 MiB).
    var administratorBytes = 1 << 20

    /// The current file's cap for `bucket`, bytes.
    func bytes(for bucket: AuditBucket) -> Int {
        if case .administrators = bucket { return administratorBytes }
        return userBytes
    }

    /// Whether a line of `lineBytes` (newline included) is written to a fresh file — the current one of
    /// `size` bytes becoming the older one — rather than appended.
    func rotates(_ bucket: AuditBucket, size: Int, adding lineBytes: Int) -> Bool {
        size > 0 && size + lineBytes > bytes(for: bucket)
    }
}

/// Where a page of `AUDIT` ends: the time of its last event and how many events at exactly that time it
/// held (of all the buckets' events in order). Sent as `next` ("1764480000.123:2"), given back as `cursor`.
struct AuditCursor: Equatable, Sendable {
    /// Unix seconds of the last event sent.
    var unixTime: Double
    /// Events at exactly `unixTime` already sent.
    var skip: Int

    var text: String { "\(unixTime):\(skip)" }

    init(unixTime: Double, skip: Int) {
        self.unixTime = unixTime
        self.skip = skip
    }

    /// Reads `text`; nil when it is not one this daemon wrote.
    init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let time = Double(text[..<colon]), !time.isNaN,
              let skip = Int(text[text.index(after: colon)...]), skip >= 0 else { return nil }
        self.init(unixTime: time, skip: skip)
    }
}

/// One `AUDIT` reply's worth of the log.
struct AuditPage: Equatable, Sendable {
    /// The events, oldest first, each one JSON object as stored.
    var lines: [String]
    /// Where the next page starts; nil when this page holds the last event.
    var next: AuditCursor?
    /// `lines` read as LocationWire's records (`readEvents`), for the `AUDIT` reply.
    var events: [AuditRecord] = []

    /// Reads `lines` into `events` (on the store's queue, off the fan-out path). The daemon wrote each line
    /// with `AuditRecord.encoded()`, so the reply's encoder gives back the same bytes. A line that is not a
    /// record — a file damaged outside the daemon — is left out: sent as it is, it would make the whole
    /// reply unreadable to a client.
    mutating func readEvents() {
        events = lines.compactMap { line in try? AuditRecord(decoding: line.utf8) }
    }

    /// The largest page: 256 events…
    static let maximumEvents = 256
    /// …and about 128 KiB of JSON (a record is at most a few KiB: `AuditText`), far below a client's 1 MiB
    /// line limit whatever the log holds.
    static let maximumBytes = 128 << 10

    /// Picks a page from every bucket's records.
    /// - Parameters:
    ///   - records: every record as (Unix seconds, line); any order. A line without a time counts as
    ///     the oldest.
    ///   - since: only records at or after this Unix time.
    ///   - cursor: start after the page this continues (its `next`).
    ///   - limit: events at most (at least 1).
    ///   - maximumBytes: the lines' bytes at most, unless one line alone is larger.
    /// - Returns: the page, ordered by time, then by the line's text (so that the order is the same on
    ///   every read, whichever file a record is in).
    static func select(_ records: [(unixTime: Double?, line: String)], since: Double?, after cursor: AuditCursor?,
                       limit: Int = maximumEvents, maximumBytes: Int = maximumBytes) -> AuditPage {
        let sorted = records.map { (time: $0.unixTime ?? -.infinity, line: $0.line) }
            .sorted { $0.time != $1.time ? $0.time < $1.time : $0.line.utf8.lexicographicallyPrecedes($1.line.utf8) }
        func firstIndex(atOrAfter time: Double) -> Int { sorted.firstIndex { $0.time >= time } ?? sorted.endIndex }
        var start = since.map(firstIndex(atOrAfter:)) ?? 0
        if let cursor {
            let atTime = firstIndex(atOrAfter: cursor.unixTime)
            let after = sorted[atTime...].firstIndex { $0.time > cursor.unixTime } ?? sorted.endIndex
            start = max(start, min(atTime + cursor.skip, after))
        }
        var lines: [String] = []
        var bytes = 0
        var end = start
        let count = max(1, limit)
        while end < sorted.endIndex, lines.count < count {
            let size = sorted[end].line.utf8.count + 1
            if !lines.isEmpty, bytes + size > maximumBytes { break }
            lines.append(sorted[end].line)
            bytes += size
            end += 1
        }
        guard end < sorted.endIndex, end > start else { return AuditPage(lines: lines, next: nil) }
        let last = sorted[end - 1].time
        let firstAtLast = firstIndex(atOrAfter: last)
        return AuditPage(lines: lines, next: AuditCursor(unixTime: last, skip: end - firstAtLast))
    }
}
