// locationctl: the command-line client of locationd. A thin executable: it parses arguments and runs the
// libraries (ARCHITECTURE.md "Thin executables").
#if canImport(Glibc)
import Glibc
#endif

/// sysexits(3) codes used by locationctl.
enum ExitCode: Int32 {
    case ok = 0
    case usage = 64
    case noInput = 66
    case ioError = 74
}

let usage = """
    usage: locationctl <command> [options]

    commands:
      decode [FILE]   decode NMEA 0183 from FILE (or standard input) into gpsd-style JSON lines

    Run 'locationctl <command> --help' for a command's options.

    """

func writeStandardError(_ text: String) {
    var bytes = Array(text.utf8)
    bytes.withUnsafeMutableBytes { _ = write(2, $0.baseAddress, $0.count) }
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else {
    writeStandardError(usage)
    exit(ExitCode.usage.rawValue)
}
arguments.removeFirst()

switch command {
case "decode":
    exit(DecodeCommand.run(arguments).rawValue)
case "-h", "--help", "help":
    print(usage, terminator: "")
    exit(0)
default:
    writeStandardError("locationctl: unknown command '\(command)'\n\(usage)")
    exit(ExitCode.usage.rawValue)
}
