#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import FoundationEssentials
import LocationPosix
import Testing
import TestSupport

// The gpsd side of GpsdReceiverTests: gpsd's tools, a scratch directory, child processes, TCP sockets.

// MARK: - gpsd tools and processes

/// gpsfake and gpspipe, found on PATH.
struct GpsdTools {
    var gpsfake: String
    var gpspipe: String

    /// - Throws: a failed requirement naming the packages to install when a tool is missing.
    static func require() throws -> GpsdTools {
        let gpsfake = findExecutable("gpsfake")
        let gpspipe = findExecutable("gpspipe")
        let gpsd = findExecutable("gpsd", extraDirectories: ["/usr/sbin", "/sbin"])
        let missing = [("gpsfake", gpsfake), ("gpspipe", gpspipe), ("gpsd", gpsd)].filter { $0.1 == nil }.map(\.0)
        try #require(missing.isEmpty,
                     """
                     \(missing.joined(separator: ", ")) not found (PATH, /usr/sbin): these tests run a real gpsd. \
                     Install gpsd and gpsd-clients (and python3-gps, which gpsfake needs): \
                     apt-get install gpsd gpsd-clients python3-gps — as .ci/run does.
                     """)
        return GpsdTools(gpsfake: gpsfake!, gpspipe: gpspipe!)
    }

    static func findExecutable(_ name: String, extraDirectories: [String] = []) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":").map(String.init) + extraDirectories {
            let candidate = directory + "/" + name
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}

/// A capture from the shared logs (`../shared/nmea-logs`, or `$LOCATIOND_SHARED/nmea-logs`).
func sharedLog(_ name: String) -> String {
    if let shared = ProcessInfo.processInfo.environment["LOCATIOND_SHARED"] { return shared + "/nmea-logs/" + name }
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path + "/../shared/nmea-logs/" + name
}

/// A temporary directory for the tools' output.
struct GpsdScratch {
    let path: String

    init() throws {
        var template = Array("/tmp/locationd-gpsd-test-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { TemporaryDirectories.mkdtemp($0.baseAddress!) }
        try #require(made != nil, "mkdtemp: \(Errno.current)")
        path = String(cString: made!)
    }

    /// gpsfake puts gpsd's control socket (`gpsfake-PID.sock`, which gpsd leaves behind) in $TMPDIR: here.
    var gpsfakeEnvironment: [String: String] { ["TMPDIR": path] }

    func read(_ name: String) -> String {
        guard let data = FileManager.default.contents(atPath: path + "/" + name) else { return "(nothing)" }
        let text = String(decoding: data, as: UTF8.self)
        return text.isEmpty ? "(nothing)" : String(text.suffix(2000))
    }

    func remove() {
        if let dir = opendir(path) {
            while let entry = readdir(dir) {
                let name = FileDescriptorOps.entryName(entry)
                if name != "." && name != ".." { unlink(path + "/" + name) }
            }
            closedir(dir)
        }
        rmdir(path)
    }
}

/// A child process in its own process group (gpsfake and the gpsd it starts share it), output to a file,
/// stdin from /dev/null, no other descriptors inherited. `terminate()` ends the whole group.
final class ChildProcess: @unchecked Sendable {
    let pid: pid_t
    let executable: String
    /// `reaped`: waitpid collected the child; `groupGone`: no process is left in its group, so the
    /// number may belong to someone else now and is never signalled again.
    private let state = Locked<(reaped: Bool, groupGone: Bool)>((false, false))

    /// - Parameters:
    ///   - environment: variables to add to (or replace in) this process's environment.
    init(_ executable: String, _ arguments: [String], output: String, environment: [String: String] = [:]) throws {
        self.executable = executable
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // glibc ≥ 2.34 closes every other descriptor in the child (Swift's Glibc module does not export it).
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        }

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var variables = ProcessInfo.processInfo.environment
        variables.merge(environment) { _, new in new }
        let envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var child = pid_t()
        let status = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        try #require(status == 0, "cannot start \(executable): \(Errno(rawValue: status))")
        pid = child
    }

    /// True once the process itself has exited (and been reaped); what it started may still run.
    func hasExited() -> Bool {
        state.withLock { state in
            if !state.reaped {
                var status: Int32 = 0
                let result = waitpid(pid, &status, WNOHANG)
                if result == pid || (result < 0 && errno == ECHILD) { state.reaped = true }
            }
            return state.reaped
        }
    }

    /// True when the process has exited and no process is left in its group.
    private func isGone() -> Bool {
        guard hasExited() else { return false }
        return state.withLock { state in
            if !state.groupGone && kill(-pid, 0) != 0 && errno == ESRCH { state.groupGone = true }
            return state.groupGone
        }
    }

