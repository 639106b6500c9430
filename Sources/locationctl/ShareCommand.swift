import LocationClient
import LocationCore
import LocationWire

/// `locationctl share off [--for DURATION] [--discard] | on | status`: the uplinks' sharing switch.
enum ShareCommand {
    static let help = """
        usage: locationctl share off [--for DURATION] [--discard] | on | status [--socket PATH]

        The sharing switch of the daemon's uplinks (MQTT brokers of a fleet): 'off' stops publishing
        the location from the next fix on (for DURATION, e.g. 30min or 2h, at most 366d, or until 'on'); reports
        made while it is off are never sent later. Reports an uplink already held (spooled while its broker
        was away) stay held while it is off, and go when sharing is on again; with --discard they are
        dropped, and never go. 'on' resumes, 'status' shows the switch. Root, the daemon's admin-group
        and its share-group may use it; every change is audited and survives a restart of the daemon.

        exit status: 0, 64 usage, 69 daemon unreachable, 75 timeout, 76 protocol mismatch, 77 not
        allowed.

        """

    static func run(_ arguments: [String], socketPath globalSocketPath: String?) async -> ExitCode {
        var words = arguments[...]
        var socketPath = globalSocketPath
        var action: String?
        var forSeconds: Double?
        var discard = false
        while let word = words.popFirst() {
            switch word {
            case "-h", "--help":
                print(help, terminator: "")
                return .ok
            case "--socket":
                guard let path = words.popFirst() else { return usage("--socket needs a path") }
                socketPath = path
            case "--for":
                guard let text = words.popFirst(), let seconds = parseDuration(text), seconds > 0 else {
                    return usage("--for needs a duration (e.g. 30min, 2h)")
                }
                guard seconds <= ProtocolVersion.maximumSharePause else {
                    return usage("--for is at most 366 days (366d)")
                }
                forSeconds = seconds
            case "--discard":
                discard = true
            case "on" where action == nil, "off" where action == nil, "status" where action == nil:
                action = word
            default:
                return usage("unexpected '\(word)'")
            }
        }
        guard let action else { return usage("say off, on or status") }
        if forSeconds != nil && action != "off" { return usage("--for goes with off") }
        if discard && action != "off" { return usage("--discard goes with off") }
        let sharing: Bool? = action == "status" ? nil : action == "on"
        do {
            let client = try await LocationClient.connect(socketPath: socketPath)
            defer { client.close() }
            let status = try await client.share(sharing, forSeconds: forSeconds, discard: discard)
            var line = status.sharing ? "sharing on" : "sharing off"
            if let until = status.until { line += " until \(until)" } else if !status.sharing { line += " until switched on" }
            if discard { line += ", spooled reports discarded" }
            line += " (\(status.uplinks) uplink\(status.uplinks == 1 ? "" : "s"))\n"
            return writeStandardOutput(line) ? .ok : .ioError
        } catch {
            return clientFailure("share", error)
        }
    }

    private static func usage(_ message: String) -> ExitCode {
        usageFailure("share", message, help: help)
    }
}
