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

        /// Pages in the set under way, from the first page that gave the count (0: not known yet).
        var expectedPages = 0
        /// The page number the set under way expects next; 0 when none is under way.
        var nextPage = 0

        /// Adds one page to the set under way; returns true when it completed the set and changed it.
        ///
        /// NMEA 0183 v4.11 §GSV lets the second and later pages of a set leave fields that repeat the first
        /// page's empty (the number of pages among them, parsed as 0): the first page's count stands.
        mutating func receive(_ page: SkyLog.Page, satellites: UnsafeBufferPointer<GSVSatellite>, epoch: Int) -> Bool {
            hasBuilding = true
            if page.messageNumber <= 1 {
                building.removeAll(keepingCapacity: true)
                expectedPages = 0
            }
            if page.totalMessages > 0 { expectedPages = page.totalMessages }
            for sat in satellites {
                building.append(sat.satellite(constellation: SkyView.constellation(prn: sat.prn, talker: page.talker),
                                              signalID: page.signalID))
            }
            nextPage = page.messageNumber + 1
            return expectedPages > 0 && page.messageNumber >= expectedPages && finishBuilding(epoch: epoch)
        }

        /// The set under way becomes the complete one; returns true when its content differs.
        mutating func finishBuilding(epoch: Int) -> Bool {
            let differs = !hasComplete || complete != building
            swap(&complete, &building)
            building.removeAll(keepingCapacity: true)
            hasBuilding = false
            nextPage = 0
            hasComplete = true
            refreshed = epoch
            return differs
        }
    }

    /// In the order the receiver first sent them. Sets are few (one per talker and signal id), so a linear search wins.
    private var sets: [SatelliteSet] = []
    /// A set not refreshed for `expiryEpochs` is dropped, so a constellation or signal the receiver stopped
    /// reporting leaves the view.
    static let expiryEpochs = 10
    private var epoch = 0
    /// Satellites (`key`) the last epoch's GSA sentences marked as used, and those of the epoch under way.
    private var used = IntegerBitSet()
    private var usedThisEpoch = IntegerBitSet()
    private var sawGSAThisEpoch = false
    private var changed = false
    /// Satellites already listed during a rebuild (`key`), cleared after each rebuild.
    private var seen = IntegerBitSet()
    private(set) var satellites: [Satellite] = []
    /// True when a GSV set ended in the last epoch (`Fix.satellitesUpdated`). Never for a receiver that sends
    /// no GSV: gpsd 3.22 sends such a receiver's watchers no SKY at all, GSA or GGA with DOPs or not (seen with
    /// the shared captures cat-ms352 (GGA, RMC), mr-350p (GSA, no GSV) and hemi under gpsfake).
    private(set) var reportedLastEpoch = false

    /// Number of satellites the last epoch's GSA sentences marked as used, each counted once; nil before any
    /// GSA.
    var usedCount: Int? { sawAnyGSA ? used.count : nil }
    private var sawAnyGSA = false

    /// Adds one GSV page, given as its header and its satellites.
    ///
    /// A set is keyed by the signal id of its first page. A later page continues the set under way of its
    /// talker that expects it (Quectel LC79D sends `$GPGSV` pages 1–2 without a signal id and page 3 with one,
    /// one set in all); its satellites keep the page's own signal id.
    mutating func add(_ page: SkyLog.Page, satellites: UnsafeBufferPointer<GSVSatellite>) {
        let talker = page.talker?.rawValue ?? 0, signal = page.signalID ?? 0, number = page.messageNumber
        let index: Int
        if number > 1, !sets.contains(where: { $0.talker == talker && $0.signal == signal && $0.nextPage == number }),
           let continued = sets.firstIndex(where: { $0.talker == talker && $0.nextPage == number }) {
            index = continued
        } else {
            index = setIndex(talker: talker, signal: signal)
        }
        if sets[index].receive(page, satellites: satellites, epoch: epoch) { changed = true }
    }

    /// Notes the satellites one GSA sentence marks as used in the fix.
    ///
    /// A PRN names a satellite only together with its system: NMEA 4.10+ receivers send one GSA per system
    /// (`$GNGSA,…,1` GPS, `…,3` Galileo), each numbering its satellites from 1, so Galileo's 3 is not GPS's
    /// 3. The system comes from the GSA's system id, else the talker, else the PRN's range (NMEA 0183 v4.11
    /// §GSA field 18, Table 20). The GSA sentences of one epoch add up.
    mutating func noteUsed(_ prns: UnsafeBufferPointer<Int>, of list: SkyLog.UsedList) {
        if !sawGSAThisEpoch { usedThisEpoch.removeAll() }
        sawGSAThisEpoch = true
        sawAnyGSA = true
        for prn in prns where prn > 0 {
            let system = Self.constellation(prn: prn, talker: list.talker, systemID: list.systemID)
            usedThisEpoch.insert(Self.key(prn: prn, constellation: system))
        }
    }

    /// Ends an epoch: GSA sets seen in it replace the used list; a changed view is rebuilt.
    mutating func endEpoch() {
        reportedLastEpoch = sets.contains { $0.hasComplete && $0.refreshed == epoch }
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

    /// Merges the complete sets in the order they first came; a satellite seen on several signals is listed
    /// once, with its first entry.
    private mutating func rebuild() {
        var all: [Satellite] = []
        all.reserveCapacity(satellites.count)
        for set in sets where set.hasComplete {
            for var sat in set.complete {
                let key = Self.key(prn: sat.prn, constellation: sat.constellation)
                guard seen.insert(key) else { continue }
                sat.used = used.contains(key)
                all.append(sat)
            }
        }
        seen.removeAll()
        satellites = all
    }

    /// One integer per satellite: its system and its number within the system (`svid`), so that the NMEA
    /// numberings of one satellite (GLONASS 65 and 1, Galileo 301, Quectel's 101 and 1, SBAS 33 and 120) meet and those of
    /// two systems never do. Within the bitmap of `IntegerBitSet` for systems 0–15 and svids 0–511.
    /// Sources: NMEA 0183 v4.11 §GSV id ranges; gpsd_json(5) SKY `gnssid`/`svid`.
    static func key(prn: Int, constellation: Constellation?) -> Int {
        let system = constellation?.rawValue ?? 15
        let svid: Int
        switch constellation {
        case .sbas?: svid = (33...64).contains(prn) ? prn + 87 : prn
        case .glonass?: svid = (65...96).contains(prn) ? prn - 64 : prn
        case .galileo?: svid = (301...399).contains(prn) ? prn - 300 : (101...199).contains(prn) ? prn - 100 : prn
        case .beidou?: svid = (401...499).contains(prn) ? prn - 400 : (201...299).contains(prn) ? prn - 200 : prn
        case .qzss?: svid = (193...202).contains(prn) ? prn - 192 : prn
        default: svid = prn
        }
        guard (0..<512).contains(svid) else { return IntegerBitSet.bitmapSize + (system << 32 | (prn & 0xFFFF_FFFF)) }
        return system << 9 | svid
    }

    /// The index of the set for (talker, signal), adding an empty one after the others when missing: the sets stay
    /// in the order the receiver first sent them, the order gpsd lists satellites in (a cycle's GSV sets as they
    /// arrive: $GPGSV, $GLGSV, $GAGSV, $GBGSV from a u-blox M9N; gpsd 3.22 SKY, Tests/NMEATests/GpsdGoldens).
    @inline(__always)
    private mutating func setIndex(talker: UInt16, signal: Int) -> Int {
        var i = 0
        while i < sets.count {
            if sets[i].talker == talker && sets[i].signal == signal { return i }
            i += 1
        }
        sets.append(SatelliteSet(talker: talker, signal: signal))
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

    /// The system of a satellite a GSA lists as used: from the NMEA 4.10+ system id (1 GPS — with SBAS and
    /// QZSS in their PRN ranges —, 2 GLONASS, 3 Galileo, 4 BeiDou, 5 QZSS, 6 NavIC), else as for GSV.
    /// Source: NMEA 0183 v4.11 §GSA field 18 and Table 20 "GNSS System ID".
    static func constellation(prn: Int, talker: Talker?, systemID: Int?) -> Constellation? {
        switch systemID {
        case 1?:
            switch prn {
            case 33...64, 120...158: return .sbas
            case 193...202: return .qzss
            default: return .gps
            }
        case 2?: return .glonass
        case 3?: return .galileo
        case 4?: return .beidou
        case 5?: return .qzss
        case 6?: return .navic
        default: return constellation(prn: prn, talker: talker)
        }
    }
}
