#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Testing
import TestSupport

/// Issue 13: Debian's own gpsd clients — gpxlogger, gpscsv, gpspipe -w — run unchanged against locationd's gpsd
/// front and against gpsd itself (gpsfake) replaying the same capture (Demo/haicom-305N.log), and what each tool
/// prints is compared epoch by epoch: same positions, times, altitudes, speeds, tracks, modes, error estimates,
/// satellites and DOPs.
///
/// Times: gpsd moves this 2007 capture's dates forward by 1024 GPS weeks (its rollover guess); locationd keeps
/// the receiver's. Epochs are matched on the time modulo 1024 weeks. Each side's tools join a replay already
/// under way, so each compares on the epochs both saw once gpsd had its first SKY (35+ of the capture's 68).
@Suite("gpsd's tools against locationd and against gpsd, side by side", .serialized)
struct GpsdSideBySideTests {
    /// What the three tools printed.
    struct Outputs {
        var gpx = "", csv = "", pipe = ""
    }

    static let csvFields = "time,lat,lon,altHAE,speed,track,mode"
    static let weeks1024 = 1024.0 * 7 * 86400

    /// Runs gpxlogger, gpscsv and gpspipe -w against `port` until `done` says the replay is over.
    static func tools(port: UInt16, in directory: String, done: (PolicyEndToEndTests.Started) -> Bool) throws -> Outputs {
        let target = "localhost:\(port)"
        let gpx = try PolicyEndToEndTests.start(["gpxlogger", target], in: directory)
        let csv = try PolicyEndToEndTests.start(["gpscsv", "-f", csvFields, target], in: directory)
        let pipe = try PolicyEndToEndTests.start(["gpspipe", "-w", target], in: directory)
        let end = monotonic() + 40
        while monotonic() < end, !done(pipe) { usleep(100_000) }
        usleep(300_000)
        for started in [gpx, csv, pipe] { kill(started.pid, SIGKILL) }
        return Outputs(gpx: PolicyEndToEndTests.finish(gpx).stdout, csv: PolicyEndToEndTests.finish(csv).stdout,
                       pipe: PolicyEndToEndTests.finish(pipe).stdout)
    }

    /// The tools against gpsd 3.22 under gpsfake, playing the capture once; over once gpspipe has printed nothing
    /// new for 2 s.
    static func againstGpsd(in directory: String) throws -> Outputs {
        let port = try GpsdFrontEndToEndTests.freePort()
        // setsid: gpsfake leads its own group with the gpsd it starts, so both can be killed together.
        let gpsfake = try PolicyEndToEndTests.start(["env", "TMPDIR=\(directory)", "setsid", "gpsfake", "-q", "-1", "-W", "2",
                                                     "-c", "0.01", "-P", String(port), DaemonProcess.demoCapture], in: directory)
        defer { kill(-gpsfake.pid, SIGKILL); kill(gpsfake.pid, SIGKILL); _ = PolicyEndToEndTests.finish(gpsfake) }
        let end = monotonic() + 10
        while monotonic() < end, !GpsdPortInUseTests.listening(port: port) { usleep(20_000) }
        return try tools(port: port, in: directory, done: idle(seconds: 2))
    }

    /// A `done` test: gpspipe printed something, then nothing new for `seconds`.
    static func idle(seconds: Double) -> (PolicyEndToEndTests.Started) -> Bool {
        var size = -1, since = monotonic()
        return { pipe in
            let now = FileManager.default.contents(atPath: pipe.output)?.count ?? 0
            if now != size { size = now; since = monotonic() }
            return size > 0 && monotonic() - since > seconds
        }
    }

