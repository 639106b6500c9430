extension ContinuousClock.Instant {
    /// This instant as a `Duration` since the process first asked (`origin`): a value of fixed layout.
    ///
    /// `ContinuousClock.Instant` is not frozen in the Concurrency library, so its layout is known only at
    /// run time — and so is that of every struct holding one: copies and field reads then go through
    /// type metadata and value witnesses. State touched for every fix (the fix selector, the plausibility
    /// rules, the Publisher's subscribers, connections) keeps its times this way instead: seen in
    /// `perf record` as each subscriber copied whole through its value witness to read one flag, and as
    /// most of the fix selector's time (Benchmarks/README.md, epoch-path.sh).
    public var sinceOrigin: Duration { self - Self.origin }

    /// The instant `sinceOrigin` after `origin`.
    public init(sinceOrigin: Duration) { self = Self.origin + sinceOrigin }

    /// The first reading of the continuous clock that `sinceOrigin` counts from.
    public static let origin = ContinuousClock.now
}
