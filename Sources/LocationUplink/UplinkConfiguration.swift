import LocationCore
import LocationWire

/// What an uplink publishes: the OwnTracks location object, or our own TPV line.
public enum UplinkFormat: String, Sendable {
    /// OwnTracks JSON `_type: location` (owntracks.org/booklet/tech/json, "_type=location").
    case owntracks
    /// The native protocol's `TPV` object (docs/PROTOCOL.md "TPV").
    case tpv
}

/// Where the broker is: `mqtt://host:port` (plain TCP, default port 1883) or `mqtts://host:port`
/// (TLS, default port 8883).
public struct BrokerAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var tls: Bool

    /// Parses `mqtt://host[:port]` or `mqtts://host[:port]`; an IPv6 host goes in brackets (`[::1]:1883`).
    /// - Returns: nil for anything else.
    public init?(parsing text: String) {
        let rest: Substring
        if text.hasPrefix("mqtt://") { tls = false; rest = text.dropFirst("mqtt://".count) }
        else if text.hasPrefix("mqtts://") { tls = true; rest = text.dropFirst("mqtts://".count) }
        else { return nil }
        var hostPart = rest
        var portPart: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            hostPart = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portPart = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            hostPart = rest[..<colon]
            portPart = rest[rest.index(after: colon)...]
        }
        guard !hostPart.isEmpty, !hostPart.contains("/") else { return nil }
        host = String(hostPart)
        if let portPart {
            guard let p = Int(portPart), p >= 1, p <= 65535 else { return nil }
            port = p
        } else {
            port = tls ? 8883 : 1883
        }
    }

    public var description: String { "\(tls ? "mqtts" : "mqtt")://\(host.contains(":") ? "[\(host)]" : host):\(port)" }
}

/// A mistake in an `[uplink NAME]` section: the key, its line, and what is wrong.
public struct UplinkConfigurationError: Error, Sendable {
    public var key: String?
    public var line: Int?
    public var message: String
}

/// One `[uplink NAME]` section of locationd.conf (Config/locationd.conf and locationd.conf(5) document
/// every key).
public struct UplinkConfiguration: Sendable, Equatable {
    public var name: String
    public var broker: BrokerAddress
    /// MQTT client identifier; default the hostname.
    public var clientID: String
    public var username: String?
    /// A file whose first line is the password (mode 0600, owned by root).
    public var passwordFile: String?
    /// TLS: the PEM file of the certificate authorities the broker's certificate must chain to; nil: the
    /// system's (/etc/ssl/certs).
    public var caFile: String?
    /// TLS: this machine's client certificate and its key (PEM), for brokers that require one.
    public var certFile: String?
    public var keyFile: String?
    /// The topic with `%h` (hostname) and `%n` (uplink name) replaced.
    public var topic: String
    public var format: UplinkFormat
    /// The most accuracy the uplink gets (default reduced: the same fudged, paced position clients get).
    public var accuracy: AccuracyAuthorization
    /// Least time between two reports (full accuracy; reduced is paced by `reduced-interval`).
    public var minInterval: Duration
    /// Metres the position must move before the next report (full accuracy); 0: off.
    public var distanceFilter: Double
    /// MQTT quality of service, 0, 1 or 2.
    public var qos: Int32
    /// Whether the broker keeps the last report for new subscribers.
    public var retain: Bool
    /// OwnTracks `tid`, two characters shown on the map; default the last two of the hostname.
    public var trackerID: String
    /// Most reports held (in memory and in the spool file) until the broker acknowledges them; the
    /// oldest not yet handed to the broker connection go first. At least 1.
    public var spoolMax: Int

    /// Every key an `[uplink]` section takes.
    public static let keys: Set<String> = ["type", "broker", "client-id", "username", "password-file", "ca-file", "cert-file", "key-file", "topic", "format", "accuracy",
                                           "min-interval", "distance-filter", "qos", "retain", "tracker-id", "spool-max"]

    /// The files the section names (password, certificates): `--check-config` and the start check each.
    public var files: [(key: String, path: String)] {
        [("password-file", passwordFile), ("ca-file", caFile), ("cert-file", certFile), ("key-file", keyFile)]
            .compactMap { key, path in path.map { (key, $0) } }
    }

    /// The status topic: the report topic with `/status` appended (retained `online`/`offline`).
    public var statusTopic: String { topic + "/status" }

