/// How many audit records of one kind a user may cause per minute; the rest are counted, and the next
/// recorded event of that user and kind says how many were left out.
///
/// Every kind a client can cause — decisions (refusals included), first deliveries, questions to agents —
/// is counted per (uid, kind), so that flooding one kind costs a user nothing of another kind and no user
/// anything of another user's. Administrators' grants and revokes are not counted here at all: the caller
/// records them always. Pure value: the caller keeps the clock.
public struct AuditBudget: Sendable {
    /// What the caller should do with one event.
    public enum Admission: Equatable, Sendable {
        /// Record it; `omittedBefore` events of this user and kind were left out since the last recorded one.
        case record(omittedBefore: Int)
        /// Leave it out (counted).
        case omit
    }

    /// Whose events are counted together: a user (uid from `SO_PEERCRED`) and an event kind
    /// (`"decision"`, `"delivery"`, ...).
    public struct Key: Hashable, Sendable {
        public var uid: UInt32
        public var kind: String

        /// Makes a key; each parameter is the property of the same name.
        public init(uid: UInt32, kind: String) {
            self.uid = uid
            self.kind = kind
        }
    }

    private struct Entry {
        var start: ContinuousClock.Instant
        var recorded: Int
        var omitted: Int
    }

    /// Records per key and window.
    public let perWindow: Int
    /// The window's length.
    public let window: Duration
    private var entries: [Key: Entry] = [:]

    /// - Parameters:
    ///   - perWindow: records per user and kind in each window (20 by default).
    ///   - window: the window (one minute by default).
    public init(perWindow: Int = 20, window: Duration = .seconds(60)) {
        self.perWindow = perWindow
        self.window = window
    }

    /// Whether an event of `kind` caused by `uid` at `now` is recorded.
    public mutating func admit(uid: UInt32, kind: String = "", now: ContinuousClock.Instant) -> Admission {
        let key = Key(uid: uid, kind: kind)
        var entry = entries[key] ?? Entry(start: now, recorded: 0, omitted: 0)
        var omittedBefore = 0
        if now - entry.start >= window {
            omittedBefore = entry.omitted
            entry = Entry(start: now, recorded: 0, omitted: 0)
        }
        defer {
            // Expired entries with nothing left to report are forgotten, so the table holds only the keys
            // active in the last window (or owing a count).
            if entries.count >= 4096 { entries = entries.filter { now - $0.value.start < window || $0.value.omitted > 0 } }
            entries[key] = entry
        }
        guard entry.recorded < perWindow else {
            entry.omitted += 1
            return .omit
        }
        entry.recorded += 1
        return .record(omittedBefore: omittedBefore)
    }

    /// The events left out and not yet reported, per key, and forgets them (e.g. to write one summary
    /// record each on shutdown). Sorted by uid, then kind.
    public mutating func takeOmissions() -> [(key: Key, omitted: Int)] {
        var out: [(key: Key, omitted: Int)] = []
        for (key, entry) in entries where entry.omitted > 0 {
            out.append((key, entry.omitted))
            entries[key]?.omitted = 0
        }
        return out.sorted { ($0.key.uid, $0.key.kind) < ($1.key.uid, $1.key.kind) }
    }
}
