/// One request of gpsd's protocol, as a gpsd 3.22 client sends it (gpsd_json(5) "Commands").
public enum GpsdRequest: Hashable, Sendable {
    /// `?VERSION;`: answer with `VERSION`.
    case version
    /// `?DEVICES;`: answer with `DEVICES`.
    case devices
    /// `?DEVICE;` (nil: report the device) or `?DEVICE={…};` (a settings change). A read-only gpsd answers a
    /// change to a known device with the `DEVICE` object, unchanged; one naming an unknown path with `ERROR`
    /// "Can't open PATH." (`GpsdResponses.cannotOpen`).
    case device(GpsdDeviceSettings?)
    /// `?WATCH;` (nil: report the settings) or `?WATCH={…};` (change them): answer `DEVICES` and `WATCH`.
    case watch(GpsdWatchChange?)
    /// `?POLL;`: answer with `POLL`.
    case poll
    /// A malformed `?WATCH=` or `?DEVICE=` object: answer `ERROR` with `GpsdResponses.invalid(_:reason:)`;
    /// `WATCH` then also reports `DEVICES` and `WATCH`, as gpsd does.
    case invalid(command: String, reason: String)
    /// Anything else starting with `?`: answer `ERROR` "Unrecognized request '…'" quoting `text` (the rest of the
    /// input, which gpsd does not read further; at most `GpsdRequestParser.unrecognizedQuoteLimit` bytes of it).
    case unrecognized(text: String)
}

/// The members of a `?WATCH={…}` object (gpsd_json(5) WATCH; gpsd 3.22 `libgps/libgps_json.c`
/// `json_watch_read()`). nil: not given. A value of the wrong type reads as false (booleans) or 0 (`raw`), as in
/// gpsd.
public struct GpsdWatchChange: Hashable, Sendable {
    public var enable: Bool?, json: Bool?, nmea: Bool?, raw: Int?, scaled: Bool?, split24: Bool?, pps: Bool?
    public var timing: Bool?
    /// Only this device path, when given.
    public var device: String?
    /// `remote` (a remote gpsd's URL): read and ignored, as gpsd 3.22 ignores it for watchers.
    public var remote: String?

    public init(enable: Bool? = nil, json: Bool? = nil, nmea: Bool? = nil, raw: Int? = nil, scaled: Bool? = nil,
                split24: Bool? = nil, pps: Bool? = nil, timing: Bool? = nil, device: String? = nil,
                remote: String? = nil) {
        self.enable = enable
        self.json = json
        self.nmea = nmea
        self.raw = raw
        self.scaled = scaled
        self.split24 = split24
        self.pps = pps
        self.timing = timing
        self.device = device
        self.remote = remote
    }
}

/// A subscriber's watch settings (gpsd's `struct gps_policy_t`), as the `WATCH` echo reports them.
public struct GpsdWatchPolicy: Hashable, Sendable {
    /// Streaming on (WATCH.enable).
    public var enable = false
    /// JSON reports (TPV, SKY).
    public var json = false
    /// NMEA sentences.
    public var nmea = false
    /// Raw mode: 0 off, 1 receiver's text as is, 2 super-raw.
    public var raw = 0
    public var scaled = false
    public var timing = false
    public var split24 = false
    public var pps = false
    /// Only this device, when set.
    public var device: String?

    public init() {}

    /// The settings after `change`, as gpsd 3.22 applies a `?WATCH={…}`: `enable`, `json`, `nmea` and `raw`
    /// keep their value unless given; `scaled`, `timing`, `split24`, `pps` and `device` return to their
    /// defaults (false, none) unless given (observed on gpsd 3.22; the attribute table of `json_watch_read()`).
    public func applying(_ change: GpsdWatchChange) -> GpsdWatchPolicy {
        var p = self
        if let v = change.enable { p.enable = v }
        if let v = change.json { p.json = v }
        if let v = change.nmea { p.nmea = v }
        if let v = change.raw { p.raw = v }
        p.scaled = change.scaled ?? false
        p.timing = change.timing ?? false
        p.split24 = change.split24 ?? false
        p.pps = change.pps ?? false
        p.device = change.device.flatMap { $0.isEmpty ? nil : $0 }
        return p
    }
}

/// The members of a `?DEVICE={…}` object (gpsd_json(5) DEVICE): which device, and the settings asked for.
public struct GpsdDeviceSettings: Hashable, Sendable {
    /// The device path, when given.
    public var path: String?
    /// The other members as given (`bps`, `parity`, `stopbits`, `native`, `cycle`, …); a read-only server
    /// applies none of them.
    public var members: [String: JSONValue]