    /// The tools against locationd's gpsd front, replaying the capture once at ten times its pace; over once
    /// gpspipe has printed nothing new for 1.5 s.
    static func againstLocationd(in directory: String) throws -> Outputs {
        let port = try GpsdFrontEndToEndTests.freePort()
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = always\naccuracy = full", rate: "10", loop: false),
                                       daemonKeys: "gpsd-listen = 127.0.0.1:\(port)\n")
        defer { daemon.stop(signal: SIGKILL) }
        return try tools(port: port, in: directory, done: idle(seconds: 1.5))
    }

    /// Milliseconds since 1970 modulo 1024 GPS weeks of an ISO 8601 UTC time `YYYY-MM-DDThh:mm:ss[.sss]Z`.
    static func epoch(_ iso: String) -> Int? {
        let digits = iso.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        guard digits.count >= 6 else { return nil }
        let (y, m, d) = (digits[0], digits[1], digits[2])
        // Days from civil (proleptic Gregorian), Howard Hinnant's algorithm.
        let yy = m <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468
        let milliseconds = digits.count > 6 ? digits[6] : 0
        let total = ((days * 24 + digits[3]) * 60 + digits[4]) * 60_000 + digits[5] * 1000 + milliseconds
        return total % Int(weeks1024 * 1000)
    }

    /// `text` without leading and trailing characters in `characters`.
    static func trimmed(_ text: Substring, _ characters: Set<Character>) -> Substring {
        var t = text
        while let f = t.first, characters.contains(f) { t.removeFirst() }
        while let l = t.last, characters.contains(l) { t.removeLast() }
        return t
    }

    /// gpxlogger's track points by epoch: `lat`, `lon` and each child element (`ele`, `fix`, `sat`, `hdop`, …).
    static func trackPoints(_ gpx: String) -> [Int: [String: String]] {
        var points: [Int: [String: String]] = [:]
        for chunk in gpx.split(separator: "<trkpt ").dropFirst() {
            guard let close = chunk.firstRange(of: "</trkpt>") else { continue }
            let body = chunk[..<close.lowerBound]
            var point: [String: String] = [:]
            for attribute in ["lat", "lon"] {
                if let r = body.firstRange(of: "\(attribute)=\""), let q = body[r.upperBound...].firstIndex(of: "\"") {
                    point[attribute] = String(body[r.upperBound..<q])
                }
            }
            for line in body.split(separator: "\n") {
                let text = Self.trimmed(line, [" "])
                guard text.hasPrefix("<"), let gt = text.firstIndex(of: ">"), let lt = text.firstRange(of: "</") else { continue }
                point[String(text[text.index(after: text.startIndex)..<gt])] = String(text[text.index(after: gt)..<lt.lowerBound])
            }
            if let time = point["time"].flatMap(epoch) { points[time] = point }
        }
        return points
    }

    /// gpscsv's rows by epoch (rows with a time and a latitude), as printed.
    static func csvRows(_ csv: String) -> [Int: [String: String]] {
        let lines = csv.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        guard let header = lines.first else { return [:] }
        var rows: [Int: [String: String]] = [:]
        for values in lines.dropFirst() where values.count == header.count {
            let row = Dictionary(uniqueKeysWithValues: zip(header, values))
            if let time = row["time"].flatMap(epoch), row["lat"] != "" { rows[time] = row }
        }
        return rows
    }

    /// gpspipe's TPVs with a position, by epoch: every TPV of that time (gpsd sends one per position sentence).
    static func tpvs(_ pipe: String) -> [Int: [[String: JSONValue]]] {
        var out: [Int: [[String: JSONValue]]] = [:]
        for line in GpsdFrontEndToEndTests.lines(pipe) {
            guard let o = JSONValue.object(String(line)), o["class"]?.string == "TPV", o["lat"] != nil,
                  let time = o["time"]?.string.flatMap(epoch) else { continue }
            out[time, default: []].append(o)
        }
        return out
    }

    /// gpspipe's SKY satellite lists: each satellite's PRN, used, ss, el, az as printed.
    static func skies(_ pipe: String) -> [Set<String>] {
        GpsdFrontEndToEndTests.lines(pipe).compactMap { line -> Set<String>? in
            guard line.contains("\"class\":\"SKY\""), let start = line.firstRange(of: "\"satellites\":[") else { return nil }
            let list = line[start.upperBound...].split(separator: "}").map { String(Self.trimmed($0, [",", "{", "]"])) }
            let satellites = Set(list.filter { $0.contains("PRN") })
            return satellites.isEmpty ? nil : satellites
        }
    }

    /// The first epoch gpsd reported after its first SKY with a used satellite. gpsd opens the capture's pty when the
    /// first client watches and starts decoding mid-stream: until the receiver's next GSA and GSV it has no
    /// DOPs and no satellites (so no epx/epy/epv, no 3D); epochs before this one are its warm-up.
    static func warm(_ pipe: String) -> Int? {
        var sawSky = false
        for line in GpsdFrontEndToEndTests.lines(pipe) {
            if line.contains("\"class\":\"SKY\"") && line.contains("\"used\":true") { sawSky = true; continue }
            guard sawSky, let o = JSONValue.object(String(line)), o["class"]?.string == "TPV",
                  let time = o["time"]?.string.flatMap(epoch) else { continue }
            return time
        }
        return nil
    }

    @Test("gpxlogger, gpscsv and gpspipe -w print the same epochs from locationd as from gpsd")
    func sameOutput() throws {
        var template = Array("/tmp/locationd-sidebyside-XXXXXX".utf8CString)
        let directory = try #require(TemporaryDirectories.mkdtemp(&template).map { String(cString: $0) })
        chmod(directory, 0o755)
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let gpsd = try Self.againstGpsd(in: directory)
        let ours = try Self.againstLocationd(in: directory)
        let warm = try #require(Self.warm(gpsd.pipe), "gpsd sent no SKY with satellites")

        // gpxlogger: the track points of the epochs both logged agree member for member; HDOP may not (below).
        let gpsdPoints = Self.trackPoints(gpsd.gpx), ourPoints = Self.trackPoints(ours.gpx)
        let shared = Set(gpsdPoints.keys).intersection(ourPoints.keys).filter { $0 >= warm }
        #expect(shared.count >= 35, "gpxlogger: \(shared.count) epochs in common (gpsd \(gpsdPoints.count), locationd \(ourPoints.count))")
        var hdopAgrees = 0
        for time in shared {
            let theirs = try #require(gpsdPoints[time]), mine = try #require(ourPoints[time])
            // gpxlogger writes a point per TPV; gpsd's last TPV of an epoch may be an RMC one without altitude.
            if theirs["ele"] != nil { #expect(theirs["ele"] == mine["ele"], "gpxlogger ele at \(theirs["time"] ?? "?")") }
            for member in ["lat", "lon", "fix", "sat", "vdop", "pdop"] {
                #expect(theirs[member] == mine[member], "gpxlogger \(member) at \(theirs["time"] ?? "?"): gpsd \(theirs[member] ?? "-"), locationd \(mine[member] ?? "-")")
            }
            if theirs["hdop"] == mine["hdop"] { hdopAgrees += 1 }
        }
        // gpsd's SKY keeps the last GSA's HDOP while the receiver's GGA changes it between GSAs (7 of 41 epochs
        // measured); ours carries the epoch's own.
        #expect(hdopAgrees * 100 >= shared.count * 80, "gpxlogger hdop agrees on \(hdopAgrees)/\(shared.count)")

        // gpscsv: time, position, altitude, speed, track, mode as printed.
        let gpsdRows = Self.csvRows(gpsd.csv), ourRows = Self.csvRows(ours.csv)
        let sharedRows = Set(gpsdRows.keys).intersection(ourRows.keys).filter { $0 >= warm }
        #expect(sharedRows.count >= 35, "gpscsv: \(sharedRows.count) epochs in common")
        for time in sharedRows {
            let theirs = try #require(gpsdRows[time]), mine = try #require(ourRows[time])
            for field in ["lat", "lon", "speed", "track", "mode"] {
                #expect(theirs[field] == mine[field], "gpscsv \(field) at \(theirs["time"] ?? "?"): gpsd \(theirs[field] ?? "-"), locationd \(mine[field] ?? "-")")
            }
            // gpsd's last TPV of an epoch may be an RMC one without altitude.
            if theirs["altHAE"] != "" { #expect(theirs["altHAE"] == mine["altHAE"]) }
        }

        // gpspipe -w: for each epoch, our TPV is one of gpsd's (lat … epv, as printed), and every SKY gpsd sent
        // lists the same satellites (PRN, used, signal, elevation, azimuth) as one of ours.
        let gpsdTPVs = Self.tpvs(gpsd.pipe), ourTPVs = Self.tpvs(ours.pipe)
        let sharedTPVs = Set(gpsdTPVs.keys).intersection(ourTPVs.keys).filter { $0 >= warm }
        #expect(sharedTPVs.count >= 35, "gpspipe: \(sharedTPVs.count) epochs in common")
        let members = ["lat", "lon", "speed", "track", "mode", "eph", "epx", "epy", "epv", "magvar"]
        for time in sharedTPVs {
            let theirs = try #require(gpsdTPVs[time]), mine = try #require(ourTPVs[time]?.last)
            for member in members {
                #expect(theirs.contains { $0[member] == mine[member] }, "gpspipe TPV \(member) at \(mine["time"]?.string ?? "?")")
            }
            #expect(theirs.contains { $0["altHAE"] == nil || $0["altHAE"] == mine["altHAE"] })
        }
        // gpsd's SKYs once it had a GSA (before, in its warm-up, it marks no satellite used).
        let gpsdSkies = Self.skies(gpsd.pipe).filter { $0.contains { $0.contains("\"used\":true") } }
        let ourSkies = Set(Self.skies(ours.pipe))
        #expect(gpsdSkies.count >= 10, "gpsd sent \(gpsdSkies.count) SKYs with satellites used")
        let missing = gpsdSkies.filter { !ourSkies.contains($0) }
        #expect(missing.isEmpty, "\(missing.count) of gpsd's SKYs list satellites none of ours do: \(missing.first.map { $0.sorted() } ?? [])")
    }
}
