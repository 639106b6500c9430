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

extension ContinuousClock.Instant {
    /// This instant as a `Duration` since the process first asked (`origin`): a value of fixed layout.
    ///
    /// `ContinuousClock.Instant` is not frozen in the Concurrency library, so its layout is known only at
    /// run time — and so is that of every struct holding one: copies and field reads then go through
    /// type metadata. The per-client state the fan-out touches for every fix (`Subscriber`, `Connection`)
    /// keeps its times this way instead (seen in `perf record` at 1000 clients: each subscriber copied
    /// whole through its value witness to read one flag).
    var sinceOrigin: Duration { self - Self.origin }

    /// The first reading of the continuous clock that `sinceOrigin` counts from.
    static let origin = ContinuousClock.now
}

/// A position in degrees (WGS84), for the distance filter; plain numbers, not a copy of the `Fix`.
struct Position: Sendable {
    var latitude: Double
    var longitude: Double
}
