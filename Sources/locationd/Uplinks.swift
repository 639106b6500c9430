#if canImport(Glibc)
import Glibc
#endif
import LocationServer
import LocationUplink
import LocationWire

/// An `[uplink NAME]` section read and checked, with its password.
struct ConfiguredUplink {
    let configuration: UplinkConfiguration
    let password: String?
}

/// Reads every `[uplink NAME]` section (keys, values, the password file).
/// - Throws: `ConfigFileError` with the file and line of the mistake.
func readUplinks(_ configuration: DaemonConfiguration) throws(ConfigFileError) -> [ConfiguredUplink] {
    var uplinks: [ConfiguredUplink] = []
    for section in configuration.uplinkSections {
        for entry in section.entries.values.sorted(by: { $0.line < $1.line }) where !UplinkConfiguration.keys.contains(entry.key) {
            throw ConfigFileError(file: entry.file, line: entry.line, key: entry.key, message: "unknown key in [uplink \(section.name)]")
        }
        let uplink: UplinkConfiguration
        do {
            uplink = try UplinkConfiguration(name: section.name, hostname: hostName()) { key in
                section.entries[key].map { (value: $0.value, line: $0.line) }
            }
        } catch {
            let file = error.key.flatMap { section.entries[$0]?.file } ?? section.file
            throw ConfigFileError(file: file, line: error.line ?? section.line, key: error.key, message: error.message)
        }
        guard !uplinks.contains(where: { $0.configuration.name == uplink.name }) else {
            throw ConfigFileError(file: section.file, line: section.line, key: nil, message: "uplink \(uplink.name) defined twice")
        }
        for (key, path) in uplink.files where access(path, R_OK) != 0 {
            let entry = section.entries[key]
            throw ConfigFileError(file: entry?.file ?? section.file, line: entry?.line, key: key,
                                  message: "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        var password: String?
        if let path = uplink.passwordFile {
            guard let text = readFirstLine(path) else {
                let entry = section.entries["password-file"]
                throw ConfigFileError(file: entry?.file ?? section.file, line: entry?.line, key: "password-file",
                                      message: "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            password = text
        }
        uplinks.append(ConfiguredUplink(configuration: uplink, password: password))
    }
    // libmosquitto is loaded only now that an uplink needs it (a daemon without one maps neither it nor OpenSSL).
    if let section = configuration.uplinkSections.first, let failure = MQTTUplink.loadLibrary() {
        throw ConfigFileError(file: section.file, line: section.line, key: nil,
                              message: "[uplink \(section.name)] needs libmosquitto (Debian: libmosquitto1): \(failure)")
    }
    return uplinks
}

/// Starts the uplinks and subscribes each to the daemon's Publisher.
func startUplinks(_ uplinks: [ConfiguredUplink], daemon: Daemon, stateDirectory: String, log: Log) -> [MQTTUplink] {
    uplinks.map { configured in
        let c = configured.configuration
        let uplink = MQTTUplink(configuration: c, password: configured.password, stateDirectory: stateDirectory) { level, message, pairs in
            let severity: LogLevel = switch level {
            case .warning: .warning
            case .notice: .notice
            case .info: .info
            }
            log.log(severity, message, pairs: pairs)
        }
        let subscription = UplinkSubscription(name: c.name, broker: c.broker.description, topic: c.topic, format: c.format.rawValue,
                                              accuracy: c.accuracy, minInterval: c.minInterval, distanceFilter: c.distanceFilter)
        daemon.addUplink(subscription, sink: { [uplink] fix, accuracy in uplink.submit(fix, accuracy: accuracy) },
                         sharing: { [uplink] change in
                             switch change {
                             case .on: uplink.setSharing(true)
                             case .off(let discard): uplink.setSharing(false, discardingSpool: discard)
                             }
                         },
                         status: { [uplink] in
                             let s = uplink.status
                             return ServerMessage.Status.Uplink(name: s.name, broker: s.broker, topic: s.topic, accuracy: s.accuracy.rawValue,
                                                                state: !s.sharing ? "paused" : s.connected ? "connected" : "disconnected",
                                                                reason: s.problem, spooled: s.spooled, sent: s.sent, dropped: s.dropped)
                         })
        uplink.start()
        daemon.onStop { uplink.stop() }
        log.notice("uplink started", ["uplink.name": c.name, "broker": c.broker.description, "topic": c.topic,
                                      "format": c.format.rawValue, "accuracy": c.accuracy.rawValue])
        return uplink
    }
}

/// This machine's name (gethostname(2)); "localhost" when it has none.
func hostName() -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
    let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return name.isEmpty ? "localhost" : name
}

/// The first line of a file, without its line end; nil when it cannot be read (errno says why).
func readFirstLine(_ path: String) -> String? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var line: UnsafeMutablePointer<CChar>?
    var capacity = 0
    defer { free(line) }
    guard getline(&line, &capacity, file) >= 0, let line else { return errno == 0 || feof(file) != 0 ? "" : nil }
    var text = String(cString: line)
    while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
    return text
}
