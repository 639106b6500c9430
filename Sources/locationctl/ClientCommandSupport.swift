#if canImport(Glibc)
import Glibc
#endif
import LocationClient
import LocationCore

// What the client subcommands (watch, get, status) share: option parsing, exit codes for client errors,
// and the human-readable forms of locations and times.

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

/// Prints a usage error and the help to standard error; returns 64.
func usageFailure(_ command: String, _ error: UsageError, help: String) -> ExitCode {
    writeStandardError("locationctl \(command): \(error.message)\n\(help)")
    return .usage
}

/// Prints a client error to standard error and returns its exit code: 69 (EX_UNAVAILABLE) when the
/// daemon cannot be reached or refused, 75 (EX_TEMPFAIL) on a timeout, 76 (EX_PROTOCOL) for a daemon
/// that speaks another protocol, 70 (EX_SOFTWARE) otherwise.
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
    switch error {
    case .cannotConnect, .disconnected, .server: return .unavailable
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
/// accuracy (m), speed (km/h), track (degrees true), and heading when known; values the daemon did not
/// send are left out. E.g. `2007-04-08 09:53:05.802Z  -27.2109117  153.0522500  ±400.9 m  3.6 km/h  track 133.96°`.
func humanLine(_ location: Location) -> String {
    var fields = [humanTime(location.timestamp), fixed(location.latitude, 7), fixed(location.longitude, 7)]
    if let accuracy = location.horizontalAccuracy { fields.append("±\(fixed(accuracy, 1)) m") }
    if let speed = location.speed { fields.append("\(fixed(speed / Units.metersPerSecondPerKilometerPerHour, 1)) km/h") }
    if let course = location.course { fields.append("track \(fixed(course, 2))°") }
    if let heading = location.heading { fields.append("heading \(fixed(heading, 2))°") }
    if location.accuracyAuthorization == .reducedAccuracy { fields.append("(reduced accuracy)") }
    return fields.joined(separator: "  ")
}
