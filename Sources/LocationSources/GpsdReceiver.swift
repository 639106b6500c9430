#if canImport(Glibc)
import Glibc
#endif
import CLibgps
import Dispatch
import LocationCore
import LocationPosix

/// Reads fixes from a gpsd daemon through libgps (gpsd 3.22, API 11): connects with `gps_open`, asks for
/// JSON reports with `gps_stream` (`?WATCH={"enable":true,"json":true}`, plus `"device"` when one device
/// is configured), and maps every TPV report to a `Fix`. gpsd has already decoded the receiver, so this
/// receiver skips the NMEA stage.
///
/// Reads are event-driven: a Dispatch read source on the socket (`gps_data_t.gps_fd`, non-blocking) on
/// the receiver's queue; when it fires, `gps_read` is called until it has no complete report left, so a
/// quiet gpsd costs no CPU. A refused connection, an unresolvable host, or gpsd going away (`gps_read`
/// returns -1: end of file or a read error) makes it `unavailable` with the reason; it then reconnects
/// with capped exponential backoff, and fixes resume by themselves once gpsd is back.
///
/// Each connection owns its own `gps_data_t`; the read source's cancel handler calls `gps_close` (which
/// closes the socket and frees libgps's buffer), so every socket is closed exactly once.
///
/// Blocking: `gps_open` resolves the host and connects synchronously on the receiver's queue (immediate
/// for `localhost`; up to the system's connect timeout for an unreachable remote host).
public final class GpsdReceiver: Receiver, @unchecked Sendable {
    public let name: String
    public let priority: Int
    /// gpsd's host name or address (config `server`, default `localhost`).
    public let host: String
    /// gpsd's TCP port (config `server`, default 2947, IANA `gpsd`).
    public let port: Int
    /// When set, only this device's fixes (gpsd_json(5) `TPV.device`, e.g. `/dev/ttyACM0`) are used, and
    /// gpsd is asked to send only its reports (`?WATCH` `device`).
    public let device: String?
    /// `host:port`, as shown in the status (`[host]:port` for an IPv6 address).
    public let path: String
    private let core: ReceiverCore

    /// The current connection; only touched on `core.queue`.
    private var connection: Connection?
    /// JSON reports read over all connections (status `sentences`).
    private var reports = 0

    /// - Parameter configuration: a `.gpsd` receiver.
    public init(_ configuration: ReceiverConfiguration) {
        guard case let .gpsd(host, port, device) = configuration.source else {
            preconditionFailure("GpsdReceiver needs a gpsd configuration")
        }
        self.name = configuration.name
        self.priority = configuration.priority
        self.host = host
        self.port = port
        self.device = device
        self.path = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        self.core = ReceiverCore(configuration: configuration, type: "gpsd", path: path)
    }

    public var status: ReceiverStatus { core.status }

    public func start(_ handler: @escaping @Sendable (ReceiverEvent) -> Void) {
        core.queue.async {
            self.core.setHandler(handler)
            _ = self.core.newGeneration()
            self.connect()
        }
    }

    /// Stops reading and closes the connection. The socket is closed by the read source's cancel
    /// handler, which runs on the receiver's queue right after this returns.
    public func stop() {
        core.queue.sync {
            _ = core.newGeneration()
            disconnect()
            core.cancelTimers()
            core.setState(.stopped)
            core.setHandler(nil)
        }
    }

    // MARK: - Connection (all on core.queue)

