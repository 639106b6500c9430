#if canImport(Glibc)
import Glibc
#endif
import CLibgps
import LocationCore
import LocationPosix

/// One connection to gpsd: libgps's state (`gps_data_t`, about 24 KB, at a stable address as libgps
/// requires) and the reader thread on its socket. `@unchecked Sendable`: used only on the receiver's
/// queue.
final class GpsdConnection: @unchecked Sendable {
    /// What the latest SKY report of a device said (gpsd_json(5) SKY; gpsd sends one per epoch, next to the
    /// TPV).
    struct Sky {
        /// Satellites with `used: true`, and all listed; nil when the SKY listed none.
        var satellitesUsed: Int?
        var satellitesVisible: Int?
        /// SKY.satellites, as libgps unpacked them into its skyview.
        var satellites: [Satellite] = []
        /// SKY.hdop, vdop, pdop, tdop, gdop.
        var dop = DilutionOfPrecision()
        /// A SKY came since the device's last TPV (`Fix.satellitesUpdated`).
        var fresh = false
    }

    let data: UnsafeMutablePointer<gps_data_t>
    var reader: ReadabilityThread?
    var hadReport = false
    /// The start of the last report's line, NUL-terminated (`gps_read`'s message copy).
    var message = [CChar](repeating: 0, count: 32)
    /// By device path (TPV.device / SKY.device).
    var sky: [String: Sky] = [:]
    /// gpsd's devices: its `DEVICES` list, and each device a `DEVICE` report named since (at most 16).
    var devices: [String] = []
    private var isOpen = false

    init() {
        let size = MemoryLayout<gps_data_t>.size
        let raw = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: MemoryLayout<gps_data_t>.alignment)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        data = raw.bindMemory(to: gps_data_t.self, capacity: 1)
    }

    /// True when the last report's line starts `{"class":"NAME"`.
    func messageIs(class name: String) -> Bool {
        let expected = Array("{\"class\":\"\(name)\"".utf8)
        guard expected.count < message.count else { return false }
        for (index, byte) in expected.enumerated() where UInt8(bitPattern: message[index]) != byte { return false }
        return true
    }

    /// Keeps what a SKY report said: DOPs (NaN = absent), and the satellite counts libgps derives from
    /// its list (SATELLITE_SET).
    func noteSky(from report: UnsafeMutablePointer<gps_data_t>, device: String) {
        var sky = self.sky[device] ?? Sky()
        sky.fresh = true
        let dop = report.pointee.dop
        sky.dop = DilutionOfPrecision(horizontal: GpsdReceiver.finite(dop.hdop), vertical: GpsdReceiver.finite(dop.vdop),
                                      position: GpsdReceiver.finite(dop.pdop), time: GpsdReceiver.finite(dop.tdop),
                                      geometric: GpsdReceiver.finite(dop.gdop))
        if report.pointee.set & SATELLITE_SET != 0 {
            sky.satellitesUsed = Int(report.pointee.satellites_used)
            sky.satellitesVisible = Int(report.pointee.satellites_visible)
            sky.satellites = Self.satellites(of: report)
        } else {
            sky.satellitesUsed = nil
            sky.satellitesVisible = nil
            sky.satellites = []
        }
        if self.sky[device] == nil && self.sky.count >= 16 { self.sky.removeAll() }
        self.sky[device] = sky
    }

    /// The satellites of libgps's skyview (gps.h `struct satellite_t`, gpsd_json(5) SKY.satellites): by gnssid
    /// and svid when gpsd gave them (u-blox numbering, which `Constellation` shares), else by gpsd's PRN
    /// (NMEA 2.x–4.0 ranges); an SNR of −1 or a NaN angle is absent.
    static func satellites(of report: UnsafeMutablePointer<gps_data_t>) -> [Satellite] {
        let count = max(0, min(Int(report.pointee.satellites_visible), Int(MAXCHANNELS)))
        return withUnsafeBytes(of: &report.pointee.skyview) { raw in
            let list = raw.bindMemory(to: satellite_t.self)
            return list.prefix(count).map { s in
                let identified = s.svid != 0
                return Satellite(prn: identified ? Int(s.svid) : Int(s.PRN),
                                 constellation: identified ? Constellation(rawValue: Int(s.gnssid)) : nil,
                                 elevation: GpsdReceiver.finite(s.elevation), azimuth: GpsdReceiver.finite(s.azimuth),
                                 signalToNoise: s.ss >= 0 ? GpsdReceiver.finite(s.ss) : nil, used: s.used)
            }
        }
    }

    /// `gps_open` (libgps(3)): connects to gpsd at host:port and sets up libgps's line buffer. False on
    /// failure, with a negative netlib code (gps_errstr(3)) in errno; nothing is left open then.
    func open(host: String, port: Int) -> Bool {
        precondition(!isOpen, "a GpsdConnection is opened once")
        isOpen = gps_open(host, String(port), data) == 0
        return isOpen
    }

    /// Stops the reader thread, then (once it no longer polls the socket) `close`s; the thread's handler,
    /// which holds this connection, is released with it. On the receiver's queue.
    func stopReading() {
        guard let reader else { return close() }
        reader.cancel {
            self.close()
            self.reader = nil
        }
    }

    /// `gps_close` (libgps(3)): closes the socket, frees libgps's buffer. Does nothing unless `open`
    /// succeeded, and nothing the second time.
    func close() {
        guard isOpen else { return }
        isOpen = false
        _ = gps_close(data)
    }

    deinit {
        UnsafeMutableRawPointer(data).deallocate()
    }
}
