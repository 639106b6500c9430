#if canImport(Glibc)
import Glibc
#endif
import LocationPosix

/// The audit files: one JSON object per line, in the state directory — `audit.jsonl` for the
/// administrators' grants and revokes, `audit-uid-N.jsonl` for each user N's clients — each capped by
/// `AuditRetention` (the older part moves to `….1`). Which program saw your location, when, how precisely.
///
/// Every call goes through the syscall funnel. `@unchecked Sendable`: `open` is unguarded; sound because
/// its one owner, `PolicyStore`, calls it on its own serial queue only.
public final class AuditLog: @unchecked Sendable {
    /// The state directory.
    public let directory: String
    /// The administrators' file (`directory/audit.jsonl`).
    public let path: String
    let retention: AuditRetention
    /// Files kept open for appending, with their sizes; at most `maximumOpen`.
    private var open: [AuditBucket: (fd: Int32, size: Int)] = [:]
    private let maximumOpen = 16

    /// - Parameters:
    ///   - directory: the state directory.
    ///   - retention: each bucket's cap (256 KiB per user, 1 MiB for the administrators by default).
    init(directory: String, retention: AuditRetention = AuditRetention()) {
        self.directory = directory
        path = directory + "/audit.jsonl"
        self.retention = retention
    }

    /// The file of a daemon before per-user buckets: one cap for every bucket (tests).
    public convenience init(directory: String, maximumBytes: Int) {
        self.init(directory: directory, retention: AuditRetention(userBytes: maximumBytes, administratorBytes: maximumBytes))
    }

    deinit {
        for (_, file) in open { FileDescriptorOps.close(file.fd) }
    }

    /// Appends one event line (already JSON, newline added here) to the administrators' file.
    /// - Returns: nil, or why the line was not written (see `append(_:to:)`).
    @discardableResult
    public func append(_ line: [UInt8]) -> Errno? { append(line, to: .administrators) }

    /// Appends one event line (already JSON, newline added here) to `bucket`'s file.
    ///
    /// A line is written whole or not at all: when the write fails part-way (a full filesystem takes what
    /// fits in its last block), the file is cut back to its previous end, so that no half record is left
    /// for the next one to be glued to.
    /// - Returns: nil, or the errno of the call that kept the line from the file (the line is lost).
    @discardableResult
    func append(_ line: [UInt8], to bucket: AuditBucket) -> Errno? {
        let bytes = line + [10]
        var file: (fd: Int32, size: Int)
        switch self.file(bucket) {
        case .success(let open): file = open
        case .failure(let e): return e
        }
        if retention.rotates(bucket, size: file.size, adding: bytes.count) {
            FileDescriptorOps.close(file.fd)
            open[bucket] = nil
            let current = directory + "/" + bucket.fileName
            _ = FileDescriptorOps.rename(current, to: current + ".1")
            switch self.file(bucket) {
            case .success(let fresh): file = fresh
            case .failure(let e): return e
            }
        }
        if case .failure(let e) = FileDescriptorOps.writeAll(file.fd, bytes) {
            if case .failure = FileDescriptorOps.truncate(file.fd, toSize: file.size) {
                // Its size is unknown now: reopened (and measured) for the next line.
                FileDescriptorOps.close(file.fd)
                open[bucket] = nil
            }
            return e
        }
        open[bucket]?.size = file.size + bytes.count
        return nil
    }

    /// The open file of `bucket`, opened (mode 0600, appending) when it is not; the errno when it cannot be.
    private func file(_ bucket: AuditBucket) -> Result<(fd: Int32, size: Int), Errno> {
        if let file = open[bucket] { return .success(file) }
        if open.count >= maximumOpen { flush(closing: true) }
        let opened = FileDescriptorOps.open(directory + "/" + bucket.fileName, flags: O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, mode: 0o600)
        guard case .success(let fd) = opened else { return opened.map { ($0, 0) } }
        let size = (try? FileDescriptorOps.size(fd).get()) ?? 0
        open[bucket] = (fd, size)
        return .success((fd, size))
    }

    /// Flushes every open file to disk, closing them when `closing`.
    private func flush(closing: Bool) {
        for (_, file) in open {
            _ = FileDescriptorOps.fsync(file.fd)
            if closing { FileDescriptorOps.close(file.fd) }
        }
        if closing { open = [:] }
    }

    /// Every record of every bucket, current and older files, as (Unix seconds, line); unordered.
    func records() -> [(unixTime: Double?, line: String)] {
        var out: [(unixTime: Double?, line: String)] = []
        for name in fileNames() {
            guard case .success(let bytes) = FileDescriptorOps.readFile(atPath: directory + "/" + name) else { continue }
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
                out.append((Self.unixTime(of: line), String(line)))
            }
        }
        return out
    }

    /// One `AUDIT` page (`AuditPage.select`) from every bucket, its lines read (`AuditPage.readEvents`).
    func page(since: Double?, after cursor: AuditCursor?, limit: Int = AuditPage.maximumEvents) -> AuditPage {
        var page = AuditPage.select(records(), since: since, after: cursor, limit: min(limit, AuditPage.maximumEvents))
        page.readEvents()
        return page
    }

    /// Flushes every open file to disk (on shutdown).
    public func sync() { flush(closing: false) }

    /// The lines at or after `since` (Unix seconds), oldest first, from every bucket's files.
    public func lines(since: Double?) -> [String] {
        AuditPage.select(records(), since: since, after: nil, limit: Int.max, maximumBytes: Int.max).lines
    }

    /// The audit files in the directory, by name.
    func fileNames() -> [String] {
        guard case .success(let names) = FileDescriptorOps.directoryEntries(atPath: directory) else { return [] }
        return names.filter { AuditBucket(fileName: $0) != nil }.sorted()
    }

    static func unixTime(of line: Substring) -> Double? {
        guard let r = line.firstRange(of: "\"unix\":") else { return nil }
        let rest = line[r.upperBound...].prefix { $0.isNumber || $0 == "." }
        return Double(rest)
    }
}
