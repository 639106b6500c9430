#if canImport(Glibc)
import Glibc
#endif
import LocationPosix

/// systemd's service protocols, spoken directly: socket activation (`$LISTEN_PID`, `$LISTEN_FDS`,
/// `$LISTEN_FDNAMES`; sd_listen_fds(3)), notifications (a datagram to `$NOTIFY_SOCKET`; sd_notify(3)) and
/// the watchdog (`$WATCHDOG_USEC`, `$WATCHDOG_PID`; sd_watchdog_enabled(3)).
///
/// systemd's Interface Portability and Stability Chart lists these as stable and reimplementable
/// independently, and its developers advise daemons that need no more of libsystemd not to link it. Not
/// linking it keeps libsystemd and the six libraries it loads out of the daemon (1.6–1.8 MiB resident, issue
/// 16) unless its policy needs logind (`LoginSessions`). The outcomes are those of libsystemd 252's calls
/// named on each function, errors included (where one input has two faults, which error is reported
/// may differ).
enum SystemdProtocol {
    /// The first descriptor systemd passes (`SD_LISTEN_FDS_START`, sd-daemon.h).
    static let firstPassedDescriptor: Int32 = 3

    /// The descriptors systemd passed to this process, with their names — sd_listen_fds_with_names(3) with
    /// `unset_environment` true: `LISTEN_PID`, `LISTEN_FDS` and `LISTEN_FDNAMES` leave the environment
    /// (whatever the outcome) and the descriptors become close-on-exec, so no child inherits either.
    /// - Returns: descriptors 3, 4, … with their `FileDescriptorName=` (`unknown` when systemd passed no
    ///   names); nil when none were passed to this process (`LISTEN_PID` or `LISTEN_FDS` unset, or
    ///   `LISTEN_PID` another process's).
    /// - Throws: `Errno.invalidArgument` for a `LISTEN_PID` or `LISTEN_FDS` that is not a number, a count
    ///   below 1, or a `LISTEN_FDNAMES` with another count of names; `ERANGE` for a `LISTEN_PID` that is no
    ///   positive `pid_t`;
    ///   fcntl(2)'s error (`EBADF`) for a descriptor that is not open.
    static func takePassedDescriptors() throws(Errno) -> [(fd: Int32, name: String)]? {
        let pidText = environment("LISTEN_PID"), countText = environment("LISTEN_FDS")
        let namesText = environment("LISTEN_FDNAMES")
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
        guard let pidText else { return nil }
        guard try pid(pidText) == getpid(), let countText else { return nil }
        guard let count = Int32(countText), count > 0, count <= Int32.max - firstPassedDescriptor else {
            throw .invalidArgument
        }
        let names = namesText.map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) }
            ?? Array(repeating: "unknown", count: Int(count))
        guard names.count == Int(count) else { throw .invalidArgument }
        let descriptors = Array(firstPassedDescriptor..<(firstPassedDescriptor + count))
        for fd in descriptors {
            let flags = fcntl(fd, F_GETFD)
            guard flags >= 0, fcntl(fd, F_SETFD, flags | FD_CLOEXEC) == 0 else { throw .current }
        }
        return Array(zip(descriptors, names)).map { (fd: $0.0, name: $0.1) }
    }

    /// Whether `fd` is a listening `SOCK_STREAM` socket of `family`: `AF_UNIX` — sd_is_socket_unix(3) with
    /// `listening` 1 and no path — or, for `AF_INET`, either Internet family (`AF_INET` or `AF_INET6`:
    /// locationd-gpsd.socket listens on 127.0.0.1 and [::1]) — sd_is_socket_inet(3) with family 0, no port.
    static func isListeningStreamSocket(_ fd: Int32, family: Int32) -> Bool {
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else { return false }
        guard socketOption(fd, SO_TYPE) == Int32(SOCK_STREAM.rawValue), socketOption(fd, SO_ACCEPTCONN) == 1 else {
            return false
        }
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0, length >= socklen_t(MemoryLayout<sa_family_t>.size) else { return false }
        let actual = Int32(address.ss_family)
        return family == AF_INET ? actual == AF_INET || actual == AF_INET6 : actual == family
    }

    /// Sends `state` (newline-separated `KEY=value`) to the service manager: one datagram to the
    /// `AF_UNIX` socket named by `NOTIFY_SOCKET`, a path, or an abstract name when it begins with `@`
    /// (sd_notify(3); the kernel adds the sender's credentials for the manager).
    /// - Returns: false when `NOTIFY_SOCKET` is unset (not run by a service manager that listens).
    /// - Throws: `Errno.invalidArgument` for an address that is neither a path nor `@name`;
    ///   `ENAMETOOLONG` for one that does not fit `sun_path` (a path with its terminating NUL); the
    ///   errors of socket(2) and sendto(2), e.g. `ECONNREFUSED` when nobody listens there any more.
    @discardableResult
    static func notify(_ state: String) throws(Errno) -> Bool {
        guard let target = environment("NOTIFY_SOCKET") else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var name = Array(target.utf8)
        guard let first = name.first, first == UInt8(ascii: "/") || first == UInt8(ascii: "@"), name.count > 1 else {
            throw .invalidArgument
        }
        let abstract = first == UInt8(ascii: "@")
        // A path needs its terminating NUL within sun_path; an abstract name's length is given instead.
        guard name.count + (abstract ? 0 : 1) <= MemoryLayout.size(ofValue: address.sun_path) else {
            throw Errno(rawValue: ENAMETOOLONG)
        }
        if abstract { name[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: name) }
        let length = socklen_t(MemoryLayout.offset(of: \sockaddr_un.sun_path)! + name.count)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .current }
        defer { close(fd) }
        var payload = Array(state.utf8)
        let sent = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                payload.withUnsafeMutableBytes {
                    sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), socketAddress, length)
                }
            }
        }
        guard sent >= 0 else { throw .current }
        return true
    }

    /// The watchdog interval systemd expects keep-alives within (`WatchdogSec=`, from `WATCHDOG_USEC`),
    /// in microseconds — sd_watchdog_enabled(3) with `unset_environment` false.
    /// - Returns: nil when no watchdog is wanted of this process: `WATCHDOG_USEC` unset, or
    ///   `WATCHDOG_PID` set to another process.
    /// - Throws: `Errno.invalidArgument` for a `WATCHDOG_USEC` that is not a positive number below
    ///   UINT64_MAX (systemd's infinity), or a `WATCHDOG_PID` that is not a number; `ERANGE` for a
    ///   `WATCHDOG_PID` that is no positive `pid_t`.
    static func watchdogMicroseconds() throws(Errno) -> UInt64? {
        guard let text = environment("WATCHDOG_USEC") else { return nil }
        guard let usec = UInt64(text), usec > 0, usec < UInt64.max else { throw .invalidArgument }
        if let pidText = environment("WATCHDOG_PID") {
            guard try pid(pidText) == getpid() else { return nil }
        }
        return usec
    }

    /// A process ID from the environment, as systemd's parse_pid reads it.
    /// - Throws: `Errno.invalidArgument` when not a number, `ERANGE` when a number but not a positive
    ///   `pid_t`.
    private static func pid(_ text: String) throws(Errno) -> Int32 {
        guard let number = Int64(text) ?? UInt64(text).map({ _ in Int64.max }) else { throw .invalidArgument }
        guard number > 0, number <= Int64(Int32.max) else { throw Errno(rawValue: ERANGE) }
        return Int32(number)
    }

    private static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    private static func socketOption(_ fd: Int32, _ option: Int32) -> Int32? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, option, &value, &length) == 0 ? value : nil
    }
}
