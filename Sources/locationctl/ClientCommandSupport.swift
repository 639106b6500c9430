#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import LocationClient
import LocationCore
import LocationWire

// What the client subcommands (watch, get, status, agent, grants, grant, revoke, audit) share: option
// parsing, exit codes for client errors, asking for authorization, and the human-readable forms of
// locations, times and tables.

/// A command-line mistake: printed with the command's help, exit 64 (EX_USAGE).
struct UsageError: Error {
    var message: String
}

/// Reads a subcommand's arguments: flags, options with a value (`--name VALUE` or `--name=VALUE`), and
/// the global `--socket PATH`, which may also come after the subcommand.
struct OptionReader {
    private var arguments: [String]
    private var index = 0
    /// `--socket PATH`, when given among these arguments.
    private(set) var socketPath: String?

    init(_ arguments: [String]) {
        // Split `--name=value` into `--name value`.
        self.arguments = arguments.flatMap { argument -> [String] in
            guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return [argument] }
            return [String(argument[..<equals]), String(argument[argument.index(after: equals)...])]
        }
    }

    /// The next option name, having consumed `--socket PATH`; nil at the end.
    mutating func next() throws(UsageError) -> String? {
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--socket" {
                socketPath = try value(for: argument)
                continue
            }
            return argument
        }
        return nil
    }

    /// The value after `option`.
    mutating func value(for option: String) throws(UsageError) -> String {
        guard index < arguments.count else { throw UsageError(message: "\(option) needs a value") }
        defer { index += 1 }
        return arguments[index]
    }

    /// The value after `option` as a number of seconds or metres within `range`.
    mutating func number(for option: String, in range: ClosedRange<Double>, unit: String) throws(UsageError) -> Double {
        let text = try value(for: option)
        guard let number = Double(text), number.isFinite, range.contains(number) else {
            throw UsageError(message: "\(option) must be a number of \(unit) from \(format(range.lowerBound)) to \(format(range.upperBound)), not '\(text)'")
        }
        return number
    }

    /// The value after `option`, which must be one of `choices`.
    mutating func choice(for option: String, from choices: [String]) throws(UsageError) -> String {
        let text = try value(for: option)
        guard choices.contains(text) else {
            let list = choices.count == 2 ? "\(choices[0]) or \(choices[1])"
                : choices.dropLast().joined(separator: ", ") + " or " + (choices.last ?? "")
            throw UsageError(message: "\(option) must be \(list), not '\(text)'")
        }
        return text
    }

    /// The value after `option` as a duration (`parseDuration`), seconds > 0.
    mutating func duration(for option: String) throws(UsageError) -> Double {
        let text = try value(for: option)
        guard let seconds = parseDuration(text), seconds > 0 else {
            throw UsageError(message: "\(option) must be a duration like 30s, 15min, 1h or 7d, not '\(text)'")
        }
        return seconds
    }

    /// The value after `option` as a whole number ≥ 1.
    mutating func count(for option: String) throws(UsageError) -> Int {
        let text = try value(for: option)
        guard let number = Int(text), number >= 1 else {
            throw UsageError(message: "\(option) must be a whole number ≥ 1, not '\(text)'")
        }
        return number
    }

    private func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}

/// What `readJSONOnlyOptions` found.
enum JSONOnlyOptions {
    case run(json: Bool, socketPath: String?)
    case exit(ExitCode)
}

/// Reads the options of a command whose only own option is `--json` (besides `--help` and `--socket`).
/// - Returns: `.run` with the `--json` flag and the socket path given, or `.exit` with the code to
///   return now (0 after `--help`, 64 on a usage error).
func readJSONOnlyOptions(_ arguments: [String], command: String, help: String) -> JSONOnlyOptions {
    var json = false
    var options = OptionReader(arguments)
    do throws(UsageError) {
        while let option = try options.next() {
            switch option {
            case "-h", "--help":
                writeStandardOutput(help)
                return .exit(.ok)
            case "--json": json = true
            default: throw UsageError(message: "unexpected argument '\(option)'")
            }
        }
    } catch {
        return .exit(usageFailure(command, error, help: help))
    }
    return .run(json: json, socketPath: options.socketPath)
}

/// Prints a usage error to standard error, with the command's synopsis and where its help is (not the whole
/// help, which would scroll the message away); returns 64.
func usageFailure(_ command: String, _ error: UsageError, help: String) -> ExitCode {
    usageFailure(command, error.message, help: help)
}

/// Prints `message` as a usage error of `command`: the message, the synopsis (the help's lines up to the first
/// blank one) and a hint to `--help`; returns 64 (EX_USAGE).
func usageFailure(_ command: String, _ message: String, help: String) -> ExitCode {
    let synopsis = help.split(separator: "\n", omittingEmptySubsequences: false).prefix { !$0.isEmpty }
    writeStandardError("locationctl \(command): \(message)\n" + synopsis.map { $0 + "\n" }.joined()
                       + "Try 'locationctl \(command) --help' for more.\n")
    return .usage
}

