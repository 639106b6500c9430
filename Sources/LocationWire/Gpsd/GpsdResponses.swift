import LocationCore

/// A receiver as gpsd's `DEVICE` object describes it (gpsd_json(5) DEVICE; gpsd 3.22 `json_device_dump()`).
public struct GpsdDevice: Hashable, Sendable {
    /// The device path: serial port, the gpsd receiver's device, or the replay file (DEVICE.path).
    public var path: String
    /// The driver name; gpsd says "NMEA0183" for an NMEA receiver (DEVICE.driver).
    public var driver: String?
    /// When the device was opened, UTC (DEVICE.activated).
    public var activated: UTCTime?
    /// gpsd's `SEEN_*` bits (DEVICE.flags): 1 once GPS data was seen.
    public var flags: Int?
    /// 0: the device speaks NMEA (DEVICE.native).
    public var native: Int?
    /// Line speed, bits per second (DEVICE.bps); nil for a file or socket.
    public var bitsPerSecond: Int?
    /// Parity: "N", "O" or "E" (DEVICE.parity).
    public var parity: String?
    /// Stop bits, 1 or 2 (DEVICE.stopbits).
    public var stopBits: Int?
    /// Reporting cycle, seconds (DEVICE.cycle, printed `%.2f`).
    public var cycleSeconds: Double?

    public init(path: String, driver: String? = "NMEA0183", activated: UTCTime? = nil, flags: Int? = 1,
                native: Int? = 0, bitsPerSecond: Int? = nil, parity: String? = "N", stopBits: Int? = 1,
                cycleSeconds: Double? = 1) {
        self.path = path
        self.driver = driver
        self.activated = activated
        self.flags = flags
        self.native = native
        self.bitsPerSecond = bitsPerSecond
        self.parity = parity
        self.stopBits = stopBits
        self.cycleSeconds = cycleSeconds
    }
}

/// gpsd's answers and notices, byte for byte as gpsd 3.22 sends them (each ends in CR LF). Texts checked against
/// the real daemon (gpsd 3.22, Debian 12, read-only under gpsfake); see docs/GPSD.md.
public enum GpsdResponses {
    /// gpsd's release and protocol version as 3.22 announces them (gpsd_json(5) VERSION).
    public static let release = "3.22", revision = "3.22", protocolMajor = 3, protocolMinor = 14

    /// `{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}`: the greeting and
    /// the answer to `?VERSION;`.
    public static func appendVersion(to out: inout [UInt8]) {
        var w = GpsdObject(class: "VERSION")
        w.string("release", release)
        w.string("rev", revision)
        w.integer("proto_major", protocolMajor)
        w.integer("proto_minor", protocolMinor)
        w.end(to: &out)
    }

    /// `DEVICES`: the receivers (answer to `?DEVICES;`, and before each `WATCH` echo).
    public static func appendDevices(_ devices: [GpsdDevice], to out: inout [UInt8]) {
        var w = GpsdObject(class: "DEVICES")
        w.key("devices")
        w.out.append(UInt8(ascii: "["))
        for (i, d) in devices.enumerated() {
            if i > 0 { w.out.append(UInt8(ascii: ",")) }
            var object = deviceObject(d)
            object.close(to: &w.out)
        }
        w.out.append(UInt8(ascii: "]"))
        w.end(to: &out)
    }

    /// `DEVICE`: one receiver (answer to `?DEVICE;`, and the notice when a watcher starts).
    public static func appendDevice(_ device: GpsdDevice, to out: inout [UInt8]) {
        var w = deviceObject(device)
        w.end(to: &out)
    }

    private static func deviceObject(_ d: GpsdDevice) -> GpsdObject {
        var w = GpsdObject(class: "DEVICE")
        w.string("path", d.path)
        w.string("driver", d.driver)
        if let t = d.activated { w.time("activated", t) }
        w.integer("flags", d.flags)
        w.integer("native", d.native)
        w.integer("bps", d.bitsPerSecond)
        w.string("parity", d.parity)
        w.integer("stopbits", d.stopBits)
        w.number("cycle", d.cycleSeconds, 2)
        return w
    }

