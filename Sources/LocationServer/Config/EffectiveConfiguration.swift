import LocationCore
import LocationSources

extension DaemonConfiguration {
    /// The effective configuration as INI text, every setting with its value (defaults included).
    public var effectiveDescription: String {
        var s = "[daemon]\n"
        s += "socket = \(socketPath)\nstate-directory = \(stateDirectory)\n"
        // The default group may be missing (a daemon run from the source tree; the package creates it): said in a
        // comment, so that this text still reads back (a group named in the file must exist).
        s += Self.groupName(adminGroup) != nil ? "admin-group = \(adminGroup)\n"
            : "; admin-group = \(adminGroup) ; the default: no such group on this system, so root only\n"
        s += "log-level = \(logLevel.name)\nmax-clients = \(maxClients)\nmax-clients-per-user = \(maxClientsPerUser)\nclient-timeout = \(DurationText.configText(clientTimeout))\n"
        s += "gpsd-listen = \(gpsdListen.map(\.description).joined(separator: " "))\n"
        s += "nmea-socket = \(nmeaSocket ?? "")\n"
        if let shareGroup { s += "share-group = \(shareGroup)\n" }
        for r in receivers {
            s += "\n[receiver \(r.name)]\n"
            switch r.source {
            case let .serial(path, speed):
                s += "type = serial\npath = \(path)\nspeed = \(speed.map(String.init) ?? "auto")\n"
            case let .gpsd(host, port, device):
                s += "type = gpsd\nserver = \(host.contains(":") ? "[\(host)]" : host):\(port)\n"
                if let device { s += "device = \(device)\n" }
                s += "server-user = \(r.serverUser)\n"
            case let .replay(file, rate, loop):
                s += "type = replay\nfile = \(file)\nrate = \(rate.map { "\($0)" } ?? "max")\nloop = \(loop ? "yes" : "no")\n"
            }
            s += "priority = \(r.priority)\n"
            s += "stale-after = \(r.staleAfter.map { DurationText.configText($0.inSeconds) } ?? "auto")\n"
            if case .gpsd = r.source {} else {
                s += "allow-missing-checksum = \(r.allowMissingChecksum ? "yes" : "no")\n"
            }
            if case .replay = r.source {} else {
                s += "check-date = \(r.checkDate ? "yes" : "no")\n"
            }
        }
        s += "\n[policy]\naccess = \(policy.access.rawValue)\naccuracy = \(policy.accuracy.rawValue)\n"
        s += "once-lifetime = \(DurationText.configText(policy.onceLifetime))\nask-timeout = \(DurationText.configText(policy.askTimeout))\n"
        s += "reduced-grid = \(DurationText.configNumber(policy.reducedGrid))\nreduced-interval = \(DurationText.configText(policy.reducedInterval))\n"
        for c in clients {
            s += "\n[client \(c.name)]\n"
            if let v = c.executable { s += "executable = \(v)\n" }
            if let v = c.user { s += "user = \(v)\n" }
            if let v = c.group { s += "group = \(v)\n" }
            if let v = c.unit { s += "unit = \(v)\n" }
            if let v = c.userUnit { s += "user-unit = \(v)\n" }
            if c.interpreter { s += "interpreter = yes\n" }
            if let v = c.appID { s += "app-id = \(v)\n" }
            s += "access = \(c.access.rawValue)\naccuracy = \(c.accuracy.rawValue)\n"
            if let v = c.usage.whenInUse { s += "usage.when-in-use = \(v)\n" }
            if let v = c.usage.always { s += "usage.always = \(v)\n" }
            for (k, v) in c.purposes.sorted(by: { $0.key < $1.key }) { s += "purpose.\(k) = \(v)\n" }
        }
        return s
    }
}
