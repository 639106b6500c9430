/// Connections accepted but not yet identified, per user (the peer's uid from the kernel: SO_PEERCRED on
/// the Unix socket, the socket table's owner on TCP). Identifying is slow work on one queue — on TCP it
/// reads every descriptor of the user's processes — and until it is done a connection counts against no
/// other limit: without this bound, one user opening thousands of connections (from processes holding
/// thousands of descriptors) delayed every other user's greeting by 40 s, and at the descriptor limit
/// locked root out (found by a helper attacking the daemon as uid 1). Root is not counted, so that the
/// administrator always gets in.
struct PendingIdentifications {
    /// Connections of one user waiting to be identified at once; the next is refused.
    static let perUser = 8
    /// Connections of all users waiting to be identified at once.
    static let total = 64

    private var byUser: [UInt32: Int] = [:]
    private var count = 0

    /// Whether a connection of `uid` (nil: unknown, all counted together) may wait to be identified; if
    /// so it is counted until `end`.
    mutating func begin(_ uid: UInt32?) -> Bool {
        if uid == 0 { return true }
        let key = uid ?? .max
        guard count < Self.total, byUser[key, default: 0] < Self.perUser else { return false }
        byUser[key, default: 0] += 1
        count += 1
        return true
    }

    /// The connection `begin` counted was identified (or refused).
    mutating func end(_ uid: UInt32?) {
        if uid == 0 { return }
        let key = uid ?? .max
        guard let n = byUser[key] else { return }
        byUser[key] = n > 1 ? n - 1 : nil
        count -= 1
    }
}
