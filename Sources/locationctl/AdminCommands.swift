#if canImport(Glibc)
import Glibc
#endif
import LocationClient
import LocationCore
import LocationWire

/// Connects, runs `body`, and turns client errors into exit codes (77 for a permission error).
func withClient(_ command: String, socketPath: String?, _ body: (LocationClient) async throws -> ExitCode) async -> ExitCode {
    do {
        let client = try await LocationClient.connect(socketPath: socketPath)
        defer { client.close() }
        return try await body(client)
    } catch {
        return clientFailure(command, error)
    }
}

/// `path` absolute with symbolic links resolved (realpath(3)); nil when it does not exist.
private func resolvedPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
}

/// `--executable PATH` or `--unit NAME`, each optionally with `--user NAME` (that user's program
/// only), or `--user NAME` alone: for `grant` and `revoke`.
private struct SubjectOption {
    var program: GrantSubject? = nil
    var user: String? = nil

    /// The subject as given, before the path is resolved; nil until an option named one.
    var subject: GrantSubject? {
        switch program {
        case let .executable(path, _)?: return .executable(path, user: user)
        case let .unit(unit, _)?: return .unit(unit, user: user)
        case .user?, nil: return user.map(GrantSubject.user)
        }
    }

    /// Reads `option` when it names a subject; false when it does not.
    mutating func read(_ option: String, from options: inout OptionReader) throws(UsageError) -> Bool {
        switch option {
        case "--executable", "--unit":
            guard program == nil else { throw UsageError(message: "give only one of --executable or --unit") }
            let value = try options.value(for: option)
            program = option == "--executable" ? .executable(value) : .unit(value)
        case "--user":
            guard user == nil else { throw UsageError(message: "give --user only once") }
            user = try options.value(for: option)
        default: return false
        }
        return true
    }

    /// The subject; an executable's path resolved as the kernel reports a client's (realpath(3):
    /// absolute, symbolic links followed) when the file exists, since the daemon compares it with that.
    /// - Parameter absolute: refuse a relative `--executable` (for `grant`: it would match no client).
    func required(absolute: Bool = false) throws(UsageError) -> GrantSubject {
        guard let subject else {
            throw UsageError(message: "give --executable PATH or --unit NAME (each optionally with --user NAME), or --user NAME")
        }
        if absolute, case let .executable(path, _) = subject, !path.hasPrefix("/") {
            throw UsageError(message: "--executable must be an absolute path (as the kernel reports a program's), not '\(path)'")
        }
        if case let .executable(path, user) = subject, let resolved = resolvedPath(path) { return .executable(resolved, user: user) }
        return subject
    }
}

/// `locationctl grant`: allow a program, unit or user ahead of asking.
enum GrantCommand {
    static let help = """
        usage: locationctl grant [--executable PATH | --unit NAME] [--user NAME]
                                 (--once [--standing] | --persistent | --when-in-use)
                                 [--accuracy full|reduced] [--expires DURATION] [--socket PATH]

        Grants location access ahead of asking (root or the daemon's admin-group only).
        --persistent stores an 'always' grant, replacing the subject's stored decision (a remembered
        refusal included); --when-in-use stores a When In Use grant in its place (used only while the
        client's user has an active login session, or, for a client outside every login session such as
        a system service, while it runs); --once pre-approves the next connection of the subject that asks for
        one-time access ('Allow Once' pressed ahead), used up by that connection; --once --standing
        makes a standing approval (the LocationButton's): every later connection of the subject that
        asks for one-time access gets a one-time grant without asking, until revoked. It prints the
        accuracy that will apply: the daemon's rule for the subject may allow less than granted (or
        deny it access), and then says so.

        options:
          --executable PATH   programs run from PATH, an absolute path (as the kernel reports it:
                              symbolic links resolved), of every user unless --user is given too
          --unit NAME         processes of the systemd unit NAME, e.g. navit.service, of every
                              user unless --user is given too
          --user NAME         with --executable or --unit, that program of the user NAME (or uid)
                              only; alone, every program of the user; the daemon refuses a name
                              that is no user's
          --once              pre-approve one use
          --standing          (with --once) a standing approval: every later use gets a
                              one-time grant without asking, until revoked
          --persistent        grant until revoked (or until --expires): Always
          --when-in-use       grant until revoked (or until --expires), used while the client's
                              user has an active login session (logind), or while it runs
                              outside every login session (a system service): When In Use
          --accuracy A        'full' (the default) or 'reduced'
          --expires DURATION  the grant lapses after DURATION, e.g. 30s, 15min, 1h, 7d
          --socket PATH       the daemon's socket (default: $LOCATIOND_SOCKET, else
                              /run/locationd/locationd.sock)
          -h, --help          show this help

        exit status: 0, 64 usage, 69 daemon unreachable or refused, 75 timeout, 76 protocol mismatch,
        77 not root or in the admin group.

        """

