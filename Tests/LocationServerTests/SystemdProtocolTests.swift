#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LocationPosix
@testable import LocationServer
import TestSupport
import Testing

/// systemd's protocols as the daemon speaks them without libsystemd (`SystemdProtocol`): the values and
/// errors of libsystemd 252's sd_listen_fds_with_names(3), sd_is_socket_unix(3), sd_notify(3) and
/// sd_watchdog_enabled(3), each case's expected value being what libsystemd.so.0 itself returned for it
/// (a C program calling it with the same environment, Debian 12).
/// Passing descriptors from a real `systemd-socket-activate`, and readiness to a real notify socket, are
/// DaemonSystemdTests' and Scripts/system-test's (under systemd as PID 1).
@Suite("systemd's protocols without libsystemd", .serialized)
struct SystemdProtocolTests {
    /// Runs `body` with the environment variables set (nil: unset), then puts them back as they were.
    @discardableResult
    static func with<T>(_ variables: [String: String?], _ body: () throws -> T) rethrows -> T {
        let saved = variables.keys.map { ($0, getenv($0).map { String(cString: $0) }) }
        for (name, value) in variables {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
        defer { for (name, value) in saved { if let value { setenv(name, value, 1) } else { unsetenv(name) } } }
        return try body()
    }

    static func isSet(_ name: String) -> Bool { getenv(name) != nil }

    static func temporaryDirectory() throws -> String {
        var template = Array("/tmp/locationd-sdproto-XXXXXX".utf8CString)
        guard let made = TemporaryDirectories.mkdtemp(&template) else { throw Errno.current }
        return String(cString: made)
    }

    @Test("no descriptors for this process: LISTEN_PID unset, or another process's; LISTEN_* leave the environment")
    func noDescriptors() throws {
        try Self.with(["LISTEN_PID": nil, "LISTEN_FDS": "1", "LISTEN_FDNAMES": "x"]) { () throws in
            #expect(try SystemdProtocol.takePassedDescriptors() == nil)
            #expect(!Self.isSet("LISTEN_FDS") && !Self.isSet("LISTEN_FDNAMES"))
        }
        try Self.with(["LISTEN_PID": String(getpid() + 1), "LISTEN_FDS": "1", "LISTEN_FDNAMES": nil]) { () throws in
            #expect(try SystemdProtocol.takePassedDescriptors() == nil)
            #expect(!Self.isSet("LISTEN_PID") && !Self.isSet("LISTEN_FDS"))
        }
        try Self.with(["LISTEN_PID": String(getpid()), "LISTEN_FDS": nil, "LISTEN_FDNAMES": nil]) { () throws in
            #expect(try SystemdProtocol.takePassedDescriptors() == nil)
        }
    }

    @Test("malformed LISTEN_PID or LISTEN_FDS, no descriptor, or as many names as descriptors not: EINVAL; LISTEN_PID 0: ERANGE",
          arguments: [("x", "1", nil, EINVAL), ("0", "1", nil, ERANGE), ("4294967295", "1", nil, ERANGE),
                      (nil, "0", nil, EINVAL), (nil, "-1", nil, EINVAL),
                      (nil, "one", nil, EINVAL), (nil, "2", "unix", EINVAL), (nil, "1", "unix:gpsd", EINVAL)]
            as [(String?, String, String?, Int32)])
    func malformed(pid: String?, count: String, names: String?, error: Int32) {
        Self.with(["LISTEN_PID": pid ?? String(getpid()), "LISTEN_FDS": count, "LISTEN_FDNAMES": names]) {
            #expect(throws: Errno(rawValue: error)) { try SystemdProtocol.takePassedDescriptors() }
            #expect(!Self.isSet("LISTEN_PID") && !Self.isSet("LISTEN_FDS") && !Self.isSet("LISTEN_FDNAMES"))
        }
    }

    @Test("a listening socket is told from a connected one, a datagram socket, a pipe; by family")
    func socketKinds() throws {
        let directory = try Self.temporaryDirectory()
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let unix = try ListeningSocket(path: directory + "/s.sock")
        defer { unix.close(unlinking: true) }
        #expect(SystemdProtocol.isListeningStreamSocket(unix.fileDescriptor, family: AF_UNIX))
        #expect(!SystemdProtocol.isListeningStreamSocket(unix.fileDescriptor, family: AF_INET))
        let tcp = try TCPListener(address: try #require(TCPAddress(parsing: "127.0.0.1:0")))
        defer { tcp.close() }
        #expect(SystemdProtocol.isListeningStreamSocket(tcp.fileDescriptor, family: AF_INET))
        #expect(!SystemdProtocol.isListeningStreamSocket(tcp.fileDescriptor, family: AF_UNIX))
        // locationd-gpsd.socket's other listener: [::1]:2947.
        let tcp6 = try TCPListener(address: try #require(TCPAddress(parsing: "[::1]:0")))
        defer { tcp6.close() }
        #expect(SystemdProtocol.isListeningStreamSocket(tcp6.fileDescriptor, family: AF_INET))
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        #expect(!SystemdProtocol.isListeningStreamSocket(pair[0], family: AF_UNIX))
        let datagram = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        #expect(!SystemdProtocol.isListeningStreamSocket(datagram, family: AF_INET))
        var pipeEnds: [Int32] = [0, 0]
        #expect(pipe(&pipeEnds) == 0)
        #expect(!SystemdProtocol.isListeningStreamSocket(pipeEnds[0], family: AF_UNIX))
        for fd in pair + pipeEnds + [datagram] { close(fd) }
    }

    /// A datagram socket bound to `address` (a path, or `\0name` for the abstract namespace).
    static func notifyListener(_ address: [UInt8]) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var name = sockaddr_un()
        name.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &name.sun_path) { $0.copyBytes(from: address) }
        let length = socklen_t(MemoryLayout.offset(of: \sockaddr_un.sun_path)! + address.count)
        let bound = withUnsafePointer(to: &name) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else { throw Errno.current }
        return fd
    }

    static func received(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        return n > 0 ? String(decoding: buffer[..<n], as: UTF8.self) : "(nothing: \(n))"
    }

    @Test("sd_notify: one datagram to a path, or to an abstract name after @; nothing without NOTIFY_SOCKET")
    func notify() throws {
        let directory = try Self.temporaryDirectory()
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/notify"
        let byPath = try Self.notifyListener(Array(path.utf8))
        defer { close(byPath) }
        try Self.with(["NOTIFY_SOCKET": path]) { () throws in
            #expect(try SystemdProtocol.notify("READY=1\nSTATUS=3D fix; 1 client"))
        }
        #expect(Self.received(byPath) == "READY=1\nSTATUS=3D fix; 1 client")
        let abstract = "locationd-test-\(getpid())"
        let byName = try Self.notifyListener([0] + Array(abstract.utf8))
        defer { close(byName) }
        try Self.with(["NOTIFY_SOCKET": "@" + abstract]) { () throws in
            #expect(try SystemdProtocol.notify("WATCHDOG=1"))
        }
        #expect(Self.received(byName) == "WATCHDOG=1")
        try Self.with(["NOTIFY_SOCKET": nil]) { () throws in
            #expect(try SystemdProtocol.notify("READY=1") == false)
        }
    }

    @Test("sd_notify: a relative or empty address is EINVAL, one too long ENAMETOOLONG; nobody listening is the kernel's error",
          arguments: [("run/notify", EINVAL), ("/", EINVAL), ("@", EINVAL),
                      ("/" + String(repeating: "n", count: 200), ENAMETOOLONG),
                      ("/" + String(repeating: "n", count: 107), ENAMETOOLONG)] as [(String, Int32)])
    func notifyErrors(address: String, error: Int32) {
        Self.with(["NOTIFY_SOCKET": address]) {
            #expect(throws: Errno(rawValue: error)) { try SystemdProtocol.notify("READY=1") }
        }
    }

    @Test("sd_notify: nobody listening at the path is the kernel's error")
    func notifyNobody() {
        Self.with(["NOTIFY_SOCKET": "/tmp/locationd-no-such-notify-socket-\(getpid())"]) {
            #expect(throws: Errno.noSuchFileOrDirectory) { try SystemdProtocol.notify("READY=1") }
        }
    }

    @Test("sd_watchdog_enabled: WATCHDOG_USEC for this process, none for another's, EINVAL for nonsense")
    func watchdog() throws {
        try Self.with(["WATCHDOG_USEC": nil, "WATCHDOG_PID": nil]) { () throws in
            #expect(try SystemdProtocol.watchdogMicroseconds() == nil)
        }
        try Self.with(["WATCHDOG_USEC": "20000000", "WATCHDOG_PID": nil]) { () throws in
            #expect(try SystemdProtocol.watchdogMicroseconds() == 20_000_000)
        }
        try Self.with(["WATCHDOG_USEC": "20000000", "WATCHDOG_PID": String(getpid())]) { () throws in
            #expect(try SystemdProtocol.watchdogMicroseconds() == 20_000_000)
            #expect(Self.isSet("WATCHDOG_USEC"))  // unset_environment false: a child could be told
        }
        try Self.with(["WATCHDOG_USEC": "20000000", "WATCHDOG_PID": String(getpid() + 1)]) { () throws in
            #expect(try SystemdProtocol.watchdogMicroseconds() == nil)
        }
        for (usec, pid, error) in [("0", nil, EINVAL), ("twenty", nil, EINVAL), ("18446744073709551615", nil, EINVAL),
                                   ("1000", "x", EINVAL), ("1000", "0", ERANGE)] as [(String, String?, Int32)] {
            Self.with(["WATCHDOG_USEC": usec, "WATCHDOG_PID": pid]) {
                #expect(throws: Errno(rawValue: error)) { try SystemdProtocol.watchdogMicroseconds() }
            }
        }
    }
}
