import LocationPolicy
import LocationPosix
import LocationSources

/// Log levels, as syslog priorities (journald reads `<N>` prefixes on stderr).
public enum LogLevel: Int, Comparable, Sendable, CaseIterable {
    case error = 3
    case warning = 4
    case notice = 5
    case info = 6
    case debug = 7

    public init?(name: String) {
        switch name {
        case "error", "err": self = .error
        case "warning", "warn": self = .warning
        case "notice": self = .notice
        case "info": self = .info
        case "debug": self = .debug
        default: return nil
        }
    }

    public var name: String {
        switch self {
        case .error: return "error"
        case .warning: return "warning"
        case .notice: return "notice"
        case .info: return "info"
        case .debug: return "debug"
        }
    }

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }
}

/// The whole configuration of the daemon (ARCHITECTURE.md "Config file sketch"; Config/locationd.conf
/// documents every key).
public struct DaemonConfiguration: Sendable {
    public var socketPath = "/run/locationd/locationd.sock"
    public var stateDirectory = "/var/lib/locationd"
    public var adminGroup = "locationd-admin"
    /// Besides root and `admin-group`, members of this group may switch the uplinks' sharing off and on.
    public var shareGroup: String?
    public var logLevel = LogLevel.info
    /// Most clients connected at once; the next gets an ERROR and is closed.
    public var maxClients = 1024
    /// Most clients one user (uid) may have connected at once; root and the admin group are not counted.
    public var maxClientsPerUser = 64
    /// Seconds a client may leave queued messages unread before it is disconnected.
    public var clientTimeout = 30.0
    /// TCP addresses of the gpsd front (gpsd's protocol, docs/GPSD.md); empty: no gpsd front.
    public var gpsdListen: [TCPAddress] = []
    /// The NMEA socket (a Unix socket streaming NMEA sentences of the fix each client may see, for GeoClue's
    /// `nmea-socket`; docs/GPSD.md "GeoClue"); nil: none.
    public var nmeaSocket: String?
    /// Where `socket` and `nmea-socket` were set (file and line), for errors about their directories; nil: default.
    public var socketEntry: ConfigEntry?
    public var nmeaSocketEntry: ConfigEntry?
    public var receivers: [ReceiverConfiguration] = []
    public var policy = PolicyDefaults()
    public var clients: [ClientRule] = []
    /// The `[uplink NAME]` sections as written: the uplink target reads and checks them (locationd's main).
    public var uplinkSections: [ConfigSection] = []

    /// The rules the policy decides by.
    public var rules: PolicyRules { PolicyRules(defaults: policy, clients: clients) }

    public init() {}

    static let daemonKeys: Set<String> = ["socket", "state-directory", "admin-group", "log-level", "max-clients", "max-clients-per-user",
                                             "client-timeout", "gpsd-listen", "share-group", "nmea-socket"]
    static let policyKeys: Set<String> = ["access", "accuracy", "once-lifetime", "ask-timeout", "reduced-grid", "reduced-interval"]
    static let clientKeys: Set<String> = ["executable", "user", "group", "unit", "user-unit", "interpreter", "app-id", "access", "accuracy"]

    /// Loads `path` and the drop-ins of `dropInDirectory`, validating every section and key.
    /// - Throws: `ConfigFileError` with file, line and key for the first problem.
    public static func load(path: String, dropInDirectory: String? = nil) throws(ConfigFileError) -> DaemonConfiguration {
        let entries = try ConfigFile.readWithDropIns(path, dropInDirectory: dropInDirectory)
        let configuration = try DaemonConfiguration(entries: entries)
        try configuration.checkSocketDirectories(configurationFile: path)
        return configuration
    }

