import LocationCore
import LocationPolicy
import LocationWire
import NMEA

/// One gpsd client's side of the gpsd front: its conversation (watch settings) and the last reports it
/// was sent, which its `?POLL;` answers repeat (the latest fix this client may see, paced as its stream).
struct GpsdSession: Sendable {
    var conversation = GpsdConversation()
    /// A client of the NMEA socket (`nmea-socket`, for GeoClue): watching in `nmea` mode from connect, never
    /// answered, its input ignored.
    let isNMEASocket: Bool
    /// The last TPV line this client got (or would have got with `json` off); empty before any.
    var lastTPV: [UInt8] = []
    /// The last SKY line (full accuracy only); empty otherwise.
    var lastSKY: [UInt8] = []

    /// NMEA sentences wanted (`nmea`, or `raw`: gpsd's raw mode gets synthesized sentences too — never the
    /// receiver's own bytes, which would pass its position around the policy).
    var wantsNMEA: Bool { conversation.policy.nmea || conversation.policy.raw > 0 }

    /// - Parameter nmeaSocket: a client of the NMEA socket: `enable` and `nmea` on, `json` off, from the start.
    init(nmeaSocket: Bool = false) {
        isNMEASocket = nmeaSocket
        guard nmeaSocket else { return }
        var watch = GpsdWatchPolicy()
        watch.enable = true
        watch.nmea = true
        conversation = GpsdConversation(watching: watch)
    }
}

/// One fix's gpsd shapes at one accuracy (see `GpsdFrontState.shapes`).
struct GpsdShapes: Sendable {
    var tpv: [UInt8] = []
    /// The fix's satellites as they stand (what `?POLL;` answers); empty at reduced accuracy.
    var sky: [UInt8] = []
    /// What a JSON watcher gets, made once for all watchers: `sky` then `tpv` when the satellites were reported
    /// in this epoch (`Fix.satellitesUpdated`: gpsd sends a SKY only then), else `tpv` alone.
    var skyAndTPV: [UInt8] = []
    /// Encoded only when some watcher wants NMEA.
    var nmea: [UInt8] = []
}

/// The gpsd front's share of the server state: gpsd's error model per receiver, each fix's gpsd shapes
/// encoded once for all gpsd clients (docs/GPSD.md), and the watchers the policy lets see nothing.
struct GpsdFrontState {
    /// True when the daemon listens for gpsd clients (the error models then follow every fix).
    var enabled = false
    /// The TCP listeners' sources and their back-offs, in the order of `NativeFront.gpsdListeners`.
    var accepting: [AcceptThrottle] = []
    /// The NMEA socket's source and its back-off (`nmea-socket`).
    var nmeaAccepting = AcceptThrottle()
    /// gpsd's error model of each receiver, by the fixes' `device` (receiver name). A few receivers: a list
    /// searched in order, where a dictionary would hash the name at every fix.
    private var models: [(device: String, model: GpsdErrorModel)] = []
    /// The estimates of the latest fix with a position.
    private var estimates = GpsdEstimates()
    /// Receiver name → device path (DEVICE.path, TPV.device), refreshed at each client read and after a
    /// receiver's status changed.
    /// `path` is the device as gpsd names it (`devicePath`), for clients that may see the receivers' state;
    /// `shown` what the others see (`shownPath`).
    private(set) var devicePaths: [(name: String, path: String, shown: String)] = []
    /// gpsd clients watching that may see no position (unauthorized, waiting for an agent, or When In Use
    /// without an active session): each tick of the blind clock gets them a `mode` 1 TPV, nothing more.
    var blind: Set<Int> = []
    /// A blind tick is scheduled.
    var blindClockRunning = false
    /// How often a blind watcher gets its `mode` 1 TPV: gpsd's no-fix report at a 1 Hz receiver's pace, on
    /// the daemon's clock whatever the receiver's rate.
    static let blindInterval = Duration.seconds(1)
    /// Counts the fixes observed: a no-fix epoch's shapes are encoded once for all (`noFixShapes`).
    private var observed: UInt64 = 0
    /// The shapes of the no-fix observed as `noFixEpoch`.
    private var noFix: (epoch: UInt64, shapes: GpsdShapes)?
    /// The Publisher's report serial the encodings below belong to.
    private var serial: UInt64?
    /// The encodings of report `serial` at each accuracy (two slots: nothing to hash at every fix).
    private var encodedReduced: GpsdShapes?
    private var encodedFull: GpsdShapes?

