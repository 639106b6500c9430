#if canImport(Glibc)
import Glibc
#endif
import LocationPosix

/// The reports an uplink holds until its broker acknowledges them, in a journal in the state directory
/// so that a report accepted for sending survives a crash (SIGKILL) of the daemon, and — once written
/// with `fsync` — a power loss.
///
/// One record a line, appended: `+SEQ JSON` adds report SEQ (a decimal sequence number, increasing; the
/// report is one JSON object without line ends), `-SEQ` removes it (the broker acknowledged it, or it was
/// dropped from a full spool). A report is added, and synced, before libmosquitto is given it; its
/// removal is appended when the broker acknowledges it (QoS 1 PUBACK, QoS 2 PUBCOMP: libmosquitto's
/// `on_publish`) and not synced: lost, it only means the report is sent again after a restart — at least
/// once, as QoS 1 is. When every report is gone the file is truncated; when removals outnumber the
/// reports held it is compacted (`FileDescriptorOps.writeAtomically`, as the grant store is), and so it is
/// at every start. A spool written whole by an older
/// daemon (one JSON object a line) loads as reports in that order. A last line cut short by a crash is
/// left out (never appended to: the start compacts it away).
///
/// Used from one serial queue only (`MQTTUplink`'s spool queue): the descriptor is its own.
public final class UplinkSpool: @unchecked Sendable {
    /// The spool file, e.g. `/var/lib/locationd/uplink-fleet.spool`.
    public let path: String
    /// The descriptor records are appended to (O_APPEND), open after `open`.
    private var fd: Int32 = -1
    /// Reports in the file now (added and not removed): the sequence numbers, so that a removal of one
    /// never written (dropped before its turn) is not written either.
    private var live = Set<UInt64>()
    /// How many reports the file holds now.
    public var held: Int { live.count }
    /// Removal records and removed reports in the file: what a compaction would save, in records.
    private var dead = 0

    /// - Parameters:
    ///   - directory: the state directory (absolute).
    ///   - name: the uplink's name; only letters, digits, `-`, `_` and `.` are kept in the file name.
    public init(directory: String, name: String) {
        let safe = String(name.unicodeScalars.map { s -> Character in
            (s.properties.isAlphabetic && s.isASCII) || ("0"..."9").contains(s) || s == "-" || s == "_" || s == "." ? Character(s) : "_"
        })
        path = directory + "/uplink-" + safe + ".spool"
    }

    deinit { if fd >= 0 { close(fd) } }

    /// One report held: its sequence number and bytes.
    public struct Report: Sendable, Equatable {
        /// Its number in the journal (`+SEQ`), increasing with each report the uplink accepts.
        public var sequence: UInt64
        /// The report as published: one JSON object (OwnTracks or TPV), UTF-8, without a line end.
        public var payload: [UInt8]
        /// Makes the value; each parameter is the property of the same name.
        public init(sequence: UInt64, payload: [UInt8]) {
            self.sequence = sequence
            self.payload = payload
        }
    }

    /// Reads the reports the file holds, oldest first, rewrites the file with only those (compacted),
    /// and opens it for appending. No file: none, and an empty one is made when the first is added.
    /// - Throws: the failing call and its errno; the file is then left as it was.
    public func open() throws(UplinkSpoolError) -> [Report] {
        let reports = Self.parse(try readAll())
        try rewrite(reports)
        return reports
    }

    /// Appends removals then additions in one write; with `sync`, `fsync` before returning (additions
    /// must be on disk before libmosquitto gets them). A spool left with nothing is truncated.
    /// - Parameters:
    ///   - removed: sequence numbers acknowledged or dropped.
    ///   - added: reports to hold, oldest first.
    /// - Throws: the failing call and its errno.
    public func append(removed: [UInt64], added: [Report], sync: Bool) throws(UplinkSpoolError) {
        guard !removed.isEmpty || !added.isEmpty else { return }
        try openForAppend()
        let removed = removed.filter { live.contains($0) }
        guard !removed.isEmpty || !added.isEmpty else { return }
        if added.isEmpty && live.count == removed.count {
            // Nothing left: an empty file says so without a record (and without fsync: a stale file
            // only sends its reports again).
            if ftruncate(fd, 0) != 0 { throw UplinkSpoolError(path: path, operation: "ftruncate", errno: errno) }
            live = []
            dead = 0
            return
        }
        var bytes: [UInt8] = []
        for sequence in removed {
            bytes.append(UInt8(ascii: "-"))
            bytes.append(contentsOf: String(sequence).utf8)
            bytes.append(10)
        }
        Self.appendAdditions(added, to: &bytes)
        if case .failure(let e) = FileDescriptorOps.writeAll(fd, bytes) { throw UplinkSpoolError(path: path, operation: "write", errno: e.rawValue) }
        if sync && fdatasync(fd) != 0 { throw UplinkSpoolError(path: path, operation: "fdatasync", errno: errno) }
        live.subtract(removed)
        live.formUnion(added.map(\.sequence))
        dead += 2 * removed.count
    }