    static func run(_ arguments: [String], socketPath globalSocketPath: String?) async -> ExitCode {
        var subject = SubjectOption()
        var kind: AuthorizationKind? = nil
        var accuracy = AccuracyAuthorization.fullAccuracy
        var expires: Double? = nil
        var standing = false
        var options = OptionReader(arguments)
        let target: GrantSubject
        let grantKind: AuthorizationKind
        do throws(UsageError) {
            while let option = try options.next() {
                switch option {
                case "-h", "--help":
                    writeStandardOutput(help)
                    return .ok
                case "--once", "--persistent", "--when-in-use":
                    let chosen: AuthorizationKind = option == "--once" ? .once : option == "--persistent" ? .persistent : .whenInUse
                    guard kind == nil || kind == chosen else {
                        throw UsageError(message: "give only one of --once, --persistent or --when-in-use")
                    }
                    kind = chosen
                case "--accuracy":
                    accuracy = try options.choice(for: option, from: ["full", "reduced"]) == "full" ? .fullAccuracy : .reducedAccuracy
                case "--expires": expires = try options.duration(for: option)
                case "--standing": standing = true
                default:
                    guard try subject.read(option, from: &options) else {
                        throw UsageError(message: "unexpected argument '\(option)'")
                    }
                }
            }
            target = try subject.required(absolute: true)
            guard let kind else { throw UsageError(message: "give --once, --persistent or --when-in-use") }
            if standing, kind != .once { throw UsageError(message: "--standing goes with --once") }
            grantKind = kind
        } catch {
            return usageFailure("grant", error, help: help)
        }
        return await withClient("grant", socketPath: options.socketPath ?? globalSocketPath) { client in
            let list = try await client.grant(subject: target, kind: grantKind, accuracy: accuracy, expires: expires, standing: standing)
            return writeStandardOutput(describe(grantKind, target, accuracy, expires, list.effective, standing: standing)) ? .ok : .ioError
        }
    }
}

extension GrantCommand {
    /// What was granted and what will apply: `granted persistent access to user nobody, reduced accuracy
    /// (the [policy] default allows no more than reduced accuracy)`. The accuracy is the daemon's
    /// `effective` one, the rules applied; the accuracy asked for when the daemon does not say.
    static func describe(_ kind: AuthorizationKind, _ target: GrantSubject, _ accuracy: AccuracyAuthorization, _ expires: Double?,
                         _ effective: GrantEffect?, standing: Bool = false) -> String {
        var text = switch kind {
        case .once: "pre-approved one-time access for \(target)"
        case .persistent: "granted persistent access to \(target)"
        case .whenInUse: "granted When In Use access to \(target) (while its user has an active login session, "
            + "or, outside every login session such as a system service, while it runs)"
        }
        if standing { text = "standing approval of one-time access for \(target), each use without asking" }
        if let effective {
            text += effective.accuracy.map { ", \($0.rawValue) accuracy" } ?? ", which does not apply"
            if let reason = effective.reason { text += " (\(reason))" }
        } else {
            text += ", \(accuracy.rawValue) accuracy"
        }
        if let expires { text += ", for \(humanDuration(expires))" }
        return text + "\n"
    }
}

