#if canImport(Glibc)
import Glibc
#endif
import CPosixShims

/// Why a serial device could not be opened or configured. Carries the device path.
public enum SerialPortError: Error, Hashable, Sendable, CustomStringConvertible {
    /// open(2) failed.
    case openFailed(path: String, errno: Errno)
    /// Another process holds the device (flock or TIOCEXCL); `holder` names it when /proc tells.
    case busy(path: String, holder: String?)
    /// The path is not a terminal (termios calls fail with ENOTTY).
    case notATerminal(path: String)
    /// The line speed is not one termios offers.
    case unsupportedSpeed(path: String, speed: Int)
    /// tcgetattr/tcsetattr failed.
    case configurationFailed(path: String, errno: Errno)

    public var description: String {
        switch self {
        case let .openFailed(path, e): return "cannot open \(path): \(e)"
        case let .busy(path, holder): return "\(path) is in use by \(holder ?? "another process")"
        case let .notATerminal(path): return "\(path) is not a serial device (not a tty)"
        case let .unsupportedSpeed(path, speed): return "\(path): unsupported line speed \(speed)"
        case let .configurationFailed(path, e): return "cannot configure \(path): \(e)"
        }
    }
}

/// The line speeds NMEA receivers use, in the order autobaud tries them (most common first).
public let commonSerialSpeeds = [4800, 9600, 38400, 115200, 19200, 57600, 230400, 460800, 921600]

/// A serial device the receiver reads from: a real tty, or a simulation in tests (the syscall funnel
/// the serial receiver goes through).
public protocol SerialDevice: AnyObject {
    /// Descriptor to wait on for readability.
    var fileDescriptor: Int32 { get }
    /// Sets the line speed, bit/s (raw 8N1 is kept).
    func setSpeed(_ bitsPerSecond: Int) throws(SerialPortError)
    /// read(2) on the device: bytes read, 0 at end of file, `.wouldBlock` when nothing is waiting.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno>
    /// Closes the device (and releases its lock).
    func close()
}

/// Opens a device path into a `SerialDevice`.
public typealias SerialDeviceOpener = @Sendable (String) throws(SerialPortError) -> any SerialDevice

/// A tty opened for an NMEA receiver: `O_RDWR|O_NOCTTY|O_NONBLOCK`, an exclusive `flock` plus
/// `TIOCEXCL`, raw 8N1 with no flow control (termios(3), as gpsd's serial.c configures it).
public final class TTYSerialDevice: SerialDevice {
    public let path: String
    public let fileDescriptor: Int32
    private var closed = false

