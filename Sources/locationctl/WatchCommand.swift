import LocationClient
import LocationCore
import LocationWire

/// `locationctl watch`: subscribe and print locations as they come.
enum WatchCommand {
    static let help = """
        usage: locationctl watch [--count N] [--json] [--satellites] [--min-interval S] [--distance-filter M]
                                 [--authorization once|when-in-use|always] [--accuracy full|reduced]
                                 [--purpose KEY] [--socket PATH]

        Asks locationd for authorization (the daemon may ask an agent, a person, first: up to its
        ask-timeout), then subscribes to its location updates and prints one line per location:

          2007-04-08 09:53:05.802Z  -27.2109117  153.0522500  ±247.2 m  3.6 km/h  track 133.96°  [gnss0]

        (UTC time, latitude and longitude in degrees, horizontal accuracy in metres — the radius of 68 %
        confidence —, speed, course over
        ground in degrees true; values the daemon does not know are left out), and a line when the fix
        is lost ("fix lost: REASON", "no fix: REASON" before the first, e.g. "no fix: fixes rejected:
        gnss0: fix dated 2020-07-11 rejected: check-date; ...") or comes back ("fix acquired"), and when
        the daemon changes this client's authorization ("authorization: notDetermined (REASON)").
        While the daemon sends nothing for now, a line says why and until when, at the start and after
        each paced report: "waiting: reduced accuracy, next location in 14 min 58 s" (reduced accuracy
        gets a location every reduced-interval), "waiting: When In Use, and you have no active login
        session; nothing until one is active". Runs until interrupted, or until the authorization is lost.

        options:
          --count N              exit after N locations
          --json                 print the TPV objects exactly as received, one per line (and STATE
                                 objects for fix changes and waits) instead
          --satellites           after each location, a line with the satellites used and in view and
                                 the DOPs ("satellites: 25 used of 43, hdop 0.56"; with --json, the SKY
                                 object); full accuracy only
          --min-interval S       at most one location every S seconds (default 0: every fix)
          --distance-filter M    only locations at least M metres from the last one printed
          --authorization K      ask for 'once' (this connection only; the default), 'when-in-use'
                                 (remembered, used while the user has an active session;
                                 nothing is printed while it has none) or 'always' (remembered,
                                 used always; 'persistent' is the same) authorization
          --accuracy A           ask for 'full' (the default) or 'reduced' accuracy; the daemon's
                                 rule may allow less, and never gives more than asked
          --purpose KEY          then ask for temporary full accuracy, citing the purpose KEY that
                                 the daemon's configuration declares for this program
          --socket PATH          the daemon's socket (default: $LOCATIOND_SOCKET, else
                                 /run/locationd/locationd.sock)
          -h, --help             show this help

        exit status: 0 after --count locations, 64 usage, 69 daemon unreachable or gone, 75 timeout,
        76 protocol mismatch, 77 not authorized (refused, or the authorization was lost while
        streaming; the status and the reason go to standard error).

        """

    static func run(_ arguments: [String], socketPath globalSocketPath: String?) async -> ExitCode {
        var count: Int? = nil
        var json = false
        var satellites = false
        var minInterval = 0.0
        var distanceFilter = 0.0
        var authorization = AuthorizationOptions()
        var options = OptionReader(arguments)
        do throws(UsageError) {
            while let option = try options.next() {
                switch option {
                case "-h", "--help":
                    writeStandardOutput(help)
                    return .ok
                case "--count": count = try options.count(for: option)
                case "--json": json = true
                case "--satellites": satellites = true
                case "--min-interval": minInterval = try options.number(for: option, in: 0...1e9, unit: "seconds")
                case "--distance-filter":
                    distanceFilter = try options.number(for: option, in: 0...1e8, unit: "metres")
                default:
                    guard try authorization.read(option, from: &options) else {
                        throw UsageError(message: "unexpected argument '\(option)'")
                    }
                }
            }
        } catch {
            return usageFailure("watch", error, help: help)
        }

        do {
            let client = try await LocationClient.connect(socketPath: options.socketPath ?? globalSocketPath)
            defer { client.close() }
            if let refused = try await authorize(client, authorization, command: "watch") { return refused }
            var printed = 0
            var hadFix = false
            for try await update in client.updates(minInterval: minInterval, distanceFilter: distanceFilter, satellites: satellites) {
                let line: String
                switch update {
                case .location(let location):
                    hadFix = true
                    line = json ? (location.json ?? "") : humanLine(location)
                    printed += 1
                case .state(let fix, let reason):
                    if json {
                        line = String(decoding: ServerMessage.state(fix: fix, reason: reason).dropLast(), as: UTF8.self)
                    } else if fix {
                        line = "fix acquired"
                    } else {
                        line = (hadFix ? "fix lost" : "no fix") + (reason.map { ": \($0)" } ?? "")
                    }
                    hadFix = hadFix || fix
                case .waiting(let waiting):
                    line = json ? (waiting.json ?? "") : waitingLine(waiting)
                case .satellites(let view):
                    line = json ? (view.json ?? "") : "satellites: \(view.used.map(String.init) ?? "?") used of "
                        + "\(view.visible ?? view.satellites.count)" + (view.dop.horizontal.map { ", hdop \($0)" } ?? "")
                case .authorization(let change):
                    line = json ? (change.json ?? "") : "authorization: \(describe(change))" + (change.reason.map { " (\($0))" } ?? "")
                    guard change.isAuthorized else {
                        guard writeStandardOutput(line + "\n") else { return .ioError }
                        writeStandardError("locationctl watch: not authorized any more: \(PlainWords.status(change.status))"
                                           + (change.reason.map { " (\($0))" } ?? "") + "\n")
                        return .noPermission
                    }
                }
                guard writeStandardOutput(line + "\n") else { return .ioError }
                if let count, printed >= count { break }
            }
            return .ok
        } catch {
            return clientFailure("watch", error)
        }
    }

    /// A `waiting` line in plain words, with until when: "waiting: reduced accuracy, next location in 14 min 58 s".
    static func waitingLine(_ waiting: Waiting) -> String {
        switch waiting.cause {
        case .accuracyLimited:
            guard let seconds = waiting.nextReportIn else { return "waiting: reduced accuracy" + (waiting.reason.map { " (\($0))" } ?? "") }
            let whole = Int(seconds.rounded(.up))
            return "waiting: reduced accuracy, next location " + (whole > 0 ? "in \(DurationText.minutesAndSeconds(whole))" : "with the next fix")
        case .insufficientlyInUse:
            return "waiting: When In Use, and you have no active login session; nothing until one is active"
        case .other(let cause):
            return "waiting: " + (waiting.reason ?? cause)
        }
    }
}
