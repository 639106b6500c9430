#if canImport(Glibc)
import Glibc
#endif
import LocationPosix
import LocationWire
@testable import LocationServer
import Testing
import TestSupport

/// Issue 12, hole 1: the audit's retention — per-user files, so that no user evicts another's records
/// or the administrators' — and AUDIT's pages, which cover any size of log.
@Suite("Audit retention and pages")
struct AuditRetentionTests {
    @Test("each bucket has its own file, and the name reads back to the bucket", arguments: [
        (AuditBucket.administrators, "audit.jsonl"), (.user(0), "audit-uid-0.jsonl"), (.user(1000), "audit-uid-1000.jsonl"),
        (.user(65534), "audit-uid-65534.jsonl"), (.user(UInt32.max), "audit-uid-4294967295.jsonl"),
    ])
    func fileNames(bucket: AuditBucket, name: String) {
        #expect(bucket.fileName == name)
        #expect(AuditBucket(fileName: name) == bucket)
        #expect(AuditBucket(fileName: name + ".1") == bucket)
    }

    @Test("other files in the state directory are no bucket's", arguments: [
        "grants.json", "fudger.secret", "audit.jsonl.2", "audit-uid-.jsonl", "audit-uid-x.jsonl", "audit-uid-1.json",
        "audit-uid-4294967296.jsonl", "audit-uid--1.jsonl", "audit.jsonl.tmp",
    ])
    func notAudit(name: String) {
        #expect(AuditBucket(fileName: name) == nil)
    }

    @Test("grants and revokes go to the administrators; everything else to the client's user", arguments: [
        ("grant", 0, AuditBucket.administrators), ("revoke", 1000, .administrators), ("decision", 0, .user(0)),
        ("decision", 1, .user(1)), ("delivery", 1000, .user(1000)), ("question", 65534, .user(65534)),
    ])
    func buckets(event: String, uid: UInt32, bucket: AuditBucket) {
        #expect(AuditBucket(event: event, uid: uid) == bucket)
    }

    @Test("a file moves to .1 only when the next line would take it past its own cap", arguments: [
        (AuditBucket.user(1), 0, 300_000, false),          // an empty file takes any line
        (.user(1), 262_000, 144, false), (.user(1), 262_000, 145, true), (.user(1), 262_144, 1, true),
        (.administrators, 262_144, 1, false), (.administrators, 1_048_000, 577, true),
    ])
    func rotation(bucket: AuditBucket, size: Int, line: Int, rotates: Bool) {
        #expect(AuditRetention().rotates(bucket, size: size, adding: line) == rotates)
    }

    static func directory() -> String {
        var template = Array("/tmp/locationd-audit-XXXXXX".utf8CString)
        return String(cString: TemporaryDirectories.mkdtemp(&template)!)
    }

    static func line(_ t: Int, uid: UInt32, _ padding: Int = 0) -> [UInt8] {
        Array(#"{"unix":\#(t),"event":"decision","client":{"uid":\#(uid)},"reason":"\#(String(repeating: "x", count: padding))"}"#.utf8)
    }

    static func size(_ path: String) -> Int {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : 0
    }

    @Test("a flood by one user, at any rate and record size, leaves every other user's and the administrators' records",
          arguments: [(records: 10_000, padding: 0), (records: 2_000, padding: 3_000), (records: 100, padding: 60_000)])
    func floodEvictsNoOneElse(records: Int, padding: Int) {
        let dir = Self.directory()
        let retention = AuditRetention(userBytes: 16 << 10, administratorBytes: 32 << 10)
        let log = AuditLog(directory: dir, retention: retention)
        log.append(Self.line(1, uid: 0), to: .administrators)
        log.append(Self.line(2, uid: 1000), to: .user(1000))
        for t in 0..<records { log.append(Self.line(10 + t, uid: 1, padding), to: .user(1)) }
        log.append(Self.line(1_000_000, uid: 1000), to: .user(1000))
        let lines = log.lines(since: nil)
        #expect(lines.first == String(decoding: Self.line(1, uid: 0), as: UTF8.self))
        #expect(lines.contains(String(decoding: Self.line(2, uid: 1000), as: UTF8.self)))
        #expect(lines.last == String(decoding: Self.line(1_000_000, uid: 1000), as: UTF8.self))
        // The attacker keeps its newest records, within its cap (twice on disk at most).
        #expect(lines.contains(String(decoding: Self.line(10 + records - 1, uid: 1, padding), as: UTF8.self)))
        let lineBytes = Self.line(10 + records - 1, uid: 1, padding).count + 1  // the longest (most digits)
        let current = Self.size(dir + "/audit-uid-1.jsonl"), older = Self.size(dir + "/audit-uid-1.jsonl.1")
        #expect(current <= max(16 << 10, lineBytes) && older <= max(16 << 10, lineBytes))
        // At least its newest cap − one record are kept.
        #expect(current + older >= min(records * lineBytes, (16 << 10) - lineBytes))
        #expect(log.fileNames() == ["audit-uid-1.jsonl", "audit-uid-1.jsonl.1", "audit-uid-1000.jsonl", "audit.jsonl"]
                || records * lineBytes <= 16 << 10)
    }