    /// A fix from the receivers: gpsd's model of its receiver computes the estimates (each fix once, in order),
    /// a no-fix epoch's too (gpsd's `ept`, its SKY's DOPs, and its time as the next fix's previous one); not the
    /// no-fix the daemon announces when a fix went stale or its receiver away, which gpsd never sees.
    mutating func observe(_ fix: Fix) {
        observed &+= 1
        guard !Self.isAnnounced(fix) else { return }
        let device = fix.device ?? ""
        if let i = models.firstIndex(where: { $0.device == device }) {
            estimates = models[i].model.estimates(for: fix)
        } else {
            var model = GpsdErrorModel()
            estimates = model.estimates(for: fix)
            models.append((device, model))
        }
    }

    /// The device path of receiver `name` (DEVICE.path, TPV.device); nil when not known.
    func devicePath(of name: String) -> String? {
        devicePaths.first { $0.name == name }?.path
    }

    /// Forgets the device paths (a receiver's status changed: a gpsd receiver learnt gpsd's device); they are
    /// read again from the receivers when next needed.
    mutating func forgetDevicePaths() { devicePaths.removeAll() }

    /// A receiver's device path as gpsd names devices: an upstream gpsd's own device, else the serial port or
    /// replay file (`path`), else its name.
    static func devicePath(_ r: ReceiverReport) -> String { r.device ?? r.path ?? r.name }

    /// The path a client that may not see the receivers' state is shown: the configured one (serial port,
    /// replay file, gpsd's address), never the device an upstream gpsd named once it answered, which would
    /// tell that it runs (docs/SECURITY.md).
    static func shownPath(_ r: ReceiverReport) -> String { r.path ?? r.name }

    /// Records receiver `r`'s paths.
    mutating func setDevicePath(of r: ReceiverReport) {
        let entry = (name: r.name, path: Self.devicePath(r), shown: Self.shownPath(r))
        if let i = devicePaths.firstIndex(where: { $0.name == r.name }) {
            devicePaths[i] = entry
        } else {
            devicePaths.append(entry)
        }
    }

    /// The gpsd shapes of `fix` (the Publisher's report at `accuracy`, serial `serial`), encoded once per
    /// fix and accuracy: full — TPV with gpsd's estimates, SKY, NMEA with satellites; reduced — TPV with
    /// the reduced position and `eph` only, no SKY, NMEA without satellites. The NMEA sentences only when
    /// `nmea` (some client watches in `nmea`/`raw` mode): most do not, and they cost as much as the TPV.
    mutating func shapes(of fix: Fix, accuracy: AccuracyAuthorization, serial: UInt64, nmea wanted: Bool = false)
        -> GpsdShapes
    {
        if self.serial != serial {
            self.serial = serial
            encodedReduced = nil
            encodedFull = nil
        }
        if var done = accuracy == .full ? encodedFull : encodedReduced {
            if wanted && done.nmea.isEmpty {
                NMEASynthesizer.appendEpoch(fix, satellites: accuracy == .full, to: &done.nmea)
                store(done, accuracy)
            }
            return done
        }
        let device = fix.device.flatMap { devicePath(of: $0) } ?? fix.device
        var shapes = GpsdShapes()
        if accuracy == .full {
            GpsdReports.appendTPV(fix, estimates: estimates, device: device, to: &shapes.tpv)
            GpsdReports.appendSKY(fix, dop: estimates.dop, device: device, to: &shapes.sky)
        } else {
            GpsdReports.appendTPV(fix, estimates: GpsdEstimates(eph: fix.eph), device: device, to: &shapes.tpv)
        }
        if fix.satellitesUpdated && !shapes.sky.isEmpty {
            shapes.skyAndTPV.reserveCapacity(shapes.sky.count + shapes.tpv.count)
            shapes.skyAndTPV += shapes.sky
            shapes.skyAndTPV += shapes.tpv
        } else {
            shapes.skyAndTPV = shapes.tpv
        }
        if wanted { NMEASynthesizer.appendEpoch(fix, satellites: accuracy == .full, to: &shapes.nmea) }
        store(shapes, accuracy)
        return shapes
    }

