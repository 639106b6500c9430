/// A moment on the two clocks the policy needs: the monotonic clock for durations — a one-time grant's
/// lifetime, which must not end early or late when the wall clock is set or stepped (NTP at boot, an
/// administrator, a receiver's time) — and the wall clock (Unix seconds, UTC) for what is dated: stored
/// grants that expire at a date and survive restarts, times shown to agents and written to the audit.
public struct PolicyTime: Hashable, Sendable {
    /// Monotonic time, for durations.
    public var monotonic: ContinuousClock.Instant
    /// Unix seconds (UTC), for dates.
    public var wall: Double

    /// - Parameters:
    ///   - monotonic: the monotonic clock's reading.
    ///   - wall: the wall clock's reading, Unix seconds.
    public init(monotonic: ContinuousClock.Instant, wall: Double) {
        self.monotonic = monotonic
        self.wall = wall
    }

    /// `seconds` later on both clocks: time passing while nobody sets the wall clock.
    /// - Parameters:
    ///   - time: the earlier moment.
    ///   - seconds: how much later, seconds.
    /// - Returns: the later moment.
    public static func + (time: PolicyTime, seconds: Double) -> PolicyTime {
        PolicyTime(monotonic: time.monotonic + .milliseconds(Int64((seconds * 1000).rounded())), wall: time.wall + seconds)
    }
}
