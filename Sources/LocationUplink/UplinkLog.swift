/// How loud an uplink event is; the daemon maps it onto its log levels (never above warning here).
public enum UplinkLogLevel: Sendable {
    case warning, notice, info
}

/// Receives an uplink's log events: level, message, and key–value context (`uplink.name`, `reason`).
public typealias UplinkLogger = @Sendable (UplinkLogLevel, String, [(String, String)]) -> Void
