/// How fast one user may open new connections, on every front together: a token bucket per uid, checked
/// as soon as the kernel has told the connection's uid and before the connection is identified. Identifying
/// is the costly part of a connection (it lists the user's processes in /proc to find every holder of the
/// socket), and the other bounds — clients and waiting identifications per user, bytes read per user —
/// all count connections that are *open*: an attacker's helper that connected and closed at once, about 270
/// times a second, kept the daemon at one core for as long as it ran. Past the rate, a new connection is
/// told why and closed without being identified.
///
/// A user may open `burst` connections at once (as many as it may hold, `ServerLimits.clientsPerUser`),
/// then `perSecond` a second. Root is not limited. A bucket is forgotten once it is full again, so the
/// table holds only the users that connected in the last `burst / perSecond` seconds.
struct UserConnectionRate {
    /// New connections a second, sustained.
    let perSecond: Int
    /// New connections at once.
    let burst: Int
    private var buckets: [UInt32: Bucket] = [:]
    /// When the table was last rid of full buckets.
    private var pruned: Duration = .zero

    private struct Bucket {
        /// Connections that may still be opened, in thousandths.
        var milliTokens: Int
        /// When `milliTokens` was last brought up to date (`ContinuousClock.Instant.sinceOrigin`).
        var updated: Duration
    }

    init(perSecond: Int, burst: Int) {
        self.perSecond = max(1, perSecond)
        self.burst = max(1, burst)
    }

    /// A connection of `uid` (nil: the kernel could not say; such connections share one bucket) was
    /// accepted at `now` (`sinceOrigin`): true when it may go on to be identified; false when its user is
    /// past the rate.
    mutating func admit(_ uid: UInt32?, now: Duration) -> Bool {
        if uid == 0 { return true }
        let key = uid ?? .max
        let full = burst * 1000
        var bucket = buckets[key] ?? Bucket(milliTokens: full, updated: now)
        // Whole milliseconds, each worth `perSecond` thousandths; the rest is carried over to the next call.
        let elapsed = max(0, (now - bucket.updated) / .milliseconds(1))
        if elapsed >= Double(full) {
            bucket.milliTokens = full
            bucket.updated = now
        } else {
            let milliseconds = Int(elapsed)
            bucket.milliTokens = min(full, bucket.milliTokens + milliseconds * perSecond)
            bucket.updated += .milliseconds(milliseconds)
        }
        guard bucket.milliTokens >= 1000 else {
            buckets[key] = bucket
            return false
        }
        bucket.milliTokens -= 1000
        buckets[key] = bucket
        if buckets.count > 64, now - pruned >= .seconds(1) { forgetFull(now: now) }
        return true
    }

    /// The number of users with a bucket (for tests).
    var trackedUsers: Int { buckets.count }

    /// Drops the buckets that have refilled by `now`: a missing bucket is a full one.
    private mutating func forgetFull(now: Duration) {
        pruned = now
        let refillTime = Duration.milliseconds(burst * 1000 / perSecond + 1)
        buckets = buckets.filter { now - $0.value.updated < refillTime }
    }
}