    /// Reads a section.
    /// - Parameters:
    ///   - name: the section's NAME.
    ///   - hostname: this machine's name, for `client-id`, `%h` and `tracker-id` defaults.
    ///   - value: the value and line of a key, nil when the section does not set it.
    /// - Throws: `UplinkConfigurationError` naming the key and line.
    public init(name: String, hostname: String, value: (String) -> (value: String, line: Int)?) throws(UplinkConfigurationError) {
        func fail(_ key: String, _ message: String) -> UplinkConfigurationError {
            UplinkConfigurationError(key: key, line: value(key)?.line, message: message)
        }
        self.name = name
        guard let type = value("type") else { throw UplinkConfigurationError(key: "type", line: nil, message: "missing in [uplink \(name)] (type = mqtt)") }
        guard type.value == "mqtt" else { throw fail("type", "'\(type.value)' is not an uplink type (mqtt)") }
        guard let brokerText = value("broker") else { throw UplinkConfigurationError(key: "broker", line: nil, message: "missing in [uplink \(name)]") }
        guard let broker = BrokerAddress(parsing: brokerText.value) else {
            throw fail("broker", "'\(brokerText.value)' is not mqtt://host:port or mqtts://host:port")
        }
        self.broker = broker
        caFile = value("ca-file")?.value
        certFile = value("cert-file")?.value
        keyFile = value("key-file")?.value
        for (key, path) in [("ca-file", caFile), ("cert-file", certFile), ("key-file", keyFile)] {
            guard let path else { continue }
            guard broker.tls else { throw fail(key, "only for an mqtts:// broker") }
            guard path.hasPrefix("/") else { throw fail(key, "'\(path)' is not an absolute path") }
        }
        guard (certFile == nil) == (keyFile == nil) else {
            throw fail(certFile == nil ? "key-file" : "cert-file", "cert-file and key-file go together")
        }
        clientID = value("client-id")?.value ?? hostname
        guard !clientID.isEmpty, clientID.utf8.count <= 65535 else { throw fail("client-id", "empty client id") }
        username = value("username")?.value
        passwordFile = value("password-file")?.value
        if let passwordFile {
            guard passwordFile.hasPrefix("/") else { throw fail("password-file", "'\(passwordFile)' is not an absolute path") }
            guard username != nil else { throw fail("password-file", "a password needs a username") }
        }
        let rawTopic = value("topic")?.value ?? "owntracks/locationd/%h"
        let expanded = rawTopic.replacing("%h", with: hostname).replacing("%n", with: name)
        guard !expanded.isEmpty, !expanded.contains("+"), !expanded.contains("#") else {
            throw fail("topic", "'\(rawTopic)' is not a topic to publish to (no + or # wildcards)")
        }
        topic = expanded
        switch value("format")?.value ?? "owntracks" {
        case "owntracks": format = .owntracks
        case "tpv": format = .tpv
        case let other: throw fail("format", "'\(other)' is not owntracks or tpv")
        }
        switch value("accuracy")?.value ?? "reduced" {
        case "reduced": accuracy = .reduced
        case "full": accuracy = .full
        case let other: throw fail("accuracy", "'\(other)' is not full or reduced")
        }
        if let text = value("min-interval")?.value {
            guard let d = DurationText.parse(text) else { throw fail("min-interval", "'\(text)' is not a duration (e.g. 30s, 5min)") }
            minInterval = d
        } else {
            minInterval = .zero
        }
        if let text = value("distance-filter")?.value {
            guard let m = Double(text), m >= 0, m <= 1_000_000 else { throw fail("distance-filter", "'\(text)' is not a number of metres from 0 to 1000000") }
            distanceFilter = m
        } else {
            distanceFilter = 0
        }
        if let text = value("qos")?.value {
            guard let q = Int32(text), (0...2).contains(q) else { throw fail("qos", "'\(text)' is not 0, 1 or 2") }
            qos = q
        } else {
            qos = 1
        }
        switch value("retain")?.value ?? "no" {
        case "yes", "true", "on", "1": retain = true
        case "no", "false", "off", "0": retain = false
        case let other: throw fail("retain", "'\(other)' is not yes or no")
        }
        trackerID = value("tracker-id")?.value ?? String(hostname.suffix(2))
        guard (1...2).contains(trackerID.count) else { throw fail("tracker-id", "'\(trackerID)' is not one or two characters (OwnTracks tid)") }
        if let text = value("spool-max")?.value {
            guard let n = Int(text), n >= 1, n <= 10_000_000 else { throw fail("spool-max", "'\(text)' is not a number from 1 to 10000000") }
            spoolMax = n
        } else {
            spoolMax = 10_000
        }
    }
}
