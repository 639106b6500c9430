#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
@testable import LocationUplink
import Testing

/// The spool journal on its own: what a crash leaves behind is read back as the reports held.
@Suite("uplink spool file")
struct UplinkSpoolFileTests {
    static func report(_ n: Int) -> UplinkSpool.Report {
        UplinkSpool.Report(sequence: UInt64(n), payload: Array("{\"_type\":\"location\",\"tst\":\(n)}".utf8))
    }

    @Test("additions, removals, a torn last line and an older daemon's whole-file spool read back as the reports held, in order")
    func parse() {
        let journal = "+1 {\"tst\":1}\n+2 {\"tst\":2}\n-1\n+3 {\"tst\":3}\n-9\n+4 {\"tst\":4"
        #expect(UplinkSpool.parse(Array(journal.utf8)).map(\.sequence) == [2, 3])
        let legacy = "{\"tst\":10}\n{\"tst\":11}\n"
        #expect(UplinkSpool.parse(Array(legacy.utf8)) == [UplinkSpool.Report(sequence: 1, payload: Array("{\"tst\":10}".utf8)),
                                                          UplinkSpool.Report(sequence: 2, payload: Array("{\"tst\":11}".utf8))])
    }

    @Test("a spool reopened after appends (as after SIGKILL) holds what was added and not removed; compaction and truncation keep it so")
    func reopen() throws {
        let scratch = try Scratch()
        let spool = UplinkSpool(directory: scratch.path, name: "fleet")
        #expect(try spool.open().isEmpty)
        try spool.append(removed: [], added: (1...5).map(Self.report), sync: true)
        // 7 was dropped before it was ever written: its removal is not written, nor counted.
        try spool.append(removed: [1, 2, 7], added: [Self.report(6)], sync: true)
        #expect(spool.held == 4)
        // Another process reads it, as a restarted daemon would.
        let again = UplinkSpool(directory: scratch.path, name: "fleet")
        #expect(try again.open().map(\.sequence) == [3, 4, 5, 6])
        // Compacted at open: one line per report held.
        let text = String(decoding: FileManager.default.contents(atPath: again.path) ?? Data(), as: UTF8.self)
        #expect(text.split(separator: "\n").map { $0.prefix(2) } == ["+3", "+4", "+5", "+6"])
        try again.append(removed: [3, 4, 5, 6], added: [], sync: false)
        #expect(FileManager.default.contents(atPath: again.path)?.count == 0, "nothing held: the file is truncated")
        // Removals and removed reports past what is held (and 64) call for a compaction.
        for n in 10..<60 { try again.append(removed: [], added: [Self.report(n)], sync: false) }
        try again.append(removed: (10..<50).map(UInt64.init), added: [], sync: false)
        #expect(again.needsCompaction)
        try again.rewrite((50..<60).map(Self.report))
        #expect(!again.needsCompaction && again.held == 10)
        #expect(try UplinkSpool(directory: scratch.path, name: "fleet").open().map(\.sequence) == (50..<60).map(UInt64.init))
    }
}
