#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Testing

/// Whether Debian's geoclue-2.0 (the daemon and its demo agent) and geoclue-2-demo (where-am-i) are installed.
private func geoclueInstalled() -> Bool {
    let programs: [String] = ["/usr/libexec/geoclue", "/usr/libexec/geoclue-2.0/demos/where-am-i", "/usr/libexec/geoclue-2.0/demos/agent"]
    return programs.allSatisfy { access($0, X_OK) == 0 }
}

/// Issue 13: desktop apps through GeoClue. The real GeoClue 2.6 of Debian 12 (`/usr/libexec/geoclue`, run as its
/// `geoclue` user as its unit does, `--nmea-socket` pointing at locationd's NMEA socket) on a private D-Bus bus
/// standing in for the system bus (`DBUS_SYSTEM_BUS_ADDRESS`), geoclue's demo agent answering for root, and its
/// demo client `where-am-i`: the location an app gets is the one locationd's rule for `geoclue` lets through.
@Suite("GeoClue: the real geoclue reads locationd's NMEA socket", .serialized,
       .enabled(if: geoclueInstalled(), "geoclue-2.0 and geoclue-2-demo are not installed (apt-get install geoclue-2.0 geoclue-2-demo)"))
struct GeoClueEndToEndTests {
    static let geoclue = "/usr/libexec/geoclue"
    static let demos = "/usr/libexec/geoclue-2.0/demos"

