/// The sky-view changes of one epoch — GSV pages and GSA used-lists — in arrival order, until the epoch is
/// delivered and they are replayed into the `SkyView`.
///
/// `FixAssembler` keeps the log rather than changing the view at once so that an epoch reopened after a
/// wrong end-of-cycle guess replays its changes in the same order (NMEA 0183 v4.11 §GSV, §GSA). The log is
/// stored flat: the satellites of all pages in one array, the used PRNs in another, and per entry a small
/// header with the range it owns. Every stored value is plain data, so appending, clearing and replaying copy
/// no sentence values and touch no reference counts.
struct SkyLog: Sendable {
    /// What a GSV page says about itself: the set it belongs to and its place in it.
    struct Page: Sendable {
        var talker: Talker?
        /// NMEA 4.10+ signal id; nil before 4.10.
        var signalID: Int?
        /// This page's number and the number of pages in the set, from 1.
        var messageNumber: Int
        var totalMessages: Int
    }

    /// One logged change, with the range of `satellites` or `prns` it owns.
    private enum Entry: Sendable {
        case page(Page, satellites: Range<Int>)
        case used(UsedList, prns: Range<Int>)
    }

    /// Whose satellites a GSA used-list names: its talker and, from NMEA 4.10, its GNSS system id. A PRN means
    /// a satellite only together with these (NMEA 0183 v4.11 §GSA: "GNSS System ID", Table 20).
    struct UsedList: Sendable {
        var talker: Talker?
        var systemID: Int?
    }

    private var entries: [Entry] = []
    private var satellites: [GSVSatellite] = []
    private var prns: [Int] = []

    init() {
        entries.reserveCapacity(32)
        satellites.reserveCapacity(128)
        prns.reserveCapacity(64)
    }

    var isEmpty: Bool { entries.isEmpty }

    /// Logs a GSV page.
    mutating func append(_ page: GSV, talker: Talker?) {
        let start = satellites.count
        let list = page.satelliteList
        for i in 0..<list.count { satellites.append(list[i]) }
        let header = Page(talker: talker, signalID: page.signalID, messageNumber: page.messageNumber,
                          totalMessages: page.totalMessages)
        entries.append(.page(header, satellites: start..<satellites.count))
    }

    /// Logs the PRNs a GSA sentence marks as used, with the talker and system id that say whose they are.
    mutating func append(_ gsa: GSA, talker: Talker?) {
        let start = prns.count
        let used = gsa.usedPRNs
        for i in 0..<used.count { prns.append(used[i]) }
        entries.append(.used(UsedList(talker: talker, systemID: gsa.systemID), prns: start..<prns.count))
    }

    /// Logs all of `other`'s changes after this log's.
    mutating func append(contentsOf other: SkyLog) {
        let satelliteOffset = satellites.count, prnOffset = prns.count
        for entry in other.entries {
            switch entry {
            case .page(let page, let range):
                entries.append(.page(page, satellites: range.lowerBound + satelliteOffset..<range.upperBound + satelliteOffset))
            case .used(let list, let range):
                entries.append(.used(list, prns: range.lowerBound + prnOffset..<range.upperBound + prnOffset))
            }
        }
        satellites.append(contentsOf: other.satellites)
        prns.append(contentsOf: other.prns)
    }

    /// Empties the log, keeping its storage.
    mutating func removeAll() {
        guard !entries.isEmpty else { return }
        entries.removeAll(keepingCapacity: true)
        satellites.removeAll(keepingCapacity: true)
        prns.removeAll(keepingCapacity: true)
    }

    /// Applies the logged changes to `sky`, in order.
    func replay(into sky: inout SkyView) {
        satellites.withUnsafeBufferPointer { satellites in
            prns.withUnsafeBufferPointer { prns in
                for entry in entries {
                    switch entry {
                    case .page(let page, let range):
                        sky.add(page, satellites: UnsafeBufferPointer(rebasing: satellites[range]))
                    case .used(let list, let range):
                        sky.noteUsed(UnsafeBufferPointer(rebasing: prns[range]), of: list)
                    }
                }
            }
        }
    }
}