    private func connect() {
        let connection = Connection()
        let status = gps_open(host, String(port), connection.data)
        guard status == 0 else {
            // libgps leaves a negative netlib code in errno; nothing is open.
            let code = errno
            unavailable(Self.describeOpenFailure(code, host: host, port: port))
            return
        }
        let fd = connection.data.pointee.gps_fd
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)  // not inherited by programs the daemon starts
        if case let .failure(error) = FileDescriptorOps.setNonBlocking(fd) {
            connection.close()
            unavailable("cannot make the socket non-blocking: \(error)")
            return
        }
        var flags = CLIBGPS_WATCH_ENABLE | CLIBGPS_WATCH_JSON
        if device != nil { flags |= CLIBGPS_WATCH_DEVICE }
        let streamed: Int32
        if let device {
            streamed = device.withCString { clibgps_stream(connection.data, flags, $0) }
        } else {
            streamed = clibgps_stream(connection.data, flags, nil)
        }
        guard streamed == 0 else {
            let error = Errno.current
            connection.close()
            unavailable("sending ?WATCH failed: \(error)")
            return
        }

        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: core.queue)
        source.setEventHandler { [weak self] in
            guard let self else {
                connection.source?.cancel()
                return
            }
            self.readAvailable(connection)
        }
        source.setCancelHandler { connection.close() }
        connection.source = source
        self.connection = connection
        source.resume()
        core.setState(.connected)
    }

    /// Reads every complete report libgps can get now: `gps_read` (libgps(3)) returns one JSON line per
    /// call, > 0 for a report, 0 when no complete line is buffered and the non-blocking socket has nothing
    /// more (EAGAIN), -1 at end of file or on a read error. Draining until 0 is what `gps_waiting(&data, 0)`
    /// would tell, without its `select(2)`, which cannot take descriptors ≥ FD_SETSIZE.
    private func readAvailable(_ connection: Connection) {
        guard self.connection === connection else { return }
        var budget = 1024
        while true {
            connection.data.pointee.set = 0
            errno = 0
            let n = gps_read(connection.data, nil, 0)
            if n < 0 {
                let code = errno
                if code == 0 || code == ECONNRESET {
                    fail(code == 0 ? "gpsd closed the connection" : "gpsd reset the connection")
                } else {
                    core.updateStatus { $0.errors += 1 }
                    fail("read: \(Errno(rawValue: code))")
                }
                return
            }
            if n == 0 { return }
            handleReport(connection)
            if self.connection !== connection { return }
            budget -= 1
            if budget == 0 {
                // A very chatty gpsd: let stop() and other work in, then carry on.
                core.queue.async { [weak self] in self?.readAvailable(connection) }
                return
            }
        }
    }

    /// One JSON report has been unpacked into `connection.data`; `set` holds only what it carried.
    private func handleReport(_ connection: Connection) {
        reports += 1
        let total = reports
        core.updateStatus { $0.sentences = total }
        if !connection.hadReport {
            // gpsd answered (its VERSION greeting): the connection works, start backoff afresh next time.
            connection.hadReport = true
            core.backoff.reset()
        }
        let data = connection.data
        let set = data.pointee.set
        let reportDevice = Self.string(fromCharacters: data.pointee.dev.path)
        let ours = device == nil || reportDevice == device
        if set & (CLIBGPS_SATELLITE_SET | CLIBGPS_DOP_SET) != 0 {
            // A SKY report.
            guard ours else { return }
            if set & CLIBGPS_SATELLITE_SET != 0 {
                connection.satellitesUsed = Int(data.pointee.satellites_used)
                connection.satellitesVisible = Int(data.pointee.satellites_visible)
            }
            if set & CLIBGPS_DOP_SET != 0 {
                let dop = data.pointee.dop
                connection.dop = DilutionOfPrecision(horizontal: Self.finite(dop.hdop), vertical: Self.finite(dop.vdop),
                                                     position: Self.finite(dop.pdop), time: Self.finite(dop.tdop),
                                                     geometric: Self.finite(dop.gdop))
            }
            return
        }
        // libgps sets STATUS_SET only for a TPV report, MODE_SET when it carried a mode.
        guard set & CLIBGPS_STATUS_SET != 0, set & CLIBGPS_MODE_SET != 0, ours else { return }
        var fix = Self.fix(from: data.pointee.fix, set: set)
        fix.satellitesUsed = connection.satellitesUsed
        fix.satellitesVisible = connection.satellitesVisible
        fix.dop = connection.dop
        core.deliver(fix)
    }

    private func fail(_ reason: String) {
        disconnect()
        unavailable(reason)
    }

    private func unavailable(_ reason: String) {
        core.setState(.unavailable(reason: "gpsd at \(path): \(reason)"))
        core.retryLater { [weak self] in self?.connect() }
    }

    private func disconnect() {
        guard let connection else { return }
        self.connection = nil
        if let source = connection.source {
            source.cancel()  // its cancel handler calls gps_close
        } else {
            connection.close()
        }
    }

    // MARK: - Mapping gps_data_t to Fix

    /// Maps a TPV report (libgps's `gps_fix_t` and the `set` bits of that report) to a `Fix`.
    ///
    /// Fields (gpsd_json(5) TPV; libgps fills absent ones with NaN, which become nil): `mode`; `time`
    /// (UTC, rounded to the millisecond); `lat`, `lon` (degrees); `altHAE`, `altMSL`, `geoidSep` (metres);
    /// `speed`, `climb` (m/s); `track`, `magvar` (degrees); `eph`, `epx`, `epy`, `epv` (metres); `status`
    /// as the quality.
    static func fix(from tpv: gps_fix_t, set: gps_mask_t) -> Fix {
        var fix = Fix()
        switch tpv.mode {
        case 2: fix.mode = .twoDimensional
        case 3: fix.mode = .threeDimensional
        default: fix.mode = .noFix
        }
        if set & CLIBGPS_TIME_SET != 0 {
            fix.time = utcTime(seconds: Int(tpv.time.tv_sec), nanoseconds: Int(tpv.time.tv_nsec))
        }
        fix.quality = quality(gpsdStatus: Int(tpv.status))
        fix.latitude = finite(tpv.latitude)
        fix.longitude = finite(tpv.longitude)
        fix.altitudeHAE = finite(tpv.altHAE)
        fix.altitudeMSL = finite(tpv.altMSL)
        fix.geoidSeparation = finite(tpv.geoid_sep)
        fix.speed = finite(tpv.speed)
        fix.track = finite(tpv.track)
        fix.climb = finite(tpv.climb)
        fix.magneticVariation = finite(tpv.magnetic_var)
        fix.eph = finite(tpv.eph)
        fix.epx = finite(tpv.epx)
        fix.epy = finite(tpv.epy)
        fix.epv = finite(tpv.epv)
        return fix
    }

    /// A POSIX time (libgps `timespec_t`: seconds and nanoseconds since 1970-01-01 UTC) as a dated
    /// `UTCTime`, rounded to the nearest millisecond.
    static func utcTime(seconds: Int, nanoseconds: Int) -> UTCTime {
        let milliseconds = seconds * 1000 + (nanoseconds + 500_000) / 1_000_000
        let perDay = UTCTime.millisecondsPerDay
        var days = milliseconds / perDay
        var ofDay = milliseconds % perDay
        if ofDay < 0 {
            days -= 1
            ofDay += perDay
        }
        return UTCTime(date: CivilDate(daysSinceUnixEpoch: days), millisecondsOfDay: ofDay)
    }

    /// gpsd_json(5) TPV.status: 1 GPS, 2 DGPS, 3 RTK fixed, 4 RTK float, 5 dead reckoning, 6 GNSS + dead
    /// reckoning, 7 time only (surveyed/manual), 8 simulated, 9 P(Y) code; 0 unknown → nil.
    static func quality(gpsdStatus: Int) -> FixQuality? {
        switch gpsdStatus {
        case 1, 6: return .gps  // 6: a GNSS fix that dead reckoning helps along
        case 2: return .dgps
        case 3: return .rtkFixed
        case 4: return .rtkFloat
        case 5: return .deadReckoning
        case 7: return .manual
        case 8: return .simulated
        case 9: return .pps
        default: return nil
        }
    }

    /// Why `gps_open` failed, from the negative netlib code it leaves in errno.
    static func describeOpenFailure(_ code: Int32, host: String, port: Int) -> String {
        if code == CLIBGPS_NL_NOCONNECT {
            // libgps drops connect(2)'s errno; one quick attempt of our own names the cause.
            let cause = clibgps_connect_errno(host, String(port), 1000)
            if cause > 0 { return lowercasedFirst(Errno(rawValue: cause).description) }
            return "cannot connect"
        }
        if code == CLIBGPS_NL_NOHOST { return "unknown host \(host)" }
        if code < 0, let text = gps_errstr(code) { return String(cString: text) }
        if code > 0 { return lowercasedFirst(Errno(rawValue: code).description) }
        return "cannot connect"
    }

    static func finite(_ value: Double) -> Double? { value.isFinite ? value : nil }

    private static func lowercasedFirst(_ text: String) -> String {
        guard let first = text.first else { return text }
        return first.lowercased() + text.dropFirst()
    }

    /// A NUL-terminated C character array (imported as a tuple) as a String.
    private static func string<T>(fromCharacters tuple: T) -> String {
        withUnsafeBytes(of: tuple) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}

/// One connection to gpsd: libgps's state (`gps_data_t`, about 24 KB, at a stable address as libgps
/// requires) and the read source on its socket. Used only on the receiver's queue.
private final class Connection: @unchecked Sendable {
    let data: UnsafeMutablePointer<gps_data_t>
    var source: DispatchSourceRead?
    var hadReport = false
    /// From the latest SKY report of this connection (gpsd sends an epoch's SKY next to its TPV).
    var satellitesUsed: Int?
    var satellitesVisible: Int?
    var dop = DilutionOfPrecision()
    private var open = true

    init() {
        let size = MemoryLayout<gps_data_t>.size
        let raw = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: MemoryLayout<gps_data_t>.alignment)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        data = raw.bindMemory(to: gps_data_t.self, capacity: 1)
    }

    /// `gps_close` (libgps(3)): closes the socket, frees libgps's buffer. Only for a connection whose
    /// `gps_open` succeeded; does nothing the second time.
    func close() {
        guard open else { return }
        open = false
        _ = gps_close(data)
    }

    deinit {
        UnsafeMutableRawPointer(data).deallocate()
    }
}