    /// Whether a compaction is due: the removals and removed reports outnumber the reports held (and
    /// there are more than 64 of them), so that the file stays within about twice what it holds.
    public var needsCompaction: Bool { dead > max(64, held) }

    /// Rewrites the file with `reports` only (the ones held, oldest first), atomically.
    /// - Throws: the failing call and its errno.
    public func rewrite(_ reports: [Report]) throws(UplinkSpoolError) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(reports.reduce(0) { $0 + $1.payload.count + 24 })
        Self.appendAdditions(reports, to: &bytes)
        do {
            try FileDescriptorOps.writeAtomically(path: path, bytes: bytes)
        } catch {
            throw UplinkSpoolError(path: path, operation: "write", errno: error.rawValue)
        }
        if fd >= 0 { close(fd); fd = -1 }
        live = Set(reports.map(\.sequence))
        dead = 0
        try openForAppend()
    }

    /// `+SEQ JSON` a report, each on a line of its own.
    private static func appendAdditions(_ reports: [Report], to bytes: inout [UInt8]) {
        for report in reports {
            bytes.append(UInt8(ascii: "+"))
            bytes.append(contentsOf: String(report.sequence).utf8)
            bytes.append(UInt8(ascii: " "))
            bytes.append(contentsOf: report.payload)
            bytes.append(10)
        }
    }

    /// The reports in a spool file's bytes, oldest first (see the type's comment for the format).
    static func parse(_ data: [UInt8]) -> [Report] {
        var reports: [Report] = []
        var removed = Set<UInt64>()
        var next: UInt64 = 1
        // Only whole lines: a last line without its line end was cut short.
        let whole = data.last == 10 ? data[...] : data[..<(data.lastIndex(of: 10).map { $0 + 1 } ?? 0)]
        for line in whole.split(separator: 10) {
            switch line.first {
            case UInt8(ascii: "+"):
                guard let space = line.firstIndex(of: UInt8(ascii: " ")),
                      let sequence = UInt64(String(decoding: line[line.index(after: line.startIndex)..<space], as: UTF8.self)) else { continue }
                let payload = line[line.index(after: space)...]
                guard payload.first == UInt8(ascii: "{"), payload.last == UInt8(ascii: "}") else { continue }
                reports.append(Report(sequence: sequence, payload: Array(payload)))
                next = max(next, sequence + 1)
            case UInt8(ascii: "-"):
                if let sequence = UInt64(String(decoding: line.dropFirst(), as: UTF8.self)) { removed.insert(sequence) }
            case UInt8(ascii: "{") where line.last == UInt8(ascii: "}"):
                // An older daemon's spool: the reports in order, numbered here.
                reports.append(Report(sequence: next, payload: Array(line)))
                next += 1
            default:
                continue
            }
        }
        return reports.filter { !removed.contains($0.sequence) }.sorted { $0.sequence < $1.sequence }
    }

    // MARK: - Inside

    private func readAll() throws(UplinkSpoolError) -> [UInt8] {
        switch FileDescriptorOps.readFile(atPath: path) {
        case .success(let data): return data
        case .failure(.noSuchFileOrDirectory): return []
        case .failure(let e): throw UplinkSpoolError(path: path, operation: "read", errno: e.rawValue)
        }
    }

    private func openForAppend() throws(UplinkSpoolError) {
        guard fd < 0 else { return }
        fd = Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw UplinkSpoolError(path: path, operation: "open", errno: errno) }
    }
}

/// A spool file could not be read or written: the path, the call and its errno.
public struct UplinkSpoolError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var operation: String
    public var errno: Int32

    public var description: String {
        "\(operation) \(path): \(String(cString: strerror(errno)))"
    }
}
