/// A moment on the two clocks the policy needs: the monotonic clock for durations — a one-time grant's
/// lifetime, which must not end early or late when the wall clock is set or stepped (NTP at boot, an
/// administrator, a receiver's time) — and the wall clock (Unix seconds, UTC) for what is dated: stored
/// grants that expire at a date and survive restarts, times shown to agents and written to the audit.
public struct PolicyTime: Hashable, Sendable {
    /// Monotonic time, for durations, as `ContinuousClock.Instant.sinceOrigin`: stored so, a moment has a
    /// fixed layout (an instant's is known only at run time), and the fan-out reads it per client and fix.
    public var sinceOrigin: Duration
    /// Unix seconds (UTC), for dates.
    public var wall: Double

    /// Monotonic time, for durations.
    public var monotonic: ContinuousClock.Instant {
        get { ContinuousClock.Instant(sinceOrigin: sinceOrigin) }
        set { sinceOrigin = newValue.sinceOrigin }
    }

    /// - Parameters:
    ///   - monotonic: the monotonic clock's reading.
    ///   - wall: the wall clock's reading, Unix seconds.
    public init(monotonic: ContinuousClock.Instant, wall: Double) {
        self.sinceOrigin = monotonic.sinceOrigin
        self.wall = wall
    }

    /// `seconds` later on both clocks: time passing while nobody sets the wall clock.
    /// - Parameters:
    ///   - time: the earlier moment.
    ///   - seconds: how much later, seconds.
    /// - Returns: the later moment.
    public static func + (time: PolicyTime, seconds: Double) -> PolicyTime {
        var later = time
        later.sinceOrigin += .milliseconds(Int64((seconds * 1000).rounded()))
        later.wall += seconds
        return later
    }
}
