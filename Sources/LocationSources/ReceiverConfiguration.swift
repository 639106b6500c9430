import LocationCore
import LocationPosix

/// What a `[receiver NAME]` section of the config says (see ARCHITECTURE.md "Config file sketch").
public struct ReceiverConfiguration: Hashable, Sendable {
    /// Where fixes come from.
    public enum Source: Hashable, Sendable {
        /// A tty: path (a device node or a /dev/serial/by-id link) and line speed (nil = autobaud).
        case serial(path: String, speed: Int?)
        /// A gpsd daemon through libgps, optionally only one device's fixes.
        case gpsd(host: String, port: Int, device: String?)
        /// A capture file played back: `rate` 1 = the capture's pace, 10 = ten times faster, nil = as
        /// fast as possible; `loop` plays it again at its end.
        case replay(file: String, rate: Double?, loop: Bool)
    }

    /// The section name, used as the fix's `device`.
    public var name: String
    public var source: Source
    /// Higher wins while it has a valid fix.
    public var priority: Int
    /// How long a valid fix of this receiver stays live without a newer one (config `stale-after`); nil
    /// = 3 × its reporting cycle. `FixSelector` judges it.
    public var staleAfter: Duration?
    /// Accept NMEA sentences without a checksum (old receivers).
    public var allowMissingChecksum: Bool
    /// Judge a live receiver's dates against the clock, correcting GPS week rollovers (config `check-date`,
    /// default yes; docs/RECEIVERS.md). Off for a capture fed through a serial port, or a receiver whose
    /// dates are known wrong while its positions are good.
    public var checkDate: Bool
    /// gpsd only (config `server-user`, a user name or uid; default `gpsd`): when gpsd runs on this host,
    /// the user besides root that may run it. A gpsd socket owned by anyone else is refused: any user can
    /// listen on port 2947 while gpsd is down, and would feed every client the position of their choosing.
    public var serverUser: String

    public init(name: String, source: Source, priority: Int = 0, staleAfter: Duration? = nil,
                allowMissingChecksum: Bool = false, checkDate: Bool = true, serverUser: String = "gpsd") {
        self.name = name
        self.source = source
        self.priority = priority
        self.staleAfter = staleAfter
        self.allowMissingChecksum = allowMissingChecksum
        self.checkDate = checkDate
        self.serverUser = serverUser
    }
}

/// A config key that is wrong, with the key's name and why (the config loader adds file:line).
public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    public var key: String
    public var message: String
    /// Line of the offending key, when the loader knows it.
    public var line: Int?

    public init(key: String, message: String, line: Int? = nil) {
        self.key = key
        self.message = message
        self.line = line
    }

    public var description: String { "\(key): \(message)" }
}

extension ReceiverConfiguration {
    /// The receiver types (`type =`).
    public static let types = ["serial", "gpsd", "replay"]

    /// The keys a `[receiver NAME]` section may hold: those of any type.
    public static let keys: Set<String> = types.reduce(into: []) { $0.formUnion(keys(forType: $1) ?? []) }

    /// The keys a receiver of `type` reads (nil: not a type): any other key in its section would be
    /// silently ignored, so the loader refuses it (e.g. `speed` under `type = gpsd`, where gpsd sets it).
    public static func keys(forType type: String) -> Set<String>? {
        let common: Set<String> = ["type", "priority", "stale-after"]
        switch type {
        case "serial": return common.union(["path", "speed", "allow-missing-checksum", "check-date"])
        case "gpsd": return common.union(["server", "device", "check-date", "server-user"])
        case "replay": return common.union(["file", "rate", "loop", "allow-missing-checksum"])
        default: return nil
        }
    }