/// Prints a client error to standard error and returns its exit code: 77 (EX_NOPERM) when the daemon's
/// policy refused (not authorized, or not root / admin group), 69 (EX_UNAVAILABLE) when the daemon
/// cannot be reached or refused otherwise, 75 (EX_TEMPFAIL) on a timeout, 76 (EX_PROTOCOL) for a
/// daemon that speaks another protocol, 70 (EX_SOFTWARE) otherwise.
func clientFailure(_ command: String, _ error: any Error) -> ExitCode {
    guard let error = error as? LocationClientError else {
        writeStandardError("locationctl \(command): \(error)\n")
        return .software
    }
    var text = "locationctl \(command): \(error)\n"
    if case .cannotConnect = error {
        text += "Is locationd running? Name its socket with --socket PATH or \(LocationClient.socketPathEnvironmentVariable).\n"
    }
    writeStandardError(text)
    if error.meansNotAuthorized { return .noPermission }
    switch error {
    case .cannotConnect, .disconnected, .server: return .unavailable
    case .paced: return .paced
    case .timedOut: return .temporaryFailure
    case .protocolMismatch, .invalidReply: return .protocolError
    }
}

/// Writes `text` to standard output at once (no stdio buffering, so `watch` output reaches a pipe
/// line by line). False when standard output is gone.
@discardableResult
func writeStandardOutput(_ text: String) -> Bool {
    let bytes = Array(text.utf8)
    return bytes.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
            let n = write(1, raw.baseAddress! + offset, raw.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }
}

/// `value` rounded to `decimals` places, always with that many: `fixed(3.57, 1)` is `"3.6"`.
func fixed(_ value: Double, _ decimals: Int) -> String {
    guard value.isFinite else { return String(value) }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    guard scaled < 9e15 else { return String(value) }
    let units = Int(scaled)
    let whole = units / Int(scale)
    var text = (value < 0 && units != 0 ? "-" : "") + String(whole)
    if decimals > 0 {
        let fraction = String(units % Int(scale))
        text += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
    }
    return text
}

/// A time for people: `2007-04-08 09:53:05.802Z`; `-` when unknown.
func humanTime(_ time: UTCTime?) -> String {
    guard let time else { return "-" }
    return String(time.iso8601.map { $0 == "T" ? " " : $0 })
}

/// One line for a location: time, latitude and longitude (degrees, 7 places: about 1 cm), ±horizontal
/// accuracy (m), speed (km/h), track (degrees true), and heading when known, then the receiver it came
/// from in brackets (so that a failover shows); values the daemon did not send are left out. E.g.
/// `2007-04-08 09:53:05.802Z  -27.2109117  153.0522500  ±400.9 m  3.6 km/h  track 133.96°  [gnss0]`.
func humanLine(_ location: Location) -> String {
    var fields = [humanTime(location.timestamp), fixed(location.latitude, 7), fixed(location.longitude, 7)]
    if let accuracy = location.horizontalAccuracy { fields.append("±\(fixed(accuracy, 1)) m") }
    if let speed = location.speed { fields.append("\(fixed(speed / Units.metersPerSecondPerKilometerPerHour, 1)) km/h") }
    if let course = location.course { fields.append("track \(fixed(course, 2))°") }
    if let heading = location.heading { fields.append("heading \(fixed(heading, 2))°") }
    if location.accuracyAuthorization == .reducedAccuracy { fields.append("(reduced accuracy)") }
    if let device = location.device { fields.append("[\(DisplayText.escaped(device))]") }
    return fields.joined(separator: "  ")
}

// MARK: - Authorization (watch, get)

/// `--authorization once|when-in-use|always|persistent` (`persistent` is `always`), `--accuracy
/// full|reduced` and `--purpose KEY`, shared by `watch` and `get`.
struct AuthorizationOptions {
    var kind: AuthorizationKind = .once
    var accuracy: AccuracyAuthorization = .fullAccuracy
    var purposeKey: String? = nil

    /// Reads `option` when it is one of these; false when it is not.
    mutating func read(_ option: String, from options: inout OptionReader) throws(UsageError) -> Bool {
        switch option {
        case "--authorization":
            switch try options.choice(for: option, from: ["once", "when-in-use", "always", "persistent"]) {
            case "once": kind = .once
            case "when-in-use": kind = .whenInUse
            default: kind = .always
            }
        case "--accuracy":
            accuracy = try options.choice(for: option, from: ["full", "reduced"]) == "full" ? .fullAccuracy : .reducedAccuracy
        case "--purpose":
            let key = try options.value(for: option)
            guard !key.isEmpty else { throw UsageError(message: "--purpose needs a key") }
            purposeKey = key
        default:
            return false
        }
        return true
    }
}