    /// The `WATCH` echo: `enable`, `json`, `nmea`, `raw`, `scaled`, `timing`, `split24`, `pps`, and `device`
    /// when set, in that order.
    public static func appendWatch(_ p: GpsdWatchPolicy, to out: inout [UInt8]) {
        var w = GpsdObject(class: "WATCH")
        w.bool("enable", p.enable)
        w.bool("json", p.json)
        w.bool("nmea", p.nmea)
        w.integer("raw", p.raw)
        w.bool("scaled", p.scaled)
        w.bool("timing", p.timing)
        w.bool("split24", p.split24)
        w.bool("pps", p.pps)
        w.string("device", p.device)
        w.end(to: &out)
    }

    /// `POLL`: the answer to `?POLL;`.
    /// - Parameters:
    ///   - time: now, UTC (POLL.time).
    ///   - active: how many receivers are active (POLL.active).
    ///   - tpv: `TPV` lines (from `GpsdReports.appendTPV`), one per receiver; their CR LF is dropped.
    ///   - sky: `SKY` lines likewise. (`gst` is always empty: the front keeps no GST.)
    public static func appendPoll(time: UTCTime, active: Int, tpv: [[UInt8]], sky: [[UInt8]], to out: inout [UInt8]) {
        var w = GpsdObject(class: "POLL")
        w.time("time", time)
        w.integer("active", active)
        func list(_ name: StaticString, _ objects: [[UInt8]]) {
            w.key(name)
            w.out.append(UInt8(ascii: "["))
            for (i, o) in objects.enumerated() {
                if i > 0 { w.out.append(UInt8(ascii: ",")) }
                var body = o[...]
                while let last = body.last, last == 13 || last == 10 { body = body.dropLast() }
                w.out.append(contentsOf: body)
            }
            w.out.append(UInt8(ascii: "]"))
        }
        list("tpv", tpv)
        list("gst", [])
        list("sky", sky)
        w.end(to: &out)
    }

    /// `{"class":"ERROR","message":"…"}` with `message` escaped as gpsd escapes it.
    public static func appendError(_ message: String, to out: inout [UInt8]) {
        var w = GpsdObject(class: "ERROR")
        w.string("message", message)
        w.end(to: &out)
    }

    /// The answer to `GpsdRequest.unrecognized`: gpsd 3.22 quotes the rest of the input, trailing whitespace
    /// removed, followed by a newline (`Unrecognized request '?FOO;\n'`, escaped in JSON, `/` as `\/` too).
    public static func appendUnrecognized(_ text: String, to out: inout [UInt8]) {
        var w = GpsdObject(class: "ERROR")
        w.string("message", "Unrecognized request '" + text + "\n'", escapingSolidus: true)
        w.end(to: &out)
    }

    /// The answer to `GpsdRequest.invalid`. For WATCH: `Invalid WATCH: REASON`. For DEVICE gpsd 3.22 writes an
    /// unbalanced quote, `"message":"Invalid DEVICE: "REASON"}` (not valid JSON); it is reproduced as sent.
    public static func appendInvalid(command: String, reason: String, to out: inout [UInt8]) {
        if command == "DEVICE" {
            out.append(contentsOf: Array("{\"class\":\"ERROR\",\"message\":\"Invalid DEVICE: \"".utf8))
            out.append(contentsOf: Array(reason.utf8))
            out.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: "}"), 13, 10])
        } else {
            appendError("Invalid \(command): \(reason)", to: &out)
        }
    }

    /// `?WATCH={"device":PATH}` for a path no receiver has: `No such device as PATH` (no DEVICES, no WATCH).
    public static func appendNoSuchDevice(_ path: String, to out: inout [UInt8]) {
        appendError("No such device as \(path)", to: &out)
    }

    /// `?DEVICE={"path":PATH,…}` for a path no receiver has: `Can't open PATH.`
    public static func appendCannotOpen(_ path: String, to out: inout [UInt8]) {
        appendError("Can't open \(path).", to: &out)
    }
}
