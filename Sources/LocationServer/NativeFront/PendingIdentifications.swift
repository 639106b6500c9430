/// Connections accepted but not yet identified, waiting in turn per user (the peer's uid from the kernel:
/// SO_PEERCRED on the Unix socket, the socket table's owner on TCP). Identifying is slow work on one
/// queue — on TCP it reads every descriptor of the user's processes — so it is shared out fairly: the
/// users with connections waiting take turns, one identification each, and a user flooding the daemon
/// delays another user's connection by at most one of its own identifications. (Served first come, first
/// served, one user opening thousands of connections from processes holding thousands of descriptors
/// delayed every other user's greeting by 37 s; found by a helper attacking the daemon as uid 1.)
///
/// Each waiting connection holds a descriptor, so they are bounded too: per user, as many as that user
/// may hold clients (`ServerLimits.clientsPerUser`), and in all, `maxClients`; the next is refused.
/// Root's connections are never refused, and wait their turn like any other user's.
///
/// The identity queue takes them in batches (`next(upTo:)`), in the same order: one pass over /proc finds the
/// holders of every connection of the batch (`PeerProcess.scanHolders`).
struct PendingIdentifications<Item> {

    /// Connections of one user that may wait at once.
    let perUser: Int
    /// Connections of all users that may wait at once.
    let total: Int
    private var waiting: [UInt32: [Item]] = [:]
    /// The users with connections waiting, in the order they are served next.
    private var turns: [UInt32] = []
    /// Connections waiting, all users together.
    private(set) var count = 0

    init(perUser: Int, total: Int) {
        self.perUser = perUser
        self.total = total
    }

    /// Queues `work`, the identification of a connection of `uid` (nil: unknown, all such counted
    /// together); false when it may not wait (over the bounds), and `work` is dropped.
    mutating func enqueue(_ uid: UInt32?, _ work: Item) -> Bool {
        let key = uid ?? .max
        if key != 0 {
            guard count < total, waiting[key, default: []].count < perUser else { return false }
        }
        if waiting[key] == nil { turns.append(key) }
        waiting[key, default: []].append(work)
        count += 1
        return true
    }

    /// The next identification to run: the oldest of the user whose turn it is, who then goes to the back.
    mutating func next() -> Item? {
        guard !turns.isEmpty else { return nil }
        let key = turns.removeFirst()
        guard var queue = waiting.removeValue(forKey: key), !queue.isEmpty else { return nil }
        let work = queue.removeFirst()
        if !queue.isEmpty {
            waiting[key] = queue
            turns.append(key)
        }
        count -= 1
        return work
    }

    /// The next `limit` identifications at most, in the order `next()` gives them.
    mutating func next(upTo limit: Int) -> [Item] {
        var batch: [Item] = []
        while batch.count < limit, let item = next() { batch.append(item) }
        return batch
    }
}