    /// Builds the configuration from parsed entries (later entries override earlier ones).
    public init(entries: [ConfigEntry]) throws(ConfigFileError) {
        // Group by section, keeping order of first appearance and the last value of each key.
        var order: [String] = []
        var sections: [String: [String: ConfigEntry]] = [:]
        for e in entries {
            if sections[e.section] == nil { order.append(e.section) }
            sections[e.section, default: [:]][e.key] = e
        }
        for section in order {
            let values = sections[section] ?? [:]
            let sorted = values.values.sorted { ($0.file, $0.line) < ($1.file, $1.line) }
            func fail(_ e: ConfigEntry, _ message: String) -> ConfigFileError {
                ConfigFileError(file: e.file, line: e.line, key: e.key, message: message)
            }
            if section == "daemon" {
                for e in sorted {
                    guard Self.daemonKeys.contains(e.key) else { throw fail(e, "unknown key in [daemon]") }
                    switch e.key {
                    case "socket":
                        guard e.value.hasPrefix("/") else { throw fail(e, "'\(e.value)' is not an absolute path") }
                        socketPath = e.value
                        socketEntry = e
                    case "state-directory":
                        guard e.value.hasPrefix("/") else { throw fail(e, "'\(e.value)' is not an absolute path") }
                        stateDirectory = e.value
                    case "nmea-socket":
                        guard !e.value.isEmpty else { nmeaSocket = nil; nmeaSocketEntry = nil; continue }
                        guard e.value.hasPrefix("/") else { throw fail(e, "'\(e.value)' is not an absolute path") }
                        guard e.value.utf8.count < 108 else { throw fail(e, "'\(e.value)' is longer than a Unix socket's path may be (107 bytes)") }
                        nmeaSocket = e.value
                        nmeaSocketEntry = e
                    case "share-group":
                        guard let name = Self.groupName(e.value) else { throw fail(e, Self.noGroup(e.value)) }
                        shareGroup = name
                    case "admin-group":
                        guard let name = Self.groupName(e.value) else { throw fail(e, Self.noGroup(e.value)) }
                        adminGroup = name
                    case "log-level":
                        guard let level = LogLevel(name: e.value) else {
                            throw fail(e, "'\(e.value)' is not error, warning, notice, info or debug")
                        }
                        logLevel = level
                    case "max-clients":
                        guard let n = Int(e.value), n >= 1, n <= 65536 else { throw fail(e, "'\(e.value)' is not a number from 1 to 65536") }
                        maxClients = n
                    case "max-clients-per-user":
                        guard let n = Int(e.value), n >= 1, n <= 65536 else { throw fail(e, "'\(e.value)' is not a number from 1 to 65536") }
                        maxClientsPerUser = n
                    case "client-timeout":
                        clientTimeout = try Self.positiveDuration(e, example: "30s")
                    case "gpsd-listen":
                        var addresses: [TCPAddress] = []
                        for word in e.value.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
                            guard let address = TCPAddress(parsing: String(word)) else {
                                throw fail(e, "'\(word)' is not an address and port (127.0.0.1:2947, [::1]:2947)")
                            }
                            addresses.append(address)
                        }
                        gpsdListen = addresses
                    default: break
                    }
                }
            } else if section.hasPrefix("receiver ") {
                let name = String(section.dropFirst("receiver ".count)).trimmingSpaces
                guard !name.isEmpty, let first = sorted.first else {
                    throw ConfigFileError(file: sorted.first?.file ?? "", line: sorted.first?.line, key: nil, message: "[receiver] needs a name")
                }
                for e in sorted where !ReceiverConfiguration.keys.contains(e.key) {
                    throw fail(e, "unknown key in [receiver \(name)]")
                }
                if let type = values["type"]?.value, let allowed = ReceiverConfiguration.keys(forType: type) {
                    for e in sorted where !allowed.contains(e.key) {
                        throw fail(e, "not a key of a \(type) receiver (it takes \(allowed.sorted().joined(separator: ", ")))")
                    }
                }
                do {
                    receivers.append(try ReceiverConfiguration(name: name) { key in
                        values[key].map { (value: $0.value, line: $0.line) }
                    })
                } catch {
                    let entry = values[error.key]
                    throw ConfigFileError(file: entry?.file ?? first.file, line: error.line ?? entry?.line ?? first.line,
                                          key: error.key, message: error.message)
                }
                // libgps is loaded only now that a gpsd receiver needs it (a daemon without one maps neither it nor
                // the libstdc++ it brings).
                if case .gpsd = receivers.last?.source, let failure = GpsdReceiver.loadLibrary() {
                    let entry = values["type"]
                    throw ConfigFileError(file: entry?.file ?? first.file, line: entry?.line ?? first.line, key: "type",
                                          message: "a gpsd receiver needs libgps (Debian: libgps28): \(failure)")
                }
            } else if section == "policy" {
                for e in sorted {
                    guard Self.policyKeys.contains(e.key) else { throw fail(e, "unknown key in [policy]") }
                    switch e.key {
                    case "access":
                        guard let a = AccessRule(rawValue: e.value) else { throw fail(e, "'\(e.value)' is not deny, ask, once or always") }
                        policy.access = a
                    case "accuracy":
                        guard let a = AccuracyAuthorization(rawValue: e.value) else { throw fail(e, "'\(e.value)' is not full or reduced") }
                        policy.accuracy = a
                    case "once-lifetime", "ask-timeout", "reduced-interval":
                        let s = try Self.positiveDuration(e, example: "30s, 15min, 1h")
                        if e.key == "once-lifetime" { policy.onceLifetime = s }
                        if e.key == "ask-timeout" { policy.askTimeout = s }
                        if e.key == "reduced-interval" { policy.reducedInterval = s }
                    case "reduced-grid":
                        guard let m = Double(e.value), m >= 100, m <= 100_000 else { throw fail(e, "'\(e.value)' is not a number of metres from 100 to 100000") }
                        policy.reducedGrid = m
                    default: break
                    }
                }
            } else if section.hasPrefix("client ") {
                let name = String(section.dropFirst("client ".count)).trimmingSpaces
                var rule = ClientRule(name: name, access: .ask, accuracy: .reduced, purposes: [:], line: sorted.first?.line ?? 0)
                var sawAccess = false
                for e in sorted {
                    if e.key.hasPrefix("purpose.") {
                        let key = String(e.key.dropFirst("purpose.".count))
                        guard !key.isEmpty, !e.value.isEmpty else { throw fail(e, "a purpose needs a name and a text") }
                        rule.purposes[key] = e.value
                        continue
                    }
                    if e.key.hasPrefix("usage.") {
                        guard !e.value.isEmpty else { throw fail(e, "a usage text cannot be empty") }
                        switch e.key {
                        case "usage.when-in-use": rule.usage.whenInUse = e.value
                        case "usage.always": rule.usage.always = e.value
                        default: throw fail(e, "unknown usage text: give usage.when-in-use or usage.always")
                        }
                        continue
                    }
                    guard Self.clientKeys.contains(e.key) else { throw fail(e, "unknown key in [client \(name)]") }
                    switch e.key {
                    case "executable":
                        guard e.value.hasPrefix("/") else { throw fail(e, "'\(e.value)' is not an absolute path") }
                        // The kernel names a client's executable with its links resolved: a rule for
                        // /usr/bin/python3 (a link to python3.11) would otherwise match nothing.
                        rule.executable = FileDescriptorOps.resolvedPath(e.value) ?? e.value
                    case "user":
                        // A typo would make a rule that matches no one, silently.
                        guard UInt32(e.value) != nil || UserDatabase.userID(named: e.value) != nil else {
                            throw fail(e, "'\(e.value)' is neither a user of this system nor a uid")
                        }
                        rule.user = e.value
                    case "group":
                        guard let name = Self.groupName(e.value) else { throw fail(e, Self.noGroup(e.value)) }
                        rule.group = name
                    case "unit":
                        // The system manager's units only: below user@UID.service the user names units freely.
                        guard !e.value.contains("/"), !e.value.hasPrefix("user@") else {
                            throw fail(e, "unit = names a unit of the system's service manager; for a unit of a user's own manager give user-unit = (advisory: the user chooses its name)")
                        }
                        rule.unit = e.value
                    case "user-unit":
                        guard !e.value.isEmpty, !e.value.contains("/") else { throw fail(e, "'\(e.value)' is not a unit name") }
                        rule.userUnit = e.value
                    case "interpreter":
                        switch e.value.lowercased() {
                        case "yes", "true", "on", "1": rule.interpreter = true
                        case "no", "false", "off", "0": rule.interpreter = false
                        default: throw fail(e, "'\(e.value)' is not yes or no")
                        }
                    case "app-id":
                        if let problem = ClientIdentity.appIDProblem(e.value) { throw fail(e, problem) }
                        rule.appID = e.value
                    case "access":
                        guard let a = AccessRule(rawValue: e.value) else { throw fail(e, "'\(e.value)' is not deny, ask, once or always") }
                        rule.access = a
                        sawAccess = true
                    case "accuracy":
                        guard let a = AccuracyAuthorization(rawValue: e.value) else { throw fail(e, "'\(e.value)' is not full or reduced") }
                        rule.accuracy = a
                    default: break
                    }
                }
                guard let first = sorted.first else { continue }
                guard rule.executable != nil || rule.user != nil || rule.group != nil || rule.unit != nil || rule.userUnit != nil || rule.appID != nil else {
                    throw ConfigFileError(file: first.file, line: first.line, key: nil,
                                          message: "[client \(name)] matches nothing: give executable, user, group, unit, user-unit or app-id")
                }
                if let executable = rule.executable, ProcessLoad.isInterpreter(executable), !rule.interpreter,
                   let e = sorted.first(where: { $0.key == "executable" }) {
                    throw fail(e, "\(executable) is an interpreter: any script of a matching user runs as it, so it names no program; "
                               + "match a user or group instead, or add interpreter = yes to accept that")
                }
                guard sawAccess else {
                    throw ConfigFileError(file: first.file, line: first.line, key: "access", message: "missing in [client \(name)]")
                }
                clients.append(rule)
            } else if section.hasPrefix("uplink "), let first = sorted.first {
                let name = String(section.dropFirst("uplink ".count)).trimmingSpaces
                guard !name.isEmpty else { throw ConfigFileError(file: first.file, line: first.line, key: nil, message: "[uplink] needs a name") }
                uplinkSections.append(ConfigSection(name: name, file: first.file, line: first.line, entries: values))
            } else {
                guard let e = sorted.first else { continue }
                throw ConfigFileError(file: e.file, line: e.line, key: nil, message: "unknown section [\(section)]")
            }
        }
        var names = Set<String>()
        for r in receivers where !names.insert(r.name).inserted {
            throw ConfigFileError(file: entries.first?.file ?? "", line: nil, key: nil, message: "receiver \(r.name) defined twice")
        }
    }
}

