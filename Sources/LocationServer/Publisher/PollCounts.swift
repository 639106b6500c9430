/// The POLLs waiting, counted per user (uid) across the user's connections, and the ids they are given: so that
/// one user's POLLs, each held until a fix or its timeout, are bounded however many connections it opens.
struct PollCounts {
    private var nextID = 1
    /// POLLs waiting per user; a user with none has no entry.
    private var perUser: [UInt32: Int] = [:]

    /// A new POLL of user `uid`: its id, or nil when the user already has `userMaximum` waiting.
    mutating func open(uid: UInt32, userMaximum: Int) -> Int? {
        guard perUser[uid, default: 0] < userMaximum else { return nil }
        defer { nextID += 1 }
        perUser[uid, default: 0] += 1
        return nextID
    }

    /// `count` POLLs of user `uid` ended (answered, timed out, or dropped with their connection).
    mutating func close(_ count: Int, of uid: UInt32) {
        let left = perUser[uid, default: 0] - count
        perUser[uid] = left > 0 ? left : nil
    }
}
