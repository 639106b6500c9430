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
    /// The open device (borrowed from `descriptor`; -1 after `close`).
    public var fileDescriptor: Int32 { descriptor.rawValue }
    private var descriptor: OwnedFileDescriptor

    /// Opens and locks `path` (a device node or a link to one, e.g. /dev/serial/by-id/...).
    /// - Throws: `SerialPortError.openFailed`, `.busy` (naming the holder), `.notATerminal`.
    public init(path: String) throws(SerialPortError) {
        self.path = path
        var opened: OwnedFileDescriptor
        do {
            opened = try OwnedFileDescriptor(opening: path, flags: O_RDWR | O_NOCTTY | O_NONBLOCK)
        } catch {
            if error == .resourceBusy { throw .busy(path: path, holder: TTYSerialDevice.holder(of: path)) }
            throw .openFailed(path: path, errno: error)
        }
        // On a throw below, `opened` closes the device as it goes out of scope.
        let fd = opened.rawValue
        if case .failure = funnel(.termios, { flock(fd, LOCK_EX | LOCK_NB) }) {
            throw .busy(path: path, holder: TTYSerialDevice.holder(of: path, excluding: getpid()))
        }
        var attributes = termios()
        if case .failure(let e) = funnel(.termios, { tcgetattr(fd, &attributes) }) {
            throw e == .notATerminal ? .notATerminal(path: path) : .configurationFailed(path: path, errno: e)
        }
        _ = locationd_tty_set_exclusive(fd)
        cfmakeraw(&attributes)
        attributes.c_cflag |= tcflag_t(CLOCAL) | tcflag_t(CREAD)
        attributes.c_cflag &= ~(tcflag_t(CSTOPB) | tcflag_t(PARENB) | tcflag_t(CRTSCTS))
        attributes.c_iflag &= ~(tcflag_t(IXON) | tcflag_t(IXOFF) | tcflag_t(IXANY))
        if case .failure(let e) = funnel(.termios, { tcsetattr(fd, TCSANOW, &attributes) }) {
            throw .configurationFailed(path: path, errno: e)
        }
        descriptor = OwnedFileDescriptor(taking: opened.release())
    }

    public func setSpeed(_ bitsPerSecond: Int) throws(SerialPortError) {
        let constant = speed_t(locationd_speed_constant(UInt32(clamping: bitsPerSecond)))
        guard constant != 0 else { throw .unsupportedSpeed(path: path, speed: bitsPerSecond) }
        let fd = fileDescriptor
        var attributes = termios()
        if case .failure(let e) = funnel(.termios, { tcgetattr(fd, &attributes) }) {
            throw .configurationFailed(path: path, errno: e)
        }
        cfsetispeed(&attributes, constant)
        cfsetospeed(&attributes, constant)
        if case .failure(let e) = funnel(.termios, { tcsetattr(fd, TCSANOW, &attributes) }) {
            throw .configurationFailed(path: path, errno: e)
        }
        _ = funnel(.termios) { tcflush(fd, TCIFLUSH) }
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        FileDescriptorOps.read(fileDescriptor, into: buffer)
    }

    public func close() {
        guard descriptor.isOpen else { return }
        _ = locationd_tty_clear_exclusive(descriptor.rawValue)
        descriptor.close()
    }

    /// Names the process holding `path` open ("gpsd (pid 812)"), by scanning /proc/PID/fd; nil if none found.
    public static func holder(of path: String, excluding excluded: pid_t = -1) -> String? {
        guard let target = realpath(path, nil) else { return nil }
        let resolved = String(cString: target)
        free(target)
        guard let proc = opendir("/proc") else { return nil }
        defer { closedir(proc) }
        while let entry = readdir(proc) {
            let name = FileDescriptorOps.entryName(entry)
            guard let pid = Int32(name), pid != excluded else { continue }
            guard let fds = opendir("/proc/\(pid)/fd") else { continue }
            defer { closedir(fds) }
            while let fdEntry = readdir(fds) {
                let fdName = FileDescriptorOps.entryName(fdEntry)
                let link = FileDescriptorOps.readLink("/proc/\(pid)/fd/\(fdName)")
                guard case .success(resolved) = link else { continue }
                var comm = "process"
                if case .success(let bytes) = FileDescriptorOps.readFile(atPath: "/proc/\(pid)/comm", maximumBytes: 64) {
                    comm = String(decoding: bytes.prefix(while: { $0 != 10 }), as: UTF8.self)
                }
                return "\(comm) (pid \(pid))"
            }
        }
        return nil
    }
}

/// A pseudo-terminal pair (posix_openpt(3)), for tests and simulations: the master side plays the
/// receiver; the slave path is what a `TTYSerialDevice` opens.
public final class PseudoTerminal {
    /// The master side, O_RDWR|O_NOCTTY, blocking (borrowed; -1 after `close`).
    public var master: Int32 { masterSide.rawValue }
    /// Path of the slave side, e.g. /dev/pts/5.
    public let slavePath: String
    private var masterSide: OwnedFileDescriptor
    /// An extra slave descriptor kept open so that reads on the master do not fail before the slave opens.
    private var keeper: OwnedFileDescriptor

    public init() throws(Errno) {
        var name = [CChar](repeating: 0, count: 128)
        let m = locationd_open_pty(&name, name.count)
        guard m >= 0 else { throw .current }
        masterSide = OwnedFileDescriptor(taking: m)
        slavePath = String(decoding: name.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        do {
            keeper = try OwnedFileDescriptor(opening: slavePath, flags: O_RDWR | O_NOCTTY)
        } catch {
            keeper = OwnedFileDescriptor()
        }
        if keeper.isOpen {
            var attributes = termios()
            tcgetattr(keeper.rawValue, &attributes)
            cfmakeraw(&attributes)
            tcsetattr(keeper.rawValue, TCSANOW, &attributes)
        }
    }

    /// Writes bytes into the master side (they appear on the slave side to its reader).
    public func write(_ bytes: [UInt8]) -> Result<Void, Errno> { FileDescriptorOps.writeAll(master, bytes) }

    /// Closes the helper slave descriptor: afterwards closing the master makes the slave's reader see EIO.
    public func releaseKeeper() {
        keeper.close()
    }

    /// Closes both sides that this object holds (the master: the "unplug").
    public func close() {
        releaseKeeper()
        masterSide.close()
    }
}