    /// Builds a receiver from a section's key/value pairs.
    /// - Parameters:
    ///   - name: the section's NAME.
    ///   - value: looks a key up; returns the value and its line.
    /// - Throws: `ConfigurationError` naming the key: unknown type, missing required key, bad value.
    public init(name: String, value: (String) -> (value: String, line: Int)?) throws(ConfigurationError) {
        func required(_ key: String) throws(ConfigurationError) -> String {
            guard let v = value(key) else {
                throw ConfigurationError(key: key, message: "required for this receiver type", line: value("type")?.line)
            }
            return v.value
        }
        guard let type = value("type") else {
            throw ConfigurationError(key: "type", message: "missing (serial, gpsd or replay)")
        }
        let source: Source
        switch type.value {
        case "serial":
            let path = try required("path")
            var speed: Int? = nil
            if let s = value("speed"), s.value != "auto" {
                guard let n = Int(s.value), Self.commonSpeeds.contains(n) else {
                    throw ConfigurationError(key: "speed", message: "'\(s.value)' is not auto or one of \(Self.commonSpeeds.sorted().map(String.init).joined(separator: ", "))", line: s.line)
                }
                speed = n
            }
            source = .serial(path: path, speed: speed)
        case "gpsd":
            var host = "localhost", port = 2947
            if let s = value("server") {
                let text = s.value
                if let colon = text.lastIndex(of: ":"), !text.hasSuffix("]") {
                    host = String(text[..<colon])
                    guard let p = Int(text[text.index(after: colon)...]), (1...65535).contains(p) else {
                        throw ConfigurationError(key: "server", message: "'\(text)' is not host:port", line: s.line)
                    }
                    port = p
                } else {
                    host = text
                }
                if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
                guard !host.isEmpty else { throw ConfigurationError(key: "server", message: "empty host", line: s.line) }
            }
            source = .gpsd(host: host, port: port, device: value("device")?.value)
        case "replay":
            let file = try required("file")
            var rate: Double? = 1
            if let r = value("rate") {
                if r.value == "max" {
                    rate = nil
                } else {
                    guard let v = Double(r.value), v > 0, v.isFinite else {
                        throw ConfigurationError(key: "rate", message: "'\(r.value)' is not a positive number or max", line: r.line)
                    }
                    rate = v
                }
            }
            let loop = try Self.boolean("loop", value("loop")) ?? false
            source = .replay(file: file, rate: rate, loop: loop)
        default:
            throw ConfigurationError(key: "type", message: "'\(type.value)' is not serial, gpsd or replay", line: type.line)
        }
        var priority = 0
        if let p = value("priority") {
            guard let v = Int(p.value) else {
                throw ConfigurationError(key: "priority", message: "'\(p.value)' is not a whole number", line: p.line)
            }
            priority = v
        }
        var stale: Duration? = nil
        if let s = value("stale-after"), s.value != "auto" {
            guard let v = Self.duration(s.value) else {
                throw ConfigurationError(key: "stale-after", message: "'\(s.value)' is not a duration (e.g. 3, 3s, 500ms)", line: s.line)
            }
            guard v > .zero else {
                throw ConfigurationError(key: "stale-after",
                                         message: "must be more than 0: every fix would be stale as it comes (auto judges by the receiver's rate)",
                                         line: s.line)
            }
            stale = v
        }
        let allow = try Self.boolean("allow-missing-checksum", value("allow-missing-checksum")) ?? false
        let checkDate = try Self.boolean("check-date", value("check-date")) ?? true
        var serverUser = "gpsd"
        if let u = value("server-user") {
            guard !u.value.isEmpty else { throw ConfigurationError(key: "server-user", message: "empty user name", line: u.line) }
            guard UInt32(u.value) != nil || UserDatabase.userID(named: u.value) != nil else {
                throw ConfigurationError(key: "server-user", message: "'\(u.value)' is neither a user of this system nor a uid", line: u.line)
            }
            serverUser = u.value
        }
        self.init(name: name, source: source, priority: priority, staleAfter: stale, allowMissingChecksum: allow, checkDate: checkDate,
                  serverUser: serverUser)
    }

    static let commonSpeeds: Set<Int> = [4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600]

    static func boolean(_ key: String, _ v: (value: String, line: Int)?) throws(ConfigurationError) -> Bool? {
        guard let v else { return nil }
        switch v.value.lowercased() {
        case "yes", "true", "on", "1": return true
        case "no", "false", "off", "0": return false
        default: throw ConfigurationError(key: key, message: "'\(v.value)' is not yes or no", line: v.line)
        }
    }

    /// Parses a config duration (`stale-after`, `client-timeout`, `once-lifetime`, `ask-timeout`,
    /// `reduced-interval`) with the project's one duration grammar, `DurationText` (`500ms`, `30s`,
    /// `15min`, `1h`, `7d`, `1h 30min`; a bare number is seconds).
    /// - Returns: the duration, or nil for anything else (negative, not finite, unknown unit).
    public static func duration(_ text: String) -> Duration? {
        DurationText.parse(text)
    }

    /// `duration(_:)` in seconds, for settings kept as seconds.
    public static func seconds(_ text: String) -> Double? { duration(text)?.inSeconds }
}
