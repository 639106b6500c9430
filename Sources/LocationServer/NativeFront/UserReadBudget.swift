import LocationWire

/// What all of one user's connections together may send in a second, on every front. The per-connection
/// bound (`ServerState.readable`: 64 × the longest request, 1 MiB a second) left the sum open: an
/// attacker's trial kept a core busy with 180 connections of three users each sending 0.9 MB a second, and
/// a watcher's fixes came every 0.17–0.19 s instead of 0.1. A user's connection whose read passes this
/// budget is closed as flooding, as one that passes its own bound is.
///
/// One window for all users, restarted once a second: it holds an entry for each user that sent something
/// in the current second, no more.
struct UserReadBudget {
    /// Bytes a second for one user's connections together: four connections' worth (4 MiB).
    static let bytesPerSecond = 4 * 64 * ProtocolVersion.maximumRequestLength

    /// When the window began (`ContinuousClock.Instant.sinceOrigin`).
    private var windowStart: Duration = .zero
    private var bytes: [UInt32: Int] = [:]

    /// Counts `count` bytes read from a connection of `uid` at `now` (`sinceOrigin`); false when the user's
    /// connections have sent more than `bytesPerSecond` in the current second, this read included.
    mutating func spend(_ count: Int, uid: UInt32, now: Duration) -> Bool {
        if now - windowStart >= .seconds(1) {
            windowStart = now
            bytes.removeAll(keepingCapacity: true)
        }
        let total = bytes[uid, default: 0] + count
        bytes[uid] = total
        return total <= Self.bytesPerSecond
    }
}
