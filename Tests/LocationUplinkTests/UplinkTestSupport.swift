#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationCore
import LocationPosix
import TestSupport
import Testing

/// A process started by a test, its output in a file. Killed with SIGKILL: tests inherit SIGTERM ignored.
final class Spawned {
    private(set) var pid: pid_t = 0
    let outputPath: String

    /// Starts `arguments` (found on PATH), stdout and stderr to `outputPath`.
    init(_ arguments: [String], output outputPath: String) throws {
        self.outputPath = outputPath
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        // Default dispositions for the child: it must die of SIGTERM like any daemon.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGTERM)
        sigaddset(&defaults, SIGINT)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        // The test runner blocks SIGTERM and others: unblock them all in the child.
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let rc = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environ)
        posix_spawn_file_actions_destroy(&actions)
        posix_spawnattr_destroy(&attributes)
        guard rc == 0 else { throw Errno(rawValue: rc) }
    }

    /// Everything it wrote so far.
    var output: String {
        FileManager.default.contents(atPath: outputPath).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// Waits up to `seconds` for it to exit; true when it did.
    func wait(seconds: Double) -> Bool {
        let end = now() + seconds
        while now() < end {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { pid = 0; return true }
            usleep(20_000)
        }
        return false
    }

    /// Sends `signal` and reaps it (SIGKILL after 5 s if it is still there).
    func stop(_ signal: Int32 = SIGKILL) {
        guard pid > 0 else { return }
        kill(pid, signal)
        if signal != SIGKILL && wait(seconds: 5) { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        pid = 0
    }

    deinit { stop() }
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Waits until `condition` holds or `seconds` pass; returns whether it held.
func eventually(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let end = now() + seconds
    while now() < end {
        if condition() { return true }
        usleep(50_000)
    }
    return condition()
}

/// A temporary directory, removed at the end.
final class Scratch {
    let path: String
    init() throws {
        var template = Array("/tmp/locationd-uplink-XXXXXX".utf8CString)
        guard let made = TemporaryDirectories.mkdtemp(&template) else { throw Errno.current }
        path = String(cString: made)
        chmod(path, 0o755)
    }
    func write(_ name: String, _ text: String, mode: mode_t = 0o644) -> String {
        let file = path + "/" + name
        FileManager.default.createFile(atPath: file, contents: Data(text.utf8))
        chmod(file, mode)
        return file
    }
    deinit { _ = try? FileManager.default.removeItem(atPath: path) }
}

/// A real mosquitto broker on a free loopback port with password authentication (user `van`, password
/// `secret`). Without `persistent`, a restart forgets everything; with it, sessions and their queued
/// messages survive a clean stop (SIGTERM), as a production broker's do.
final class Broker {
    static let user = "van"
    static let password = "secret"
    let port: UInt16
    let scratch: Scratch
    private var process: Spawned?

    /// The TLS listener's port (certificates from `Certificates`), when it has one.
    private(set) var tlsPort: UInt16?
    /// A second TLS listener that requires a client certificate signed by the test CA
    /// (`require_certificate true`), when there is a TLS listener.
    private(set) var clientCertificatePort: UInt16?

    init(scratch: Scratch, persistent: Bool = false, tls: Certificates? = nil) throws {
        self.scratch = scratch
        let probe = try TCPListener(address: try #require(TCPAddress(parsing: "127.0.0.1:0")))
        port = try #require(probe.address?.port)
        probe.close()
        if tls != nil {
            let probe = try TCPListener(address: try #require(TCPAddress(parsing: "127.0.0.1:0")))
            tlsPort = try #require(probe.address?.port)
            let second = try TCPListener(address: try #require(TCPAddress(parsing: "127.0.0.1:0")))
            clientCertificatePort = try #require(second.address?.port)
            probe.close()
            second.close()
        }
        let passwords = scratch.write("passwd", "", mode: 0o600)
        let made = try Spawned(["mosquitto_passwd", "-b", passwords, Self.user, Self.password], output: scratch.path + "/passwd.log")
        _ = made.wait(seconds: 10)
        _ = scratch.write("mosquitto.conf", """
            user root
            listener \(port) 127.0.0.1
            allow_anonymous false
            password_file \(passwords)
            \(tls.map { "listener \(tlsPort ?? 0) 127.0.0.1\ncafile \($0.caFile)\ncertfile \($0.serverCert)\nkeyfile \($0.serverKey)" } ?? "")
            \(tls.map { "listener \(clientCertificatePort ?? 0) 127.0.0.1\ncafile \($0.caFile)\ncertfile \($0.serverCert)\nkeyfile \($0.serverKey)\nrequire_certificate true" } ?? "")
            persistence \(persistent ? "true" : "false")
            persistence_location \(scratch.path)/
            log_dest stderr
            """)
        try start()
    }

    /// Starts the broker and waits until it accepts connections.
    func start() throws {
        process = try Spawned(["mosquitto", "-c", scratch.path + "/mosquitto.conf"], output: scratch.path + "/mosquitto.log")
        let listening = eventually(10) {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
        }
        guard listening else { throw Errno.timedOut }
    }

    /// Stops the broker: SIGKILL (no goodbye to anyone) or SIGTERM (it saves its persistence file).
    func stop(_ signal: Int32 = SIGKILL) {
        process?.stop(signal)
        process = nil
    }

    /// A `mosquitto_sub` on `topic`, one payload per line, for at most `seconds`.
    /// With `session`, a persistent session of that client id (`-c -i`): what arrives while it is away
    /// waits for it at the broker.
    func subscribe(_ topic: String, seconds: Int, name: String = "sub", session: String? = nil) throws -> Spawned {
        let persistent = session.map { ["-c", "-i", $0] } ?? []
        let sub = try Spawned(["mosquitto_sub", "-h", "127.0.0.1", "-p", String(port), "-u", Self.user, "-P", Self.password,
                               "-q", "1", "-t", topic, "-W", String(seconds)] + persistent, output: scratch.path + "/\(name).out")
        usleep(300_000)  // subscribed before anything is published
        return sub
    }

    deinit { stop() }
}

/// The real `locationd` replaying the demo capture once, with `uplink` as its `[uplink fleet]` section.
final class UplinkDaemon {
    let scratch: Scratch
    private(set) var process: Spawned?

    static var root: String {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }
        return path
    }
    static var capture: String { root + "/Demo/haicom-305N.log" }
    static func binary(_ name: String) -> String { BuiltProducts.directory(containing: "locationd") + "/" + name }

    /// - Parameter policy: the `[policy]` section's lines after `access = ask` (no agent runs: clients get
    ///   nothing); by default full accuracy, which the uplinks then get as their sections ask. More
    ///   sections (a `[client]` rule) may follow.
    init(scratch: Scratch, uplink: String, rate: String = "10", policy: String = "accuracy = full", capture: String = UplinkDaemon.capture) throws {
        self.scratch = scratch
        _ = scratch.write("locationd.conf", """
            [daemon]
            socket = \(scratch.path)/locationd.sock
            state-directory = \(scratch.path)/state
            log-level = debug

            [receiver demo]
            type = replay
            file = \(capture)
            rate = \(rate)
            loop = no

            [policy]
            access = ask
            \(policy)

            [uplink fleet]
            \(uplink)
            """)
        try start()
    }

    func start() throws {
        process = try Spawned([Self.binary("locationd"), "--config", scratch.path + "/locationd.conf"], output: scratch.path + "/daemon.log")
    }

    /// Stops the daemon: SIGKILL (a crash, a power loss) or SIGTERM (a clean stop).
    func stop(_ signal: Int32 = SIGKILL) {
        process?.stop(signal)
        process = nil
    }

    var log: String { process?.output ?? (FileManager.default.contents(atPath: scratch.path + "/daemon.log").map { String(decoding: $0, as: UTF8.self) } ?? "") }

    deinit { stop() }
}

/// An OwnTracks location object as a consumer reads it.
struct OwnTracksLocation: Decodable, Hashable {
    var _type: String
    var lat: Double
    var lon: Double
    var tst: Int
    var acc: Int?
    var alt: Int?
    var vac: Int?
    var vel: Int?
    var cog: Int?
    var tid: String?
}

/// The positions `locationctl decode` finds in the capture: Unix seconds → (lat, lon).
func decodedPositions() throws -> [Int: (lat: Double, lon: Double)] {
    let scratch = try Scratch()
    let decode = try Spawned([UplinkDaemon.binary("locationctl"), "decode", UplinkDaemon.capture], output: scratch.path + "/decode.out")
    #expect(decode.wait(seconds: 30))
    struct TPV: Decodable { var `class`: String; var time: String?; var lat: Double?; var lon: Double? }
    var out: [Int: (lat: Double, lon: Double)] = [:]
    for line in decode.output.split(separator: "\n") {
        guard let tpv = try? JSONDecoder().decode(TPV.self, from: Data(line.utf8)), tpv.class == "TPV",
              let time = tpv.time, let lat = tpv.lat, let lon = tpv.lon, let seconds = unixSeconds(time) else { continue }
        out[seconds] = (lat, lon)
    }
    return out
}

/// `2007-04-08T09:52:57.809Z` → whole Unix seconds.
func unixSeconds(_ iso: String) -> Int? {
    let parts = iso.split(whereSeparator: { "-T:.Z".contains($0) }).compactMap { Int($0) }
    guard parts.count >= 6, let date = CivilDate(year: parts[0], month: parts[1], day: parts[2]) else { return nil }
    return date.daysSinceUnixEpoch * 86400 + parts[3] * 3600 + parts[4] * 60 + parts[5]
}

/// The OwnTracks objects among `output`'s lines.
func locations(_ output: String) -> [OwnTracksLocation] {
    output.split(separator: "\n").compactMap { try? JSONDecoder().decode(OwnTracksLocation.self, from: Data($0.utf8)) }
}

/// A certificate authority and a broker certificate for 127.0.0.1 made by openssl in the test, a
/// second authority (a client trusting only it must refuse the broker), and two client certificates:
/// one the test CA signed, one the other authority signed (a broker requiring the test CA's refuses it).
struct Certificates {
    let caFile: String
    let serverCert: String
    let serverKey: String
    let otherCA: String
    let clientCert: String
    let clientKey: String
    let strangerCert: String
    let strangerKey: String

    init(in scratch: Scratch) throws {
        let d = scratch.path
        caFile = d + "/ca.crt"
        serverCert = d + "/server.crt"
        serverKey = d + "/server.key"
        otherCA = d + "/other-ca.crt"
        clientCert = d + "/client.crt"
        clientKey = d + "/client.key"
        strangerCert = d + "/stranger.crt"
        strangerKey = d + "/stranger.key"
        let script = """
            set -e
            cd \(d)
            openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=locationd-test-ca
            openssl req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.crt -days 2 -subj /CN=someone-else
            openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1
            printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext
            openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile san.ext
            openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=van7
            openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 2
            openssl req -newkey rsa:2048 -nodes -keyout stranger.key -out stranger.csr -subj /CN=van7
            openssl x509 -req -in stranger.csr -CA other-ca.crt -CAkey other-ca.key -CAcreateserial -out stranger.crt -days 2
            chmod 644 server.key
            """
        let openssl = try Spawned(["sh", "-c", script], output: d + "/openssl.log")
        #expect(openssl.wait(seconds: 60))
        guard access(serverCert, R_OK) == 0, access(strangerCert, R_OK) == 0 else {
            Issue.record("openssl failed: \(openssl.output)")
            throw Errno.noSuchFileOrDirectory
        }
    }
}

/// The reports a spool file holds, read as docs and locationd.conf(5) describe the journal — `+SEQ JSON`
/// adds, `-SEQ` removes, a last line without its line end is not there yet — oldest first; and the
/// number of records (lines) in the file.
func spooledReports(_ path: String) -> (reports: [OwnTracksLocation], records: Int) {
    guard let data = FileManager.default.contents(atPath: path) else { return ([], 0) }
    var text = String(decoding: data, as: UTF8.self)
    if let end = text.lastIndex(of: "\n") { text = String(text[...end]) } else { text = "" }
    var added: [(Int, String)] = []
    var removed = Set<Int>()
    let lines = text.split(separator: "\n")
    for line in lines {
        if line.hasPrefix("+"), let space = line.firstIndex(of: " "), let sequence = Int(line[line.index(after: line.startIndex)..<space]) {
            added.append((sequence, String(line[line.index(after: space)...])))
        } else if line.hasPrefix("-"), let sequence = Int(line.dropFirst()) {
            removed.insert(sequence)
        }
    }
    let held = added.filter { !removed.contains($0.0) }.sorted { $0.0 < $1.0 }.map(\.1).joined(separator: "\n")
    return (locations(held), lines.count)
}