    public init(path: String? = nil, members: [String: JSONValue] = [:]) {
        self.path = path
        self.members = members
    }
}

/// Splits what a gpsd client sent into requests, as gpsd 3.22 reads one client read (`gpsd.c`
/// `handle_gpsd_request()`): input not starting with `?` is ignored; requests follow each other, each ending in
/// `;` (optional after a JSON object), with whitespace (CR, LF) between them skipped; names are case-sensitive;
/// an unknown request ends the parse, the rest of the input quoted in the error.
public enum GpsdRequestParser {
    /// The most bytes of input an `unrecognized` request quotes: escaped (up to 18 bytes a byte, for invalid
    /// UTF-8), the ERROR line stays within gpsd's 4096-byte reply.
    public static let unrecognizedQuoteLimit = 200

    /// The longest device path gpsd keeps, in bytes. gpsd 3.22 reads `DEVICE.path` and `WATCH.device`/`remote` into
    /// buffers of `GPS_PATH_MAX` (128) bytes: a string of 128 bytes is cut to 127, a longer one is refused with
    /// microjson's "string value too long", and the input from that member on is answered as an unrecognized
    /// request (measured on gpsd 3.22). So an error never quotes more of a path than that.
    public static let pathLimit = 127

    /// The requests in `input`, in order.
    public static func parse(_ input: [UInt8]) -> [GpsdRequest] {
        var requests: [GpsdRequest] = []
        guard input.first == UInt8(ascii: "?") else { return requests }
        var i = 0
        while i < input.count {
            if isSpace(input[i]) { i += 1; continue }
            let rest = input[i...]
            if rest.starts(with: Array("?DEVICES;".utf8)) {
                requests.append(.devices)
                i += 9
            } else if let after = command("?WATCH", rest) {
                i = after
                if input[i] == UInt8(ascii: ";") {
                    requests.append(.watch(nil))
                    i += 1
                } else {
                    let (result, end) = object(input, from: i + 1)
                    let start = i + 1
                    i = end
                    if case .success(let members) = result, let at = Self.tooLong(members, ["device", "remote"], in: input[start..<end]) {
                        requests.append(.invalid(command: "WATCH", reason: "string value too long"))
                        requests.append(Self.unrecognized(input, from: at))
                        break
                    }
                    switch result {
                    case .success(let members): requests.append(.watch(watchChange(members)))
                    case .failure(let reason): requests.append(.invalid(command: "WATCH", reason: reason.text))
                    }
                }
            } else if let after = command("?DEVICE", rest) {
                i = after
                if input[i] == UInt8(ascii: ";") {
                    requests.append(.device(nil))
                    i += 1
                } else {
                    let (result, end) = object(input, from: i + 1)
                    let start = i + 1
                    i = end
                    if case .success(let members) = result, let at = Self.tooLong(members, ["path"], in: input[start..<end]) {
                        requests.append(.invalid(command: "DEVICE", reason: "string value too long"))
                        requests.append(Self.unrecognized(input, from: at))
                        break
                    }
                    switch result {
                    case .success(let members):
                        var m = members
                        var path: String?
                        if case .string(let p)? = m.removeValue(forKey: "path") { path = Self.cut(p) }
                        requests.append(.device(GpsdDeviceSettings(path: path, members: m)))
                    case .failure(let reason): requests.append(.invalid(command: "DEVICE", reason: reason.text))
                    }
                }
            } else if rest.starts(with: Array("?POLL;".utf8)) {
                requests.append(.poll)
                i += 6
            } else if rest.starts(with: Array("?VERSION;".utf8)) {
                requests.append(.version)
                i += 9
            } else {
                requests.append(unrecognized(input, from: i))
                break
            }
        }
        return requests
    }

    /// The rest of `input` from `start`, as an unrecognized request. At most `unrecognizedQuoteLimit` bytes are
    /// quoted: gpsd's reply to a read is at most 4096 bytes (gpsd 3.22 `GPS_JSON_RESPONSE_MAX`), and a 60 KB tail of
    /// invalid UTF-8, escaped, was 1 MB out.
    private static func unrecognized(_ input: [UInt8], from start: Int) -> GpsdRequest {
        var end = input.count
        while end > start && isSpace(input[end - 1]) { end -= 1 }
        end = min(end, start + Self.unrecognizedQuoteLimit)
        return .unrecognized(text: String(decoding: input[start..<max(start, end)], as: UTF8.self))
    }

