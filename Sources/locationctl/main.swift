// locationctl: the command-line client of locationd. A thin executable: it parses arguments and runs the
// libraries (ARCHITECTURE.md "Thin executables").
#if canImport(Glibc)
import Glibc
#endif
import LocationWire

/// sysexits(3) codes used by locationctl.
enum ExitCode: Int32 {
    case ok = 0
    case usage = 64
    case noInput = 66
    case unavailable = 69
    case software = 70
    case ioError = 74
    case temporaryFailure = 75
    case protocolError = 76
    case noPermission = 77
    /// Not a sysexits(3) code: reduced accuracy, and the next paced report is not due yet (`get`).
    case paced = 79
}

let usage = """
    usage: locationctl [--socket PATH] <command> [options]

    commands:
      decode [FILE]   decode NMEA 0183 from FILE (or standard input) into gpsd-style JSON lines
      watch           ask for authorization, then print locations from locationd as they come
      get             ask for authorization, then print one fresh location from locationd
      status          show locationd's receivers and clients

    administration (root or locationd's admin-group):
      agent           answer programs' requests for location, on the terminal or automatically
      grants          list persistent grants, pre-approvals and live one-time grants
      grant           allow an executable, unit or user ahead of asking (--once or --persistent)
      revoke          remove an executable's, unit's or user's grants, at once
      audit           which program saw your location, when, how precisely
      share           switch the fleet uplinks' sharing off [--for DURATION], on, or show it
                      (also the daemon's share-group)

    global options:
      --socket PATH   locationd's socket, for every command but decode (also accepted after the
                      command; default: $LOCATIOND_SOCKET, else /run/locationd/locationd.sock)
      --version       print locationctl's version and exit
      -h, --help      show this help

    exit status: 0 success, 64 usage, 69 daemon unreachable, 75 timeout or no fix in time,
    76 protocol mismatch, 77 not authorized (refused by the policy, or not an administrator).

    Run 'locationctl <command> --help' for a command's options.

    """

/// What a usage error prints after its message: the synopsis and where the whole help is, not the help
/// itself (a mistyped command should not scroll its own message away).
let shortUsage = """
    usage: locationctl [--socket PATH] <command> [options]
    Try 'locationctl --help' for the commands.

    """

func writeStandardError(_ text: String) {
    var bytes = Array(text.utf8)
    bytes.withUnsafeMutableBytes { _ = write(2, $0.baseAddress, $0.count) }
}

var arguments = Array(CommandLine.arguments.dropFirst())
// The global --socket PATH (or --socket=PATH) before the command.
var socketPath: String? = nil
while let first = arguments.first, first == "--socket" || first.hasPrefix("--socket=") {
    arguments.removeFirst()
    if first == "--socket" {
        guard !arguments.isEmpty else {
            writeStandardError("locationctl: --socket needs a value\n\(shortUsage)")
            exit(ExitCode.usage.rawValue)
        }
        socketPath = arguments.removeFirst()
    } else {
        socketPath = String(first.dropFirst("--socket=".count))
    }
}
guard let command = arguments.first else {
    writeStandardError("locationctl: no command given\n\(shortUsage)")
    exit(ExitCode.usage.rawValue)
}
arguments.removeFirst()

switch command {
case "decode":
    exit(DecodeCommand.run(arguments).rawValue)
case "watch":
    exit(await WatchCommand.run(arguments, socketPath: socketPath).rawValue)
case "get":
    exit(await GetCommand.run(arguments, socketPath: socketPath).rawValue)
case "status":
    exit(await StatusCommand.run(arguments, socketPath: socketPath).rawValue)
case "agent":
    exit(await AgentCommand.run(arguments, socketPath: socketPath).rawValue)
case "grants":
    exit(await GrantsCommand.run(arguments, socketPath: socketPath).rawValue)
case "grant":
    exit(await GrantCommand.run(arguments, socketPath: socketPath).rawValue)
case "revoke":
    exit(await RevokeCommand.run(arguments, socketPath: socketPath).rawValue)
case "share":
    exit(await ShareCommand.run(arguments, socketPath: socketPath).rawValue)
case "audit":
    exit(await AuditCommand.run(arguments, socketPath: socketPath).rawValue)
case "-h", "--help", "help":
    print(usage, terminator: "")
    exit(0)
case "--version", "version":
    print("locationctl \(Release.version)")
    exit(0)
default:
    writeStandardError("locationctl: unknown command '\(command)'\n\(shortUsage)")
    exit(ExitCode.usage.rawValue)
}
