#if canImport(Glibc)
import Glibc
#endif
import LocationPolicy
import LocationPosix
import LocationWire

/// The daemon's log: one event per line on stderr, prefixed `<N>` with its syslog priority so that
/// journald files it at the right level, with `key=value` context (`client.uid=1000 client.exe=/usr/bin/foo`).
public final class Log: Sendable {
    public let level: Locked<LogLevel>
    /// Lines a client causes (connected, closed, refused), counted per user and message: one user's
    /// connection flood must not fill the journal, nor run journald's per-service rate limit dry so that
    /// the daemon's other lines are dropped (`ClientLines`).
    private let clientLines = Locked(AuditBudget(perWindow: Log.clientLinesPerMinute))

    /// Lines of one message one user may cause per minute; the rest are counted, and the next line of
    /// that user and message says how many were left out (`suppressed=N`).
    public static let clientLinesPerMinute = 30

    /// Lines a receiver causes (a fix rejected for a new reason), counted per receiver: one that alternates
    /// between reasons, or reconnects again and again, writes at most `receiverLinesPerMinute` a minute.
    private let receiverLines = Locked(AuditBudget(perWindow: Log.receiverLinesPerMinute))

    /// Lines of one receiver per minute; the next one after says how many were left out (`suppressed=N`).
    public static let receiverLinesPerMinute = 10

    public init(level: LogLevel) { self.level = Locked(level) }

    /// Writes a line the receiver `receiver` caused, within `receiverLinesPerMinute`.
    public func receiver(_ severity: LogLevel, _ message: String, receiver: String, _ context: KeyValuePairs<String, String> = [:]) {
        guard severity <= level.withLock({ $0 }) else { return }
        let admission = receiverLines.withLock { $0.admit(uid: 0, kind: receiver, now: .now) }
        guard case .record(let omitted) = admission else { return }
        var pairs = context.map { ($0.key, $0.value) }
        if omitted > 0 { pairs.append(("suppressed", String(omitted))) }
        write(severity, message, pairs)
    }

    /// Writes `message` with `context` when `severity` is at or above the configured level.
    public func log(_ severity: LogLevel, _ message: String, _ context: KeyValuePairs<String, String> = [:]) {
        guard severity <= level.withLock({ $0 }) else { return }
        write(severity, message, context.map { ($0.key, $0.value) })
    }

    /// Writes a line a client caused, within `clientLinesPerMinute` per user (`uid`; nil: a peer that could
    /// not be identified, all counted together) and message.
    public func client(_ severity: LogLevel, _ message: String, uid: UInt32?, _ context: KeyValuePairs<String, String> = [:]) {
        guard severity <= level.withLock({ $0 }) else { return }
        let admission = clientLines.withLock { $0.admit(uid: uid ?? .max, kind: message, now: .now) }
        guard case .record(let omitted) = admission else { return }
        var pairs = context.map { ($0.key, $0.value) }
        if omitted > 0 { pairs.append(("suppressed", String(omitted))) }
        write(severity, message, pairs)
    }

    private func write(_ severity: LogLevel, _ message: String, _ context: [(String, String)]) {
        var line = "<\(severity.rawValue)>\(message)"
        for (k, v) in context {
            line += " \(k)="
            // A value from a client (an executable path, a declared name) cannot start a line of its own.
            let v = DisplayText.escaped(v)
            line += v.contains(" ") || v.contains("\"") || v.isEmpty ? "\"" + v.replacingAll("\"", "\\\"") + "\"" : v
        }
        line += "\n"
        // All of it, through the funnel (EINTR retried, a partial write continued); a log line that cannot
        // be written is dropped, there is nowhere to report it.
        _ = FileDescriptorOps.writeAll(2, Array(line.utf8))
    }

    /// `log(_:_:_:)` with context built at run time (the uplinks' events).
    public func log(_ severity: LogLevel, _ message: String, pairs: [(String, String)]) {
        if severity <= level.withLock({ $0 }) { write(severity, message, pairs) }
    }

    public func error(_ m: String, _ c: KeyValuePairs<String, String> = [:]) { log(.error, m, c) }
    public func warning(_ m: String, _ c: KeyValuePairs<String, String> = [:]) { log(.warning, m, c) }
    public func notice(_ m: String, _ c: KeyValuePairs<String, String> = [:]) { log(.notice, m, c) }
    public func info(_ m: String, _ c: KeyValuePairs<String, String> = [:]) { log(.info, m, c) }
    public func debug(_ m: String, _ c: KeyValuePairs<String, String> = [:]) { log(.debug, m, c) }
}

extension String {
    func replacingAll(_ target: String, _ replacement: String) -> String {
        var out = ""
        var rest = Substring(self)
        while let r = rest.firstRange(of: target) {
            out += rest[..<r.lowerBound]
            out += replacement
            rest = rest[r.upperBound...]
        }
        return out + rest
    }
}
