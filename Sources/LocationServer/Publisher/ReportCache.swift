import LocationCore

/// The current report, encoded at most once per accuracy, when a native client first needs it.
struct ReportCache: Sendable {
    /// Counts the fixes with a position published; pacing gives every connection of a client the same one.
    var serial: UInt64 = 0
    /// Whether the full report is to be sent (`Publisher.ensureReport`); `full` is its TPV once encoded.
    var fullDue = false
    var full: [UInt8] = []
    /// The reduced fix's TPV once encoded (`Publisher.reportBytes`).
    var reduced: [UInt8] = []
    /// `full` and the fix's `SKY`, encoded when a watcher first wants it.
    var fullWithSky: [UInt8] = []
    var reducedDone = false
    var fullPosition: Position?
    /// The reduced fix itself, for fronts that write other shapes of it than `reduced`'s TPV.
    var reducedFix: Fix?

    /// A new fix: nothing of it is encoded yet (the buffers keep their capacity).
    mutating func next() {
        serial &+= 1
        fullDue = false
        full.removeAll(keepingCapacity: true)
        reduced.removeAll(keepingCapacity: true)
        fullWithSky.removeAll(keepingCapacity: true)
        reducedDone = false
        fullPosition = nil
        reducedFix = nil
    }
}

extension Position {
    init?(_ fix: Fix) {
        guard let latitude = fix.latitude, let longitude = fix.longitude else { return nil }
        self.init(latitude: latitude, longitude: longitude)
    }
}
