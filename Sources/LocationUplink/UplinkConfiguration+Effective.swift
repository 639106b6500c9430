extension UplinkConfiguration {
    /// The section as `locationd --check-config` prints it: every key with its effective value
    /// (defaults filled in, `%h` and `%n` expanded in the topic), in the config file's INI syntax. The
    /// password file is named, never read out.
    public var effectiveDescription: String {
        var s = "[uplink \(name)]\ntype = mqtt\nbroker = \(broker)\nclient-id = \(clientID)\n"
        if let username { s += "username = \(username)\n" }
        for (key, path) in files { s += "\(key) = \(path)\n" }
        s += "topic = \(topic)\nformat = \(format.rawValue)\naccuracy = \(accuracy.rawValue)\n"
        s += "min-interval = \(Self.seconds(minInterval))s\ndistance-filter = \(Self.number(distanceFilter))\n"
        s += "qos = \(qos)\nretain = \(retain ? "yes" : "no")\ntracker-id = \(trackerID)\nspool-max = \(spoolMax)\n"
        return s
    }

    private static func seconds(_ d: Duration) -> String {
        let (s, attoseconds) = d.components
        return attoseconds == 0 ? String(s) : number(Double(s) + Double(attoseconds) / 1e18)
    }

    /// `30` for 30.0, `0.5` for 0.5: as a person writes it, and as the section reads it back.
    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : "\(value)"
    }
}