    /// Where, in `object`'s bytes, the first member of `keys` longer than gpsd's path buffer starts (its key's
    /// opening quote), or nil when every one fits (`pathLimit` + 1 bytes: a 128-byte string is cut, not refused).
    private static func tooLong(_ members: [String: JSONValue], _ keys: [String], in object: ArraySlice<UInt8>) -> Int? {
        for key in keys {
            guard case .string(let s)? = members[key], s.utf8.count > pathLimit + 1 else { continue }
            let quoted = Array("\"\(key)\"".utf8)
            var k = object.startIndex
            while k + quoted.count <= object.endIndex {
                if object[k..<k + quoted.count].elementsEqual(quoted) { return k }
                k += 1
            }
            return object.startIndex
        }
        return nil
    }

    /// A path as gpsd keeps it: at most `pathLimit` bytes.
    private static func cut(_ path: String) -> String {
        path.utf8.count > pathLimit ? String(decoding: path.utf8.prefix(pathLimit), as: UTF8.self) : path
    }

    private static func isSpace(_ b: UInt8) -> Bool { b == 32 || (b >= 9 && b <= 13) }

    /// The index after `name` when `rest` starts with it followed by `;` or `=`.
    private static func command(_ name: String, _ rest: ArraySlice<UInt8>) -> Int? {
        let n = Array(name.utf8)
        guard rest.starts(with: n), rest.count > n.count else { return nil }
        let next = rest[rest.startIndex + n.count]
        return next == UInt8(ascii: ";") || next == UInt8(ascii: "=") ? rest.startIndex + n.count : nil
    }

    /// Reads the JSON object starting at `start` (after `=`): its members and the index after it (and after a
    /// following `;`), or gpsd's error text and the index where reading stopped, as gpsd's `json_read_object()`
    /// reports them (`json_error_string()`).
    static func object(_ input: [UInt8], from start: Int) -> (Result<[String: JSONValue], Reason>, Int) {
        var i = start
        while i < input.count && isSpace(input[i]) { i += 1 }
        guard i < input.count, input[i] == UInt8(ascii: "{") else {
            return (.failure(Reason("non-whitespace when expecting object start")), i < input.count && input[i] == UInt8(ascii: ";") ? i + 1 : i)
        }
        var j = i + 1
        while j < input.count && isSpace(input[j]) { j += 1 }
        if j < input.count, input[j] != UInt8(ascii: "\""), input[j] != UInt8(ascii: "}") {
            return (.failure(Reason("non-whitespace when expecting attribute start")), j)
        }
        // Find the end of the object: the brace that closes it, outside strings.
        var depth = 0, inString = false, escaped = false, end: Int?
        var k = i
        while k < input.count {
            let b = input[k]
            if inString {
                if escaped { escaped = false } else if b == UInt8(ascii: "\\") { escaped = true } else if b == UInt8(ascii: "\"") { inString = false }
            } else if b == UInt8(ascii: "\"") {
                inString = true
            } else if b == UInt8(ascii: "{") || b == UInt8(ascii: "[") {
                depth += 1
            } else if b == UInt8(ascii: "}") || b == UInt8(ascii: "]") {
                depth -= 1
                if depth == 0 { end = k + 1; break }
            }
            k += 1
        }
        guard let end, case .object(let members)? = try? JSONReader.read(Array(input[i..<end])) else {
            return (.failure(Reason("other data conversion error")), input.count)
        }
        return (.success(members), end < input.count && input[end] == UInt8(ascii: ";") ? end + 1 : end)
    }

    /// gpsd's JSON error text, as an `Error` for `Result`.
    struct Reason: Error, Hashable { var text: String; init(_ text: String) { self.text = text } }

    private static func watchChange(_ m: [String: JSONValue]) -> GpsdWatchChange {
        func bool(_ key: String) -> Bool? {
            guard let v = m[key] else { return nil }
            if case .bool(let b) = v { return b }
            return false
        }
        var change = GpsdWatchChange()
        change.enable = bool("enable")
        change.json = bool("json")
        change.nmea = bool("nmea")
        change.scaled = bool("scaled")
        change.split24 = bool("split24")
        change.pps = bool("pps")
        change.timing = bool("timing")
        if let v = m["raw"] {
            if case .number(let text) = v, let n = Int(text) { change.raw = n } else { change.raw = 0 }
        }
        if case .string(let s)? = m["device"] { change.device = cut(s) }
        if case .string(let s)? = m["remote"] { change.remote = cut(s) }
        return change
    }
}
