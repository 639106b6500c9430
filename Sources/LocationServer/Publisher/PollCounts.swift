/// The POLLs waiting, counted per user (uid) across the user's connections, and the ids they are given: so that
/// one user's POLLs, each held until a fix or its timeout, are bounded however many connections it opens.
struct PollCounts {
    /// The most POLLs one connection may have waiting; one more gets an ERROR.
    static let perConnection = 16
    /// The most POLLs one user may have waiting across its connections.
    static let perUser = 64

    private var nextID = 1
    /// POLLs waiting per user; a user with none has no entry.
    private var waiting: [UInt32: Int] = [:]

    /// A new POLL of user `uid`: its id, or nil when the user already has `perUser` waiting.
    mutating func open(uid: UInt32) -> Int? {
        guard waiting[uid, default: 0] < Self.perUser else { return nil }
        defer { nextID += 1 }
        waiting[uid, default: 0] += 1
        return nextID
    }

    /// `count` POLLs of user `uid` ended (answered, timed out, or dropped with their connection).
    mutating func close(_ count: Int, of uid: UInt32) {
        let left = waiting[uid, default: 0] - count
        waiting[uid] = left > 0 ? left : nil
    }
}
