import LocationCore

/// The satellites in view, assembled from GSV pages, with the used flags from GSA.
///
/// Each talker and signal id has its own GSV set (`$GPGSV` 1/3, 2/3, 3/3, then `$GLGSV` …). A set replaces
/// the previous view of that talker and signal when its last page arrives. Source: NMEA 0183 v4.11 §GSV, §GSA.
struct SkyView: Sendable {
    private struct SetKey: Hashable, Sendable {
        var talker: UInt16
        var signal: Int
    }

    private var complete: [SetKey: [Satellite]] = [:]
    /// Epoch count when each complete set last arrived: a set not refreshed for `expiryEpochs` is dropped,
    /// so a constellation or signal the receiver stopped reporting leaves the view.
    private var refreshed: [SetKey: Int] = [:]
    private var epoch = 0
    static let expiryEpochs = 10
    private var building: [SetKey: [Satellite]] = [:]
    private var used: Set<Int> = []
    private var usedThisEpoch: Set<Int> = []
    private var sawGSAThisEpoch = false
    private var changed = false
    private(set) var satellites: [Satellite] = []

    /// Number of satellites the last GSA set marked as used; nil before any GSA.
    var usedCount: Int? { sawAnyGSA ? used.count : nil }
    private var sawAnyGSA = false

    mutating func add(_ page: GSV, talker: Talker?) {
        let key = SetKey(talker: talker?.rawValue ?? 0, signal: page.signalID ?? 0)
        if page.messageNumber <= 1 { building[key] = [] }
        var sats = page.satellites
        for i in sats.indices {
            sats[i].constellation = Self.constellation(prn: sats[i].prn, talker: talker)
            sats[i].signalID = page.signalID
        }
        building[key, default: []].append(contentsOf: sats)
        if page.messageNumber >= page.totalMessages {
            complete[key] = building.removeValue(forKey: key) ?? []
            refreshed[key] = epoch
            changed = true
        }
    }

    mutating func noteUsed(_ gsa: GSA, talker: Talker?) {
        if !sawGSAThisEpoch { usedThisEpoch.removeAll(keepingCapacity: true) }
        sawGSAThisEpoch = true
        sawAnyGSA = true
        for prn in gsa.satellitesUsed { usedThisEpoch.insert(prn) }
    }

    /// Ends an epoch: GSA sets seen in it replace the used list; a changed view is rebuilt.
    mutating func endEpoch() {
        epoch += 1
        for (key, at) in refreshed where epoch - at > Self.expiryEpochs {
            complete.removeValue(forKey: key)
            building.removeValue(forKey: key)
            refreshed.removeValue(forKey: key)
            changed = true
        }
        if sawGSAThisEpoch {
            if used != usedThisEpoch { used = usedThisEpoch; changed = true }
            sawGSAThisEpoch = false
        }
        guard changed else { return }
        changed = false
        var all: [Satellite] = []
        var seen = Set<Int>()
        for key in complete.keys.sorted(by: { ($0.talker, $0.signal) < ($1.talker, $1.signal) }) {
            for var sat in complete[key]! {
                // The same satellite appears once per signal; keep its first (strongest-listed) entry.
                let id = (sat.constellation?.rawValue ?? 15) << 16 | sat.prn
                guard seen.insert(id).inserted else { continue }
                sat.used = used.contains(sat.prn)
                all.append(sat)
            }
        }
        satellites = all
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
