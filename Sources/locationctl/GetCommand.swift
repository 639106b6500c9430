import LocationClient

/// `locationctl get`: one fresh location.
enum GetCommand {
    static let help = """
        usage: locationctl get [--timeout S] [--json] [--authorization once|when-in-use|always]
                               [--accuracy full|reduced] [--purpose KEY] [--socket PATH]

        Asks locationd for authorization (the daemon may ask an agent, a person, first: up to its
        ask-timeout), then for one fresh location (the first fix after the request), and prints it as
        one line, in the form 'locationctl watch' uses:

          2007-04-08 09:53:05.802Z  -27.2109117  153.0522500  ±400.9 m  3.6 km/h  track 133.96°  [gnss0]

        options:
          --timeout S         how long to wait for a fix, seconds, more than 0 and at most 300
                              (default 10)
          --json              print the TPV object exactly as received instead
          --authorization K   ask for 'once' (this connection only; the default), 'when-in-use'
                              (remembered, used while the user has an active session) or 'always'
                              (remembered, used always; 'persistent' is the same) authorization
          --accuracy A        ask for 'full' (the default) or 'reduced' accuracy; the daemon's rule
                              may allow less, and never gives more than asked
          --purpose KEY       then ask for temporary full accuracy, citing the purpose KEY that the
                              daemon's configuration declares for this program
          --socket PATH       the daemon's socket (default: $LOCATIOND_SOCKET, else
                              /run/locationd/locationd.sock)
          -h, --help          show this help

        At reduced accuracy the daemon sends reports on one cadence for every program, one per its
        reduced-interval: a 'get' when the next is not due within --timeout ends at once with exit
        status 79, and standard error says when it is due ('reduced accuracy: the next report is due
        in 12 min 3 s'). When it is due, 'get' waits until 2.5 s after that moment whatever --timeout
        says; without a fix then it exits 75, saying 'no fix yet; at reduced accuracy the next report
        is due in 15 min 0 s' (when the cadence's moment is now: '... is due now, with the next fix').

        exit status: 0 with a location, 64 usage, 69 daemon unreachable or refused, 75 no fix in time,
        76 protocol mismatch, 77 not authorized (the status and the reason go to standard error),
        79 reduced accuracy and the next report not due within the timeout.

        """

    static func run(_ arguments: [String], socketPath globalSocketPath: String?) async -> ExitCode {
        var timeout = 10.0
        var json = false
        var authorization = AuthorizationOptions()
        var options = OptionReader(arguments)
        do throws(UsageError) {
            while let option = try options.next() {
                switch option {
                case "-h", "--help":
                    writeStandardOutput(help)
                    return .ok
                case "--timeout":
                    timeout = try options.number(for: option, in: 0...300, unit: "seconds")
                    guard timeout > 0 else { throw UsageError(message: "--timeout must be more than 0 seconds") }
                case "--json": json = true
                default:
                    guard try authorization.read(option, from: &options) else {
                        throw UsageError(message: "unexpected argument '\(option)'")
                    }
                }
            }
        } catch {
            return usageFailure("get", error, help: help)
        }

        do {
            let client = try await LocationClient.connect(socketPath: options.socketPath ?? globalSocketPath)
            defer { client.close() }
            if let refused = try await authorize(client, authorization, command: "get") { return refused }
            let location = try await client.requestLocation(timeout: timeout)
            let line = json ? (location.json ?? "") : humanLine(location)
            return writeStandardOutput(line + "\n") ? .ok : .ioError
        } catch let error as LocationClientError where error.meansNoFixInTime {
            // At reduced accuracy the daemon waited for the client's cadence, not for --timeout: its words say
            // when the next report is due ("no fix within 20 s" after 2.5 s was untrue, issue 32).
            if case let .paced(_, message, _) = error {
                writeStandardError("locationctl get: \(message)\n")
            } else {
                let seconds = timeout == timeout.rounded() ? String(Int(timeout)) : String(timeout)
                writeStandardError("locationctl get: no fix within \(seconds) s\n")
            }
            return .temporaryFailure
        } catch let LocationClientError.paced(_, message, _) {
            writeStandardError("locationctl get: \(message)\n")
            return .paced
        } catch {
            return clientFailure("get", error)
        }
    }
}