    /// A bus of type `system` on a socket in `directory` that lets anyone own and call anything (the system bus's
    /// policy files are not what this test is about).
    static func busConfig(_ directory: String) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>system</type>
          <listen>unix:path=\(directory)/bus.sock</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow user="*"/>
            <allow own="*"/>
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
          </policy>
        </busconfig>
        """
    }

    /// What `where-am-i` printed: each location's latitude, longitude and accuracy (metres).
    struct Location {
        var latitude: Double
        var longitude: Double
        var accuracy: Double?
    }

    static func locations(_ output: String) -> [Location] {
        var out: [Location] = []
        func number(_ line: Substring) -> Double? {
            let value = line.split(separator: ":", maxSplits: 1).last?.drop { $0 == " " }.prefix { $0 == "-" || $0 == "." || $0.isNumber }
            return value.flatMap { Double($0) }
        }
        var latitude: Double?
        for line in output.split(separator: "\n") {
            if line.hasPrefix("Latitude:") { latitude = number(line) }
            if line.hasPrefix("Longitude:"), let la = latitude, let lo = number(line) {
                out.append(Location(latitude: la, longitude: lo))
                latitude = nil
            }
            if line.hasPrefix("Accuracy:"), !out.isEmpty { out[out.count - 1].accuracy = number(line) }
        }
        return out
    }

    /// Runs locationd with `rule` and the NMEA socket, the private bus, geoclue as `geoclue`, the demo agent and
    /// `where-am-i` for `seconds`; returns where-am-i's output and the daemon's log.
    static func whereAmI(policy: String, rule: String, seconds: Int) throws -> (output: String, log: String) {
        let directory = try NMEASocketTests.openDirectory()
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/nmea.sock"
        let daemon = try NMEASocketTests.daemon(socket: socket, policy: policy, clients: rule)
        defer { daemon.stop() }
        _ = FileManager.default.createFile(atPath: directory + "/bus.conf", contents: Data(busConfig(directory).utf8))
        let bus = try PolicyEndToEndTests.start(["dbus-daemon", "--config-file=\(directory)/bus.conf", "--nofork", "--nopidfile"], in: directory)
        var started = [bus]
        defer {
            for process in started.reversed() {
                kill(process.pid, SIGTERM)
                _ = PolicyEndToEndTests.finish(process)
            }
        }
        let end = monotonic() + 5
        while access(directory + "/bus.sock", F_OK) != 0, monotonic() < end { usleep(20_000) }
        let env = ["env", "DBUS_SYSTEM_BUS_ADDRESS=unix:path=\(directory)/bus.sock"]
        started.append(try PolicyEndToEndTests.start(env + ["timeout", "120", "setpriv", "--reuid=geoclue", "--regid=geoclue", "--init-groups",
                                                           geoclue, "--timeout=0", "--nmea-socket=\(socket)"], in: directory))
        // geoclue owns its name before the agent registers with it, and both before the client starts.
        let owned = monotonic() + 10
        while monotonic() < owned {
            let check = try PolicyEndToEndTests.run(env + ["dbus-send", "--system", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                           "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.GeoClue2"], in: directory)
            if check.stdout.contains("boolean true") { break }
            usleep(100_000)
        }
        started.append(try PolicyEndToEndTests.start(env + ["timeout", "120", "dbus-run-session", "--", demos + "/agent"], in: directory))
        usleep(1_000_000)
        let output = try PolicyEndToEndTests.run(env + ["timeout", String(seconds + 20), demos + "/where-am-i", "--timeout=\(seconds)"], in: directory)
        return (output.stdout, daemon.log)
    }

    static let geoclueFull = "[client geoclue]\nuser = geoclue\naccess = always\naccuracy = full\n"

    @Test("geoclue allowed full accuracy: where-am-i prints a position gpsd decoded from the capture (to its 6 decimals)")
    func fullAccuracy() throws {
        let (output, log) = try Self.whereAmI(policy: "access = deny", rule: Self.geoclueFull, seconds: 8)
        let locations = Self.locations(output)
        #expect(!locations.isEmpty, "where-am-i printed no location: \(output)\n\(log.suffix(1500))")
        let gpsd = try NMEASocketTests.gpsdPositions()
        for l in locations {
            // where-am-i prints %f (6 decimals): half a millionth of rounding, plus our 1e-6 minute.
            #expect(NMEASocketTests.distanceToGpsd((l.latitude, l.longitude), gpsd) < 6e-7, "\(l) is not a position gpsd decoded")
        }
        #expect(locations.contains { ($0.accuracy ?? .infinity) < 100 }, "no fine accuracy: \(output)")
        let uid = getpwnam("geoclue").map { String($0.pointee.pw_uid) } ?? "?"
        #expect(log.contains("client.uid=\(uid)") && log.contains("client.exe=/usr/libexec/geoclue"), "\(log.suffix(1500))")
    }

    @Test("geoclue allowed reduced accuracy: where-am-i gets the reduced position, never a true one, at geoclue's coarsest accuracy")
    func reducedAccuracy() throws {
        let rule = "[client geoclue]\nuser = geoclue\naccess = always\naccuracy = reduced\n"
        let (output, log) = try Self.whereAmI(policy: "access = deny\nreduced-interval = 1s", rule: rule, seconds: 6)
        let locations = Self.locations(output)
        #expect(!locations.isEmpty, "where-am-i printed no location: \(output)\n\(log.suffix(1500))")
        let gpsd = try NMEASocketTests.gpsdPositions()
        for l in locations {
            #expect(abs(l.latitude + 27.21) < 0.2 && abs(l.longitude - 153.05) < 0.2, "\(l)")
            #expect(NMEASocketTests.distanceToGpsd((l.latitude, l.longitude), gpsd) > 0.0001, "a true position reached geoclue: \(l)")
            #expect((l.accuracy ?? 0) >= 300, "a reduced position shown as precise: \(l)")
        }
    }

    @Test("geoclue without a grant: where-am-i never gets the capture's position")
    func denied() throws {
        let (output, log) = try Self.whereAmI(policy: "access = deny", rule: "", seconds: 6)
        for l in Self.locations(output) {
            #expect(abs(l.latitude + 27.21) > 0.5 || abs(l.longitude - 153.05) > 0.5, "the capture's position reached a denied geoclue: \(l)")
        }
        #expect(log.contains("client.exe=/usr/libexec/geoclue"), "geoclue never connected: \(log.suffix(1500))")
    }
}