/// `allowed once, full accuracy` / `denied`: a status for people (PlainWords).
func describe(_ authorization: Authorization) -> String {
    var text = PlainWords.status(authorization.status)
    if let accuracy = authorization.accuracy { text += ", \(accuracy.rawValue) accuracy" }
    return text
}

// MARK: - Times and durations

/// The wall-clock time, Unix seconds.
func unixNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Parses a duration (`DurationText`, the grammar the config file uses too), in seconds.
func parseDuration(_ text: String) -> Double? {
    DurationText.parse(text).map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
}

/// Parses a UTC time in ISO 8601 form: `2026-11-30`, `2026-11-30T05:00Z`, `2026-11-30T05:00:00Z`,
/// `2026-11-30T05:00:00.250Z` (a space may stand for the `T`; the `Z` may be left out, the time is UTC
/// either way). Returns Unix seconds; nil when the text is not of that form.
func parseUTCTime(_ text: String) -> Double? {
    var b = Array(text.trimmingSpaces.utf8)
    if b.last == UInt8(ascii: "Z") { b.removeLast() }
    func number(_ range: Range<Int>) -> Int? {
        guard range.upperBound <= b.count else { return nil }
        var value = 0
        for i in range {
            guard b[i] >= 48, b[i] <= 57 else { return nil }
            value = value * 10 + Int(b[i] - 48)
        }
        return value
    }
    guard b.count >= 10, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
          let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
          let date = CivilDate(year: year, month: month, day: day) else { return nil }
    var seconds = Double(date.daysSinceUnixEpoch) * 86_400
    guard b.count > 10 else { return seconds }
    guard b.count >= 16, b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: " "), b[13] == UInt8(ascii: ":"),
          let hour = number(11..<13), let minute = number(14..<16), hour < 24, minute < 60 else { return nil }
    seconds += Double(hour * 3600 + minute * 60)
    guard b.count > 16 else { return seconds }
    guard b.count >= 19, b[16] == UInt8(ascii: ":"), let second = number(17..<19), second < 61 else { return nil }
    seconds += Double(second)
    guard b.count > 19 else { return seconds }
    guard b[19] == UInt8(ascii: "."), b.count > 20, let fraction = number(20..<b.count) else { return nil }
    var scale = 1.0
    for _ in 20..<b.count { scale *= 10 }
    return seconds + Double(fraction) / scale
}

/// A duration for people: `30 s`, `15 min`, `2 h`, `7 d`, `1 h 30 min`.
func humanDuration(_ seconds: Double) -> String {
    var left = Int(seconds.rounded())
    guard left > 0 else { return "0 s" }
    var parts: [String] = []
    for (size, name) in [(86_400, "d"), (3600, "h"), (60, "min"), (1, "s")] where left >= size {
        parts.append("\(left / size) \(name)")
        left %= size
    }
    return parts.joined(separator: " ")
}

extension String {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }
        guard let start = firstIndex(where: { !isSpace($0) }), let end = lastIndex(where: { !isSpace($0) }) else { return "" }
        return self[start...end]
    }
}

// MARK: - Tables

/// Renders `rows` (the first is the header) as columns two spaces apart; `rightAligned` columns are
/// padded on the left; the last column is not padded. `notes[i]` is printed under row `i` (`  └ note`).
func renderTable(_ rows: [[String]], rightAligned: Set<Int> = [], notes: [Int: String] = [:]) -> String {
    // Cells come from the daemon, and some from clients (an executable path, a unit): control and
    // format characters are shown as escapes, so that none can forge a row or drive the terminal.
    let rows = rows.map { $0.map { String(DisplayText.escaped($0)) } }
    guard let columns = rows.map(\.count).max() else { return "" }
    var widths = [Int](repeating: 0, count: columns)
    for row in rows {
        for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
    }
    var text = ""
    for (index, row) in rows.enumerated() {
        var cells: [String] = []
        for (column, cell) in row.enumerated() {
            let padding = String(repeating: " ", count: widths[column] - cell.count)
            if column == row.count - 1 {
                cells.append(rightAligned.contains(column) ? padding + cell : cell)
            } else {
                cells.append(rightAligned.contains(column) ? padding + cell : cell + padding)
            }
        }
        text += cells.joined(separator: "  ") + "\n"
        if let note = notes[index] { text += "  └ \(DisplayText.escaped(note))\n" }
    }
    return text
}

// MARK: - Threads

/// Runs `body` on a thread of its own (a Dispatch worker: the blocking read of standard input must not
/// hold one of Swift concurrency's few threads; Dispatch starts another worker for other work).
func startThread(_ body: @escaping @Sendable () -> Void) {
    // The default QoS: above it libdispatch asks for a negative nice, which users may not have.
    DispatchQueue.global().async(execute: body)
}