    private func signalGroup(_ signal: Int32) {
        state.withLock { state in
            if !state.groupGone { _ = kill(-pid, signal) }
        }
    }

    func waitForExit(timeout: Double) async -> Bool {
        await eventually(timeout: timeout) { hasExited() }
    }

    /// SIGTERM to the group, then SIGKILL to whatever is left of it after 3 s. Safe to call again.
    func terminate() {
        if isGone() { return }
        signalGroup(SIGTERM)
        let end = monotonic() + 3
        while monotonic() < end {
            if isGone() { return }
            usleep(20_000)
        }
        signalGroup(SIGKILL)
        let last = monotonic() + 1
        while !isGone() && monotonic() < last { usleep(10_000) }
    }
}

// MARK: - Sockets

/// A TCP port nothing listens on now (the kernel's choice for an ephemeral bind on 127.0.0.1).
func freeTCPPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    try #require(fd >= 0, "socket: \(Errno.current)")
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    try #require(bound, "bind: \(Errno.current)")
    return Int(UInt16(bigEndian: address.sin_port))
}

/// A TCP connection to 127.0.0.1:port, or nil when refused.
func connectLocal(port: Int) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return nil }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    if connected { return fd }
    close(fd)
    return nil
}

/// Waits (at most 10 s) until gpsd accepts connections on `port`; `output` is what gpsfake said, for the
/// failure message.
func waitForListener(port: Int, gpsfake: ChildProcess, output: @autoclosure () -> String) async throws {
    let listening = await eventually(timeout: 10) {
        if let fd = connectLocal(port: port) {
            close(fd)
            return true
        }
        return gpsfake.hasExited() ? true : false
    }
    try #require(listening && !gpsfake.hasExited(), "gpsd (from gpsfake) is not listening on port \(port); gpsfake said: \(output())")
}

/// Asks gpsd (`?DEVICES;`, gpsd_json(5)) for its devices until it lists `count` of them; returns their paths
/// in gpsd's order, which for gpsfake is the order of the captures.
func gpsdDevices(port: Int, count: Int) async throws -> [String] {
    struct Devices: Decodable {
        struct Device: Decodable { var path: String }
        var `class`: String
        var devices: [Device]?
    }
    var paths: [String] = []
    let found = await eventually(timeout: 10) {
        guard let fd = connectLocal(port: port) else { return false }
        defer { close(fd) }
        let request = Array("?DEVICES;\n".utf8)
        guard case .success = FileDescriptorOps.writeAll(fd, request) else { return false }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let end = monotonic() + 1
        while monotonic() < end {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            guard case .success(let n) = buffer.withUnsafeMutableBytes({ FileDescriptorOps.read(fd, into: $0) }), n > 0 else { break }
            received += buffer[0..<n]
            for line in received.split(separator: UInt8(ascii: "\n")) {
                if let reply = try? JSONDecoder().decode(Devices.self, from: Data(line)), reply.class == "DEVICES" {
                    paths = reply.devices?.map(\.path) ?? []
                    return paths.count >= count
                }
            }
        }
        return false
    }
    try #require(found, "gpsd lists \(paths.count) devices, expected \(count)")
    return paths
}

/// How many of this process's descriptors are TCP sockets whose peer port is `port` (/proc/self/fd matched
/// against the socket inodes in /proc/net/tcp and tcp6): a leak check that other tests' descriptors do not
/// disturb.
func socketsOfThisProcess(connectedToPort port: Int) -> Int {
    var inodes = Set<String>()
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        guard let data = FileManager.default.contents(atPath: table) else { continue }
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, let colon = fields[2].lastIndex(of: ":"),
                  Int(fields[2][fields[2].index(after: colon)...], radix: 16) == port else { continue }
            inodes.insert(String(fields[9]))
        }
    }
    guard let dir = opendir("/proc/self/fd") else { return -1 }
    defer { closedir(dir) }
    var count = 0
    var target = [CChar](repeating: 0, count: 256)
    while let entry = readdir(dir) {
        let name = FileDescriptorOps.entryName(entry)
        let n = readlink("/proc/self/fd/" + name, &target, target.count - 1)
        guard n > 0 else { continue }
        let link = target.withUnsafeBufferPointer { String(decoding: UnsafeRawBufferPointer($0).prefix(n), as: UTF8.self) }
        if link.hasPrefix("socket:["), inodes.contains(String(link.dropFirst(8).dropLast())) { count += 1 }
    }
    return count
}
