#if canImport(Glibc)
import Glibc
#endif
import LocationClient
import LocationCore
import LocationWire

/// `locationctl grants`: the daemon's grants as a table.
enum GrantsCommand {
    static let help = """
        usage: locationctl grants [--json] [--socket PATH]

        Lists locationd's grants (root or the daemon's admin-group only), one row each: stored
        decisions ('always' grants and remembered refusals), pre-approved one-time grants, and the
        live one-time grants of connected programs, with the accuracy granted (and, for a stored
        decision a rule caps or denies, what applies: 'reduced (granted full)'), when it was made, when
        it expires and who decided. Then the fleet uplinks: name, broker, the accuracy each gets (its
        section's, capped by the policy; none when a rule denies it), format, and whether sharing is
        on or paused, with the reason under the row when the policy gives less than the section asks.

        options:
          --json          print the GRANTS object exactly as received instead
          --socket PATH   the daemon's socket (default: $LOCATIOND_SOCKET, else
                          /run/locationd/locationd.sock)
          -h, --help      show this help

        exit status: 0, 64 usage, 69 daemon unreachable, 75 timeout, 76 protocol mismatch, 77 not root
        or in the admin group.

        """

    static func run(_ arguments: [String], socketPath globalSocketPath: String?) async -> ExitCode {
        let json: Bool, socketPath: String?
        switch readJSONOnlyOptions(arguments, command: "grants", help: help) {
        case let .run(j, path): (json, socketPath) = (j, path)
        case .exit(let code): return code
        }
        return await withClient("grants", socketPath: socketPath ?? globalSocketPath) { client in
            let list = try await client.grants()
            return writeStandardOutput(json ? (list.json ?? "") + "\n" : render(list)) ? .ok : .ioError
        }
    }

    /// One table: GRANT, SUBJECT, ACCURACY, SINCE, EXPIRES, DECIDED BY.
    static func render(_ list: GrantList) -> String {
        let uplinks = renderUplinks(list.uplinks)
        guard !list.persistent.isEmpty || !list.preapproved.isEmpty || !list.once.isEmpty else { return "no grants\n" + uplinks }
        var rows = [["GRANT", "SUBJECT", "ACCURACY", "SINCE", "EXPIRES", "DECIDED BY"]]
        for grant in list.persistent {
            let allowed = grant.allowed == true
            rows.append([allowed ? (grant.whenInUse ? "when in use" : "always") : "denied", grant.subject?.description ?? "?",
                         allowed ? accuracyShown(grant) : "-", humanTime(grant.created),
                         grant.expires.map(humanTime) ?? "never", grant.decidedBy ?? "-"])
        }
        for grant in list.preapproved {
            rows.append([grant.standing ? "once, standing" : "once, pre-approved", grant.subject?.description ?? "?",
                         grant.accuracy?.rawValue ?? "-", humanTime(grant.created), grant.expires.map(humanTime) ?? "never",
                         grant.decidedBy ?? "-"])
        }
        for grant in list.once {
            var client = grant.executable ?? grant.unit ?? "?"
            var details: [String] = []
            if let pid = grant.pid { details.append("pid \(pid)") }
            if let uid = grant.uid { details.append("uid \(uid)") }
            if let identified = grant.identified { details.append(identified) }
            if !details.isEmpty { client += " (\(details.joined(separator: ", ")))" }
            rows.append(["once, live", client, grant.accuracy?.rawValue ?? "-", humanTime(grant.granted),
                         humanTime(grant.expires), "-"])
        }
        return renderTable(rows) + uplinks
    }

    /// The accuracy a stored grant's clients get: as granted, or what a rule leaves of it ("reduced (granted full)",
    /// "none (a rule denies)").
    static func accuracyShown(_ grant: ServerMessage.Grants.Stored) -> String {
        let granted = grant.accuracy?.rawValue ?? "-"
        guard let effective = grant.effective else { return granted }
        return "\(effective.accuracy?.rawValue ?? "none, a rule denies") (granted \(granted))"
    }

    /// The uplinks, after the grants: UPLINK, BROKER, ACCURACY (what the policy lets it have), FORMAT,
    /// SHARING, with the reason under each row when the policy caps or denies what its section asks.
    static func renderUplinks(_ uplinks: [ServerMessage.Grants.Uplink]) -> String {
        guard !uplinks.isEmpty else { return "" }
        var rows = [["UPLINK", "BROKER", "ACCURACY", "FORMAT", "SHARING"]]
        var notes: [Int: String] = [:]
        for uplink in uplinks {
            rows.append([uplink.name, uplink.broker, uplink.accuracy?.rawValue ?? "none", uplink.format, uplink.sharing ? "on" : "paused"])
            if uplink.accuracy != uplink.requested, let reason = uplink.reason { notes[rows.count - 1] = reason }
        }
        return "\n" + renderTable(rows, notes: notes)
    }
}