    /// Opens and locks `path` (a device node or a link to one, e.g. /dev/serial/by-id/...).
    /// - Throws: `SerialPortError.openFailed`, `.busy` (naming the holder), `.notATerminal`.
    public init(path: String) throws(SerialPortError) {
        self.path = path
        var fd: Int32 = -1
        switch retryingOnInterrupt({ open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC) }) {
        case .success(let value): fd = value
        case .failure(let e):
            if e == .resourceBusy { throw .busy(path: path, holder: TTYSerialDevice.holder(of: path)) }
            throw .openFailed(path: path, errno: e)
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let holder = TTYSerialDevice.holder(of: path, excluding: getpid())
            Glibc.close(fd)
            throw .busy(path: path, holder: holder)
        }
        var attributes = termios()
        if tcgetattr(fd, &attributes) != 0 {
            let e = Errno.current
            Glibc.close(fd)
            throw e == .notATerminal ? .notATerminal(path: path) : .configurationFailed(path: path, errno: e)
        }
        _ = locationd_tty_set_exclusive(fd)
        cfmakeraw(&attributes)
        attributes.c_cflag |= tcflag_t(CLOCAL) | tcflag_t(CREAD)
        attributes.c_cflag &= ~(tcflag_t(CSTOPB) | tcflag_t(PARENB) | tcflag_t(CRTSCTS))
        attributes.c_iflag &= ~(tcflag_t(IXON) | tcflag_t(IXOFF) | tcflag_t(IXANY))
        if tcsetattr(fd, TCSANOW, &attributes) != 0 {
            let e = Errno.current
            Glibc.close(fd)
            throw .configurationFailed(path: path, errno: e)
        }
        fileDescriptor = fd
    }

    deinit { close() }

    public func setSpeed(_ bitsPerSecond: Int) throws(SerialPortError) {
        let constant = speed_t(locationd_speed_constant(UInt32(clamping: bitsPerSecond)))
        guard constant != 0 else { throw .unsupportedSpeed(path: path, speed: bitsPerSecond) }
        var attributes = termios()
        guard tcgetattr(fileDescriptor, &attributes) == 0 else {
            throw .configurationFailed(path: path, errno: .current)
        }
        cfsetispeed(&attributes, constant)
        cfsetospeed(&attributes, constant)
        guard tcsetattr(fileDescriptor, TCSANOW, &attributes) == 0 else {
            throw .configurationFailed(path: path, errno: .current)
        }
        tcflush(fileDescriptor, TCIFLUSH)
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        FileDescriptorOps.read(fileDescriptor, into: buffer)
    }

    public func close() {
        guard !closed else { return }
        closed = true
        _ = locationd_tty_clear_exclusive(fileDescriptor)
        FileDescriptorOps.close(fileDescriptor)
    }

    /// Names the process holding `path` open ("gpsd (pid 812)"), by scanning /proc/PID/fd; nil if none found.
    public static func holder(of path: String, excluding excluded: pid_t = -1) -> String? {
        guard let target = realpath(path, nil) else { return nil }
        let resolved = String(cString: target)
        free(target)
        guard let proc = opendir("/proc") else { return nil }
        defer { closedir(proc) }
        var buffer = [CChar](repeating: 0, count: 4096)
        while let entry = readdir(proc) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            guard let pid = Int32(name), pid != excluded else { continue }
            guard let fds = opendir("/proc/\(pid)/fd") else { continue }
            defer { closedir(fds) }
            while let fdEntry = readdir(fds) {
                let fdName = withUnsafeBytes(of: fdEntry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
                let n = readlink("/proc/\(pid)/fd/\(fdName)", &buffer, buffer.count - 1)
                guard n > 0 else { continue }
                let link = buffer.withUnsafeBufferPointer { String(decoding: UnsafeRawBufferPointer($0).prefix(n), as: UTF8.self) }
                if link == resolved {
                    var comm = "process"
                    if let f = fopen("/proc/\(pid)/comm", "r") {
                        var line = [CChar](repeating: 0, count: 64)
                        if fgets(&line, 64, f) != nil {
                            comm = String(decoding: line.prefix(while: { $0 != 0 && $0 != 10 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
                        }
                        fclose(f)
                    }
                    return "\(comm) (pid \(pid))"
                }
            }
        }
        return nil
    }
}

/// A pseudo-terminal pair (posix_openpt(3)), for tests and simulations: the master side plays the
/// receiver; the slave path is what a `TTYSerialDevice` opens.
public final class PseudoTerminal {
    /// The master side, O_RDWR|O_NOCTTY, blocking.
    public let master: Int32
    /// Path of the slave side, e.g. /dev/pts/5.
    public let slavePath: String
    /// An extra slave descriptor kept open so that reads on the master do not fail before the slave opens.
    private var keeper: Int32

    public init() throws(Errno) {
        var name = [CChar](repeating: 0, count: 128)
        let m = locationd_open_pty(&name, name.count)
        guard m >= 0 else { throw .current }
        master = m
        slavePath = String(decoding: name.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        keeper = open(slavePath, O_RDWR | O_NOCTTY | O_CLOEXEC)
        if keeper >= 0 {
            var attributes = termios()
            tcgetattr(keeper, &attributes)
            cfmakeraw(&attributes)
            tcsetattr(keeper, TCSANOW, &attributes)
        }
    }

    /// Writes bytes into the master side (they appear on the slave side to its reader).
    public func write(_ bytes: [UInt8]) -> Result<Void, Errno> { FileDescriptorOps.writeAll(master, bytes) }

    /// Closes the helper slave descriptor: afterwards closing the master makes the slave's reader see EIO.
    public func releaseKeeper() {
        if keeper >= 0 { Glibc.close(keeper); keeper = -1 }
    }

    /// Closes both sides that this object holds (the master: the "unplug").
    public func close() {
        releaseKeeper()
        Glibc.close(master)
    }
}