    private mutating func store(_ shapes: GpsdShapes, _ accuracy: AccuracyAuthorization) {
        if accuracy == .full { encodedFull = shapes } else { encodedReduced = shapes }
    }

    /// Whether `fix` is a no-fix the daemon announced (a fix gone stale, its receiver gone: no time, no position, no
    /// satellites), not a receiver's epoch.
    static func isAnnounced(_ fix: Fix) -> Bool { !fix.hasPosition && fix.time == nil && fix.satellites.isEmpty }

    /// gpsd's no-fix epoch for a full-accuracy watcher, for `fix`, the no-fix last observed: a `mode` 1 TPV with the
    /// epoch's `time` and `ept` (none for a no-fix the daemon announced), preceded by the epoch's SKY when it
    /// reported satellites, as gpsd sends both while it has no fix (`sky` is kept for `?POLL;` in any case).
    /// Encoded once per epoch; with `nmea`, also the epoch's sentences (RMC status V, GGA quality 0, GSA, GSV) for
    /// `nmea`/`raw` watchers, as a receiver without a fix sends them and gpsd passes them on.
    /// - Parameter device: the device path when the fix names no receiver.
    mutating func noFixShapes(of fix: Fix, device fallback: String?, nmea wanted: Bool = false) -> GpsdShapes {
        var shapes: GpsdShapes
        if let noFix, noFix.epoch == observed {
            shapes = noFix.shapes
        } else {
            let device = fix.device.flatMap { devicePath(of: $0) } ?? fallback
            shapes = GpsdShapes()
            GpsdReports.appendTPV(fix, estimates: estimates, device: device, to: &shapes.tpv)
            if !Self.isAnnounced(fix) { GpsdReports.appendSKY(fix, dop: estimates.dop, device: device, to: &shapes.sky) }
            shapes.skyAndTPV = fix.satellitesUpdated ? shapes.sky + shapes.tpv : shapes.tpv
        }
        // The sentences once some watcher wants them (none for a no-fix the daemon announced).
        if wanted, shapes.nmea.isEmpty, !Self.isAnnounced(fix) { NMEASynthesizer.appendEpoch(fix, satellites: true, to: &shapes.nmea) }
        noFix = (observed, shapes)
        return shapes
    }

    /// A TPV without position, time or satellites: `mode` 1 (what a client that may see nothing gets, and
    /// what anyone gets when the fix is lost).
    func noFixTPV(device: String?) -> [UInt8] {
        var tpv: [UInt8] = []
        GpsdReports.appendTPV(Fix(device: nil, mode: .noFix), estimates: GpsdEstimates(), device: device, to: &tpv)
        return tpv
    }

    /// The receivers as `DEVICES` lists them, by device path (serial port, gpsd device, replay file).
    /// - Parameter withState: with `activated`, `flags` and `bps` (when it was opened, whether it sent data, the
    ///   line speed it was found at); false for a client that may not see the location: they tell which receiver
    ///   runs and when fixes can come (an attacker helper saw `bps` appear once `speed = auto` found the speed).
    static func devices(_ reports: [ReceiverReport], withState: Bool) -> [GpsdDevice] {
        reports.map { r in
            GpsdDevice(path: withState ? devicePath(r) : shownPath(r), activated: withState ? r.connectedSince : nil,
                       flags: withState && (r.sentences ?? 0) > 0 ? 1 : nil, bitsPerSecond: withState ? r.speed : nil)
        }
    }
}
