import LocationCore
import LocationPolicy
import LocationWire

/// The current report, encoded at most once per accuracy, when a native client first needs it: the latest
/// fix's `TPV` at full accuracy, the fudger's reduced fix's at reduced, and the full one followed by its `SKY`.
struct ReportCache {
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
    private var encoder = GPSDEncoder()

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

    /// Readies `latest` at `accuracy` (reduces it with `fudger`, once) unless it already is; false when there
    /// is nothing to send (no position, or the fudger could not reduce it). `bytes` encodes.
    mutating func ready(_ accuracy: AccuracyAuthorization, latest: Fix?, fudger: inout LocationFudger, wall: Double) -> Bool {
        guard let latest, latest.hasPosition else { return false }
        if accuracy == .full {
            if !fullDue {
                fullDue = true
                fullPosition = Position(latest)
            }
            return true
        }
        if !reducedDone {
            reducedDone = true
            reducedFix = fudger.reduce(latest, at: wall)
        }
        return reducedFix != nil
    }

    /// The `TPV` line at `accuracy`, encoded on the first call; empty when `ready` found nothing to send.
    mutating func bytes(_ accuracy: AccuracyAuthorization, latest: Fix?) -> [UInt8] {
        if accuracy == .full {
            if full.isEmpty, fullDue, let latest {
                encoder.appendTPV(latest, accuracy: "full", to: &full)
            }
            return full
        }
        if reduced.isEmpty, let reducedFix {
            encoder.appendTPV(reducedFix, accuracy: "reduced", to: &reduced)
        }
        return reduced
    }

    /// The full `TPV` followed by the fix's `SKY` (one message: a slow reader's queue replaces both together);
    /// just the `TPV` when the fix lists no satellite. Encoded on the first call.
    mutating func fullWithSatellites(latest: Fix?) -> [UInt8] {
        let tpv = bytes(.full, latest: latest)
        guard let latest, !tpv.isEmpty, !latest.satellites.isEmpty else { return tpv }
        if fullWithSky.isEmpty {
            fullWithSky = tpv
            encoder.appendSKY(latest, to: &fullWithSky)
        }
        return fullWithSky
    }
}

extension Position {
    init?(_ fix: Fix) {
        guard let latitude = fix.latitude, let longitude = fix.longitude else { return nil }
        self.init(latitude: latitude, longitude: longitude)
    }
}
