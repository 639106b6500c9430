import LocationCore

/// The satellites in view, assembled from GSV pages, with the used flags from GSA.
///
/// Each talker and signal id has its own GSV set (`$GPGSV` 1/3, 2/3, 3/3, then `$GLGSV` …). A set replaces
/// the previous view of that talker and signal when its last page arrives. Source: NMEA 0183 v4.11 §GSV, §GSA.
///
/// The sets live in a short array sorted by (talker, signal id) and the PRN sets are bitmaps, so an epoch
/// costs no hashing; the merged list is only rebuilt when a set's content, the used PRNs or the sets
/// themselves changed (most receivers repeat an unchanged view for many epochs).
struct SkyView: Sendable {
    /// One talker/signal GSV set: the last complete one and the one being received.
    private struct SatelliteSet: Sendable {
        var talker: UInt16
        var signal: Int
        /// The last complete set, when there is one.
        var complete: [Satellite] = []
        var hasComplete = false
        /// Epoch count when `complete` last arrived.
        var refreshed = 0
        /// Pages received so far of the next set, when one is under way.
        var building: [Satellite] = []
        var hasBuilding = false

        /// Adds one page to the set under way; returns true when it completed the set and changed it.
        mutating func receive(_ page: SkyLog.Page, satellites: UnsafeBufferPointer<GSVSatellite>, epoch: Int) -> Bool {
            hasBuilding = true
            if page.messageNumber <= 1 { building.removeAll(keepingCapacity: true) }
            for sat in satellites {
                building.append(sat.satellite(constellation: SkyView.constellation(prn: sat.prn, talker: page.talker),
                                              signalID: page.signalID))
            }
            return page.messageNumber >= page.totalMessages && finishBuilding(epoch: epoch)
        }

        /// The set under way becomes the complete one; returns true when its content differs.
        mutating func finishBuilding(epoch: Int) -> Bool {
            let differs = !hasComplete || complete != building
            swap(&complete, &building)
            building.removeAll(keepingCapacity: true)
            hasBuilding = false
            hasComplete = true
            refreshed = epoch
            return differs
        }
    }

    /// Sorted by (talker, signal). Sets are few (one per talker and signal id), so a linear search wins.
    private var sets: [SatelliteSet] = []
    /// A set not refreshed for `expiryEpochs` is dropped, so a constellation or signal the receiver stopped
    /// reporting leaves the view.
    static let expiryEpochs = 10
    private var epoch = 0
    private var used = IntegerBitSet()
    private var usedThisEpoch = IntegerBitSet()
    private var sawGSAThisEpoch = false
    private var changed = false
    /// Satellites already listed during a rebuild (constellation × PRN), cleared after each rebuild.
    private var seen = IntegerBitSet()
    private var seenOutsideBitmap: Set<Int> = []
    private(set) var satellites: [Satellite] = []

    /// Number of satellites the last GSA set marked as used; nil before any GSA.
    var usedCount: Int? { sawAnyGSA ? used.count : nil }
    private var sawAnyGSA = false

    /// Adds one GSV page, given as its header and its satellites.
    mutating func add(_ page: SkyLog.Page, satellites: UnsafeBufferPointer<GSVSatellite>) {
        let index = setIndex(talker: page.talker?.rawValue ?? 0, signal: page.signalID ?? 0)
        if sets[index].receive(page, satellites: satellites, epoch: epoch) { changed = true }
    }

    /// Notes the PRNs one GSA sentence marks as used in the fix.
    mutating func noteUsed(_ prns: UnsafeBufferPointer<Int>) {
        if !sawGSAThisEpoch { usedThisEpoch.removeAll() }
        sawGSAThisEpoch = true
        sawAnyGSA = true
        for prn in prns { usedThisEpoch.insert(prn) }
    }

    /// Ends an epoch: GSA sets seen in it replace the used list; a changed view is rebuilt.
    mutating func endEpoch() {
        epoch += 1
        var i = 0
        while i < sets.count {
            if sets[i].hasComplete && epoch - sets[i].refreshed > Self.expiryEpochs {
                // Expired: the set, and any set under way for the same key, leave.
                sets.remove(at: i)
                changed = true
            } else if !sets[i].hasComplete && !sets[i].hasBuilding {
                sets.remove(at: i)
            } else {
                i += 1
            }
        }
        if sawGSAThisEpoch {
            if used != usedThisEpoch { swap(&used, &usedThisEpoch); changed = true }
            sawGSAThisEpoch = false
        }
        guard changed else { return }
        changed = false
        rebuild()
    }

    /// Merges the complete sets in (talker, signal) order; a satellite seen on several signals is listed
    /// once, with its first entry.
    private mutating func rebuild() {
        var all: [Satellite] = []
        all.reserveCapacity(satellites.count)
        for set in sets where set.hasComplete {
            for var sat in set.complete {
                let id = (sat.constellation?.rawValue ?? 15) << 16 | sat.prn
                guard markSeen(id) else { continue }
                sat.used = used.contains(sat.prn)
                all.append(sat)
            }
        }
        seen.removeAll()
        seenOutsideBitmap.removeAll(keepingCapacity: true)
        satellites = all
    }

    /// Records a satellite id (`constellation << 16 | prn`); false when it was already recorded.
    @inline(__always)
    private mutating func markSeen(_ id: Int) -> Bool {
        let compact = Self.compactID(id)
        if compact >= 0 { return seen.insert(compact) }
        return seenOutsideBitmap.insert(id).inserted
    }

    /// `constellation * 512 + prn` for constellations 0–15 and PRNs 0–511 (a bit in `seen`); −1 otherwise.
    @inline(__always)
    private static func compactID(_ id: Int) -> Int {
        let prn = id & 0xFFFF, constellation = id >> 16
        return prn < 512 && constellation >= 0 && constellation < 16 ? constellation << 9 | prn : -1
    }

    /// The index of the set for (talker, signal), inserting an empty one in order when missing.
    @inline(__always)
    private mutating func setIndex(talker: UInt16, signal: Int) -> Int {
        var i = 0
        while i < sets.count {
            let s = sets[i]
            if s.talker == talker && s.signal == signal { return i }
            if (s.talker, s.signal) > (talker, signal) { break }
            i += 1
        }
        sets.insert(SatelliteSet(talker: talker, signal: signal), at: i)
        return i
    }

    /// Constellation from the NMEA PRN ranges (NMEA 0183 v4.11 §GSV note; gpsd `nmeaid_to_prn`):
    /// 1–32 GPS, 33–64 SBAS, 65–96 GLONASS, 193–202 QZSS, 201–264 BeiDou, 301–336 Galileo.
    static func constellation(prn: Int, talker: Talker?) -> Constellation? {
        if let c = talker?.constellation, talker != .gps { return c }
        switch prn {
        case 1...32: return .gps
        case 33...64, 120...158: return .sbas
        case 65...96: return .glonass
        case 193...200: return .qzss
        case 201...264, 401...437: return .beidou
        case 301...336: return .galileo
        default: return talker?.constellation
        }
    }
}