    static func records(_ times: [Double?]) -> [(unixTime: Double?, line: String)] {
        times.enumerated().map { (i, t) in (t, #"{"unix":\#(t.map { "\($0)" } ?? "null"),"n":\#(1000 + i)}"#) }
    }

    @Test("paging returns every record exactly once, in order, however the pages fall on equal times",
          arguments: [(limit: 1, bytes: 1 << 20), (limit: 3, bytes: 1 << 20), (limit: 256, bytes: 100), (limit: 256, bytes: 1 << 20),
                      (limit: 7, bytes: 90)])
    func pagesCoverAll(limit: Int, bytes: Int) throws {
        // Times with runs of equal values (one millisecond, several users), and a line without a time.
        let times: [Double?] = [5, 1, 1, 1, nil, 2.5, 2.5, 9, 1, 3, 3, 3, 3, 3, 4, 5, 5]
        let records = Self.records(times)
        let all = AuditPage.select(records, since: nil, after: nil, limit: .max, maximumBytes: .max).lines
        #expect(all.count == records.count)
        #expect(all.first?.hasPrefix(#"{"unix":null"#) == true)
        var paged: [String] = []
        var cursor: AuditCursor? = nil
        for _ in 0..<100 {
            let page = AuditPage.select(records, since: nil, after: cursor, limit: limit, maximumBytes: bytes)
            #expect(!page.lines.isEmpty)
            #expect(page.lines.count <= limit)
            paged += page.lines
            guard let next = page.next else { break }
            // The cursor travels as text.
            cursor = try #require(AuditCursor(next.text))
        }
        #expect(paged == all)
    }

    @Test("since and a cursor together: from the later of the two", arguments: [
        (since: 3.0, cursor: nil, first: 3.0, count: 8), (since: 3.0, cursor: AuditCursor(unixTime: 3, skip: 2), first: 3.0, count: 6),
        (since: nil, cursor: AuditCursor(unixTime: 3, skip: 5), first: 4.0, count: 3), (since: 4.5, cursor: AuditCursor(unixTime: 3, skip: 1), first: 5.0, count: 2),
        (since: 10.0, cursor: nil, first: nil, count: 0),
    ] as [(since: Double?, cursor: AuditCursor?, first: Double?, count: Int)])
    func sinceAndCursor(since: Double?, cursor: AuditCursor?, first: Double?, count: Int) {
        let records = Self.records([1, 2, 3, 3, 3, 3, 3, 4, 5, 5])
        let page = AuditPage.select(records, since: since, after: cursor)
        #expect(page.lines.count == count)
        #expect(page.lines.first.flatMap { AuditLog.unixTime(of: Substring($0)) } == first)
        #expect(page.next == nil)
    }

    @Test("a page's lines are read as records that encode back to the stored bytes; a damaged line is left out")
    func pageRecords() throws {
        let dir = Self.directory()
        let log = AuditLog(directory: dir, retention: AuditRetention())
        let stored = #"{"unix":1764480000.5,"time":"2025-11-30T05:20:00.500Z","event":"decision","client":{"pid":4242,"uid":1000,"user":"alice","exe":"/usr/bin/navit","name":"My Navigator"},"request":"AUTHORIZE","status":"authorizedOnce","accuracy":"full","reason":"..."}"#
        log.append(Array(stored.utf8), to: .user(1000))
        log.append(Array(#"{"unix":1764480001,"event":"decision","client":{"uid":1000"#.utf8), to: .user(1000))  // cut short
        log.append(Self.line(1_764_480_002, uid: 1000, 3), to: .user(1000))
        let page = log.page(since: nil, after: nil)
        #expect(page.lines.count == 3)
        #expect(page.events.map { String(decoding: $0.encoded(), as: UTF8.self) } ==
                [stored, String(decoding: Self.line(1_764_480_002, uid: 1000, 3), as: UTF8.self)])
        #expect(page.next == nil)
    }

    @Test("cursors read back only as the daemon writes them", arguments: [
        ("1764480000.5:1", AuditCursor(unixTime: 1_764_480_000.5, skip: 1)), ("-inf:3", AuditCursor(unixTime: -.infinity, skip: 3)),
        ("12:0", AuditCursor(unixTime: 12, skip: 0)), ("12", nil), ("x:1", nil), ("12:-1", nil), ("nan:1", nil), ("", nil),
    ])
    func cursorText(text: String, cursor: AuditCursor?) {
        #expect(AuditCursor(text) == cursor)
        if let cursor { #expect(AuditCursor(cursor.text) == cursor) }
    }
}