/// `locationctl revoke`: remove a subject's grants, at once.
enum RevokeCommand {
    static let help = """
        usage: locationctl revoke [--executable PATH | --unit NAME] [--user NAME] [--socket PATH]

        Removes every grant and stored decision of the subject, pre-approvals and live one-time grants
        included (root or the daemon's admin-group only). A program without --user takes its grants
        for every user with it (an agent's answers are stored per user); --user alone takes every
        grant of that user, whatever the program. It takes effect at once: the subject's
        programs stop receiving locations and are told their new status; next time they ask, the
        daemon's rule decides again (an agent is asked under 'access = ask'). It says how many
        grants it removed; a subject without any is not an error: 'nothing to revoke', exit 0.

        options:
          --executable PATH   programs run from PATH
          --unit NAME         processes of the systemd unit NAME
          --user NAME         with --executable or --unit, that program of the user NAME (or uid)
                              only; alone, every program of the user
          --socket PATH       the daemon's socket (default: $LOCATIOND_SOCKET, else
                              /run/locationd/locationd.sock)
          -h, --help          show this help

        exit status: 0, 64 usage, 69 daemon unreachable or refused, 75 timeout, 76 protocol mismatch,
        77 not root or in the admin group.

        """

    static func run(_ arguments: [String], socketPath globalSocketPath: String?) async -> ExitCode {
        var subject = SubjectOption()
        var options = OptionReader(arguments)
        let target: GrantSubject
        do throws(UsageError) {
            while let option = try options.next() {
                switch option {
                case "-h", "--help":
                    writeStandardOutput(help)
                    return .ok
                default:
                    guard try subject.read(option, from: &options) else {
                        throw UsageError(message: "unexpected argument '\(option)'")
                    }
                }
            }
            target = try subject.required()
        } catch {
            return usageFailure("revoke", error, help: help)
        }
        return await withClient("revoke", socketPath: options.socketPath ?? globalSocketPath) { client in
            // The path as given too, when it differs from the resolved one and a grant is stored under it.
            var removed: Int? = 0
            if let given = subject.subject, given != target {
                let stored = try await client.grants()
                if stored.persistent.contains(where: { $0.subject == given }) || stored.preapproved.contains(where: { $0.subject == given }) {
                    removed = try await client.revoke(subject: given).revoked
                }
            }
            let list = try await client.revoke(subject: target)
            // A daemon that does not count (no `revoked`) is taken at its word, as before.
            let total = removed.flatMap { a in list.revoked.map { a + $0 } }
            let text = total == 0 ? "nothing to revoke: \(target) has no grant\n"
                : "revoked every grant of \(target)" + (total.map { " (\($0))" } ?? "") + "\n"
            return writeStandardOutput(text) ? .ok : .ioError
        }
    }
}

/// `locationctl audit`: which program saw the location, when, how precisely.
enum AuditCommand {
    static let help = """
        usage: locationctl audit [--since TIME] [--json] [--socket PATH]

        Prints locationd's audit trail (root or the daemon's admin-group only): which program saw your
        location, when, and how precisely. One row per event: the time (UTC); the event — 'decision'
        (a request for authorization or location and its outcome), 'delivery' (the first location
        under a grant), 'grant' or 'revoke' (an administrator's); the client (executable, or systemd
        unit, and user); the request; the resulting status and accuracy, in plain words ('allowed
        once', 'always'); and on a line below the row the reason (and a long request). --json keeps
        the protocol's names (authorizedOnce, authorizedPersistent). Every page is read.

        options:
          --since TIME    only events from TIME on: a UTC time in ISO 8601 form
                          (2026-11-30T05:00:00Z, 2026-11-30) or a duration ago (30min, 1h, 7d)
          --json          print the events as the daemon stored them, one JSON object per line
          --socket PATH   the daemon's socket (default: $LOCATIOND_SOCKET, else
                          /run/locationd/locationd.sock)
          -h, --help      show this help

        exit status: 0, 64 usage, 69 daemon unreachable, 75 timeout, 76 protocol mismatch, 77 not root
        or in the admin group.

        """