extension DaemonConfiguration {
    /// The name `text` gives a group by: its own when it is a group of this system (getgrnam(3)), the group's
    /// name when it is the number of one, the number itself when no group has it (a gid without an entry,
    /// which a client's groups then name by number, `ClientIdentity.groupNames`); nil when it is neither a
    /// group nor a number — a typo that would otherwise match no one, silently.
    static func groupName(_ text: String) -> String? {
        if let gid = UInt32(text) { return UserDatabase.name(ofGroup: gid) ?? text }
        return text.isEmpty || UserDatabase.groupID(named: text) == nil ? nil : text
    }

    /// Zero where a key takes a duration: what it would mean, and why it is refused (none of these has an "off").
    static let zeroDuration: [String: String] = [
        "client-timeout": "a client that never reads would hold its queued messages for ever",
        "once-lifetime": "a one-time grant would end as it is made (it ends anyway when its client disconnects)",
        "ask-timeout": "every question would be denied before an agent could answer (access = deny says that)",
        "reduced-interval": "reduced clients would get every fix, which averages out the reduction",
    ]

    /// The value of `e` as a duration of more than zero, in seconds.
    /// - Throws: `ConfigFileError` at `e` when it is not a duration, or is zero (saying why zero is refused).
    static func positiveDuration(_ e: ConfigEntry, example: String) throws(ConfigFileError) -> Double {
        guard let s = ReceiverConfiguration.seconds(e.value) else {
            throw ConfigFileError(file: e.file, line: e.line, key: e.key, message: "'\(e.value)' is not a duration (e.g. \(example))")
        }
        guard s > 0 else {
            throw ConfigFileError(file: e.file, line: e.line, key: e.key,
                                  message: "must be more than 0: \(zeroDuration[e.key] ?? "zero has no meaning here")")
        }
        return s
    }

    static func noGroup(_ text: String) -> String {
        text.isEmpty ? "empty group name" : "'\(text)' is neither a group of this system nor a gid"
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return String(s)
    }
}

/// One `[KIND NAME]` section as written, for a target that reads its own keys (the uplinks).
public struct ConfigSection: Sendable, Equatable {
    /// NAME.
    public var name: String
    /// The file and line of the section's first key.
    public var file: String
    public var line: Int
    /// Key → its last entry (value, file, line).
    public var entries: [String: ConfigEntry]
}
