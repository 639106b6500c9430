import LocationPolicy
import LocationPosix

/// A point in time as the server needs it twice over: monotonic for intervals (filters, pacing, timeouts,
/// one-time grants' lifetimes — unaffected by the wall clock being set), and the wall clock (Unix seconds,
/// UTC) for stored grants that expire at a date and for the audit. The policy's `PolicyTime`.
typealias Moment = PolicyTime

extension PolicyTime {
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