    static func run(_ arguments: [String], socketPath globalSocketPath: String?) async -> ExitCode {
        var since: Double? = nil
        var json = false
        var options = OptionReader(arguments)
        do throws(UsageError) {
            while let option = try options.next() {
                switch option {
                case "-h", "--help":
                    writeStandardOutput(help)
                    return .ok
                case "--since":
                    let text = try options.value(for: option)
                    if let time = parseUTCTime(text) {
                        since = time
                    } else if let ago = parseDuration(text) {
                        since = unixNow() - ago
                    } else {
                        throw UsageError(message: "--since must be a UTC time like 2026-11-30T05:00:00Z or a duration like 1h, not '\(text)'")
                    }
                case "--json": json = true
                default: throw UsageError(message: "unexpected argument '\(option)'")
                }
            }
        } catch {
            return usageFailure("audit", error, help: help)
        }
        return await withClient("audit", socketPath: options.socketPath ?? globalSocketPath) { client in
            let events = try await client.audit(since: since)
            let text = json ? events.map { ($0.json ?? "") + "\n" }.joined() : render(events)
            return writeStandardOutput(text) ? .ok : .ioError
        }
    }

    /// The table: TIME (to the second), EVENT, CLIENT, REQUEST, RESULT, in plain words (PlainWords), with each
    /// event's reason (and a request longer than 16 characters, whose first word the row keeps) on a line of
    /// its own below it, as `grants` writes notes: in one row the reasons made it
    /// about 240 columns wide (issue 33); this way it fits about 100.
    static func render(_ events: [AuditEvent]) -> String {
        guard !events.isEmpty else { return "no audit events\n" }
        var rows = [["TIME", "EVENT", "CLIENT", "REQUEST", "RESULT"]]
        var notes: [Int: String] = [:]
        for event in events {
            var result = event.status.map(PlainWords.word) ?? "-"
            if let accuracy = event.accuracy { result = event.status == nil ? accuracy.rawValue : result + ", " + accuracy.rawValue }
            // A long request (an administrator's GRANT with its subject) goes on the note line; its first word stays.
            let request = event.request.map(PlainWords.names(in:)) ?? "-"
            let short = request.count <= 16 ? request : String(request.prefix { $0 != " " })
            rows.append([humanSecond(event.time), event.event, describe(event.client), short, result])
            let reason = event.reason.map(PlainWords.names(in:)) ?? ""
            let note = short == request ? reason : request + (reason.isEmpty ? "" : ": " + reason)
            if !note.isEmpty { notes[rows.count - 1] = note }
        }
        return renderTable(rows, notes: notes)
    }

    /// `2026-11-30 05:00:00Z`: a time to the second, as the audit table shows it.
    static func humanSecond(_ time: UTCTime?) -> String {
        let text = humanTime(time)
        guard let dot = text.firstIndex(of: ".") else { return text }
        return String(text[..<dot]) + "Z"
    }

    /// `/usr/bin/navit (alice)`, `navit.service (alice)`, `pid 42 (uid 1000)`; `/usr/bin/sleep, unverified (bob)`
    /// when the daemon could not verify the program (`identified`).
    static func describe(_ client: ClientDescription?) -> String {
        guard let client else { return "-" }
        var program = client.executable ?? client.unit ?? client.pid.map { "pid \($0)" } ?? "?"
        if client.identified?.hasPrefix("unverified") == true { program += ", unverified" }
        if let user = client.user { return "\(program) (\(user))" }
        if let uid = client.uid { return "\(program) (uid \(uid))" }
        return program
    }
}
