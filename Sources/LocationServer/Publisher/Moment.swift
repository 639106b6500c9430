import LocationPosix

/// A point in time as the server needs it twice over: monotonic for intervals (filters, pacing, timeouts
/// — unaffected by the wall clock being set), and the wall clock (Unix seconds, UTC) for grants that
/// expire at a date and for the audit.
struct Moment: Sendable {
    /// Monotonic time, for durations.
    var monotonic: ContinuousClock.Instant
    /// Unix seconds (UTC), for grant expiry and records.
    var wall: Double

    /// Now, on both clocks.
    static func now() -> Moment {
        Moment(monotonic: .now, wall: wallClockSeconds())
    }
}

/// A position in degrees (WGS84), for the distance filter; plain numbers, not a copy of the `Fix`.
struct Position: Sendable {
    var latitude: Double
    var longitude: Double
}
