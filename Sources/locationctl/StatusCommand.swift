import LocationClient
import LocationCore
import LocationWire

/// `locationctl status`: the daemon's receivers and clients.
enum StatusCommand {
    static let help = """
        usage: locationctl status [--json] [--socket PATH]

        Prints locationd's state: the current fix, the number of connected clients besides this one
        (those of your own user unless you are an administrator), and a table of the
        configured receivers (name, type, state, priority, sentences, fixes and errors since start, the
        time of the last fix, and the device, gpsd server or file) with the reason for each one that is
        unavailable, and, below a receiver whose fixes a plausibility rule rejected (a date check-date
        refused, ...), how many by rule and the last reason.

        options:
          --json          print the STATUS object exactly as received instead
          --socket PATH   the daemon's socket (default: $LOCATIOND_SOCKET, else
                          /run/locationd/locationd.sock)
          -h, --help      show this help

        exit status: 0, 64 usage, 69 daemon unreachable, 75 timeout, 76 protocol mismatch.

        """

    static func run(_ arguments: [String], socketPath globalSocketPath: String?) async -> ExitCode {
        let json: Bool, socketPath: String?
        switch readJSONOnlyOptions(arguments, command: "status", help: help) {
        case let .run(j, path): (json, socketPath) = (j, path)
        case .exit(let code): return code
        }

        do {
            let client = try await LocationClient.connect(socketPath: socketPath ?? globalSocketPath)
            defer { client.close() }
            let status = try await client.status()
            let text = json ? (status.json ?? "") + "\n" : render(status, release: client.serverRelease) + renderUplinks(status.uplinks)
            return writeStandardOutput(text) ? .ok : .ioError
        } catch {
            return clientFailure("status", error)
        }
    }

    /// The human-readable form: a summary line, then one table row per receiver.
    static func render(_ status: DaemonStatus, release: String?) -> String {
        let mode: String
        switch status.mode {
        case .noFix?: mode = "no fix"
        case .twoDimensional?: mode = "2D"
        case .threeDimensional?: mode = "3D"
        // Absent for a client that may not see the location, and for a reduced one before its first
        // paced message (docs/PROTOCOL.md "STATUS").
        case nil: mode = "- (not shown to this client)"
        }
        // STATUS counts the asking connection too (its user's connections, for a user not an administrator):
        // shown without it, so that a daemon nobody uses says 0 (issue 33).
        var text = "fix: \(mode)   clients: \(max(0, status.clients - 1)) besides this one"
        if let release { text += "   locationd \(release)" }
        text += "\n"
        // How the daemon knows this very client: what a rule or an approval for it will match.
        if let you = status.message.you, let identified = you.identified {
            text += "this client: \(DisplayText.escaped(you.executable ?? "?")), pid \(you.pid.map(String.init) ?? "?"), "
                + "uid \(you.uid.map(String.init) ?? "?"): \(DisplayText.escaped(identified))\n"
        }
        guard !status.receivers.isEmpty else { return text + "no receivers configured\n" }
        var rows = [["RECEIVER", "TYPE", "STATE", "PRIORITY", "SENTENCES", "FIXES", "ERRORS", "LAST FIX", "SOURCE"]]
        var reasons: [Int: String] = [:]
        for receiver in status.receivers {
            var source = receiver.path ?? "-"
            // A gpsd receiver: the device gpsd reads, after gpsd's address.
            if let device = receiver.device, device != receiver.path { source += " (\(device))" }
            if let speed = receiver.speed { source += " @ \(speed) bit/s" }
            // Below the row: why it is unavailable, and why its fixes were rejected.
            let notes = [receiver.reason, rejectionNote(receiver)].compactMap { $0 }
            if !notes.isEmpty { reasons[rows.count] = notes.joined(separator: "; ") }
            rows.append([receiver.name, receiver.type, receiver.state ?? "-", String(receiver.priority),
                         receiver.sentences.map(String.init) ?? "-", receiver.fixes.map(String.init) ?? "-",
                         receiver.errors.map(String.init) ?? "-",
                         humanTime(receiver.lastFixTime), source])
        }
        return text + renderTable(rows, rightAligned: [3, 4, 5, 6], notes: reasons)
    }

    /// `41 fixes rejected (check-date 41); last: fix dated 2020-07-11 rejected: check-date; set check-date = no
    /// for captures`; nil when none were (or the daemon does not show this client).
    static func rejectionNote(_ receiver: DaemonStatus.Receiver) -> String? {
        guard let rejected = receiver.rejected, !rejected.isEmpty else { return nil }
        let total = rejected.reduce(0) { $0 + ($1.count ?? 0) }
        var note = "\(total) fix\(total == 1 ? "" : "es") rejected ("
            + rejected.map { "\($0.rule) \($0.count.map(String.init) ?? "?")" }.joined(separator: ", ") + ")"
        if let last = receiver.lastRejection?.reason { note += "; last: " + last }
        return note
    }

    /// The fleet uplinks (root and the admin group see them): one row each, the reason below a row.
    static func renderUplinks(_ uplinks: [DaemonStatus.Uplink]) -> String {
        guard !uplinks.isEmpty else { return "" }
        var rows = [["UPLINK", "STATE", "ACCURACY", "SPOOLED", "SENT", "DROPPED", "BROKER"]]
        rows += uplinks.map { [$0.name, $0.state, $0.accuracy, String($0.spooled), String($0.sent), String($0.dropped), "\($0.broker) \($0.topic)"] }
        var notes: [Int: String] = [:]
        for (index, uplink) in uplinks.enumerated() { notes[index + 1] = uplink.reason }
        return renderTable(rows, notes: notes)
    }
}
