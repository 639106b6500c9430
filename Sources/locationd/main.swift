// locationd: the location daemon. A thin executable: parse arguments, load the config, run.
#if canImport(Glibc)
import Glibc
#endif
import CPosixShims
import LocationPosix
import LocationServer
import LocationUplink

let usage = """
    usage: locationd [--config FILE] [--check-config] [--version] [--help]

      --config FILE    configuration file (default /etc/locationd/locationd.conf; drop-ins from
                       conf.d/*.conf beside it are applied in name order)
      --check-config   validate the configuration, print the effective settings and exit
      --version        print the version and exit
      -h, --help       show this help

    """

func fail(_ message: String, _ code: Int32) -> Never {
    var bytes = Array("locationd: \(message)\n".utf8)
    bytes.withUnsafeMutableBytes { _ = write(2, $0.baseAddress, $0.count) }
    exit(code)
}

// SIGTERM, SIGINT and SIGHUP are caught from here on, before anything can start a thread, into a pipe the
// daemon reads once it runs: one sent while it starts waits instead of being lost (SignalPipe).
let signals: SignalPipe
do {
    signals = try SignalPipe(install: Daemon.handledSignals)
} catch {
    fail("cannot catch signals: \(error)", 71)  // EX_OSERR
}

// One malloc arena. glibc gives each thread that allocates its own arena (up to 8 per core), and an
// arena keeps what was freed in it: the daemon's state is changed under one lock from several threads
// (receivers, the socket queue, identity lookups, the store), so a day of clients coming and going left
// freed memory spread over many arenas — the soak (1000 churning clients) saw anonymous memory go from
// 8 to 20 MiB in 300 s with per-thread arenas, and hold flat with one (docs/ROBUSTNESS.md). The threads
// take turns on the state lock anyway, so one arena costs no parallelism that was there.
_ = locationd_set_malloc_arenas(1)

var configPath = "/etc/locationd/locationd.conf"
var checkOnly = false
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--config", "-c":
        guard let value = arguments.popFirst() else { fail("--config needs a file\n\(usage)", 64) }
        configPath = value
    case _ where argument.hasPrefix("--config="):
        configPath = String(argument.dropFirst("--config=".count))
    case "--check-config":
        checkOnly = true
    case "--version":
        print("locationd \(locationdRelease)")
        exit(0)
    case "-h", "--help":
        print(usage, terminator: "")
        exit(0)
    default:
        fail("unknown argument '\(argument)'\n\(usage)", 64)
    }
}

let dropIns = Daemon.dropInDirectory(forConfiguration: configPath)
let configuration: DaemonConfiguration
do {
    configuration = try DaemonConfiguration.load(path: configPath, dropInDirectory: dropIns)
} catch {
    fail("\(error)", 78)  // EX_CONFIG
}
let uplinkSettings: [ConfiguredUplink]
do {
    uplinkSettings = try readUplinks(configuration)
} catch {
    fail("\(error)", 78)  // EX_CONFIG
}

if checkOnly {
    print(configuration.effectiveDescription, terminator: "")
    for uplink in uplinkSettings { print("\n" + uplink.configuration.effectiveDescription, terminator: "") }
    exit(0)
}

let log = Log(level: configuration.logLevel)
do {
    let daemon = try Daemon(configuration: configuration, configurationPath: configPath, log: log)
    let uplinks = startUplinks(uplinkSettings, daemon: daemon, stateDirectory: configuration.stateDirectory, log: log)
    withExtendedLifetime(uplinks) { daemon.run(signals: signals) }
} catch {
    fail("\(error)", 71)  // EX_OSERR
}
