import LocationCore
import LocationPosix

extension UplinkConfiguration {
    /// The section as `locationd --check-config` prints it: every key with its effective value
    /// (defaults filled in, `%h` and `%n` expanded in the topic), in the config file's INI syntax. The
    /// password file is named, never read out.
    public var effectiveDescription: String {
        var s = "[uplink \(name)]\ntype = mqtt\nbroker = \(broker)\nclient-id = \(clientID)\n"
        if let username { s += "username = \(username)\n" }
        for (key, path) in files { s += "\(key) = \(path)\n" }
        s += "topic = \(topic)\nformat = \(format.rawValue)\naccuracy = \(accuracy.rawValue)\n"
        s += "min-interval = \(DurationText.configText(minInterval.inSeconds))\ndistance-filter = \(DurationText.configNumber(distanceFilter))\n"
        s += "qos = \(qos)\nretain = \(retain ? "yes" : "no")\ntracker-id = \(trackerID)\nspool-max = \(spoolMax)\n"
        return s
    }
}
