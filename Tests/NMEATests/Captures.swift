import FoundationEssentials
import LocationCore
import NMEA

/// The shared real-receiver captures (gpsd's regression suite) and gpsd's decoding of them.
enum Captures {
    /// `../shared/nmea-logs` from the package root, or `$LOCATIOND_SHARED/nmea-logs`.
    static let directory: String = {
        if let shared = ProcessInfo.processInfo.environment["LOCATIOND_SHARED"] { return shared + "/nmea-logs" }
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path + "/../shared/nmea-logs"
    }()

    /// Names of every `.log` capture, sorted.
    static let names: [String] = {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.filter { $0.hasSuffix(".log") }.sorted()
    }()

    static func bytes(_ name: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: directory + "/" + name) else {
            throw CaptureError.unreadable(name)
        }
        return [UInt8](data)
    }

    /// Decodes a capture the way `locationctl decode` does: comment lines dropped, fed in `chunks`.
    static func decode(_ bytes: [UInt8], chunkSizes: (Int) -> Int = { _ in 1 << 16 }) -> [Fix] {
        var decoder = NMEADecoder()
        var filter = CaptureFilter()
        var filtered: [UInt8] = []
        var fixes: [Fix] = []
        var offset = 0
        var call = 0
        bytes.withUnsafeBufferPointer { all in
            while offset < all.count {
                let n = min(max(1, chunkSizes(call)), all.count - offset)
                call += 1
                filter.filter(UnsafeBufferPointer(rebasing: all[offset..<(offset + n)]), into: &filtered)
                decoder.decode(filtered) { fixes.append($0) }
                offset += n
            }
        }
        decoder.finish { fixes.append($0) }
        return fixes
    }
}

enum CaptureError: Error { case unreadable(String) }

/// One of gpsd's TPV objects from a `.chk` file.
struct ReferenceTPV: Decodable {
    var `class`: String
    var mode: Int?
    var time: String?
    var lat: Double?
    var lon: Double?
    var altMSL: Double?
    var altHAE: Double?
    var speed: Double?
    var track: Double?

    /// For each time, gpsd's last TPV that carries lat/lon (the shared README's rule).
    static func load(_ name: String) throws -> [String: ReferenceTPV] {
        let data = try Captures.bytes(name + ".chk")
        var result: [String: ReferenceTPV] = [:]
        let decoder = JSONDecoder()
        for line in data.split(separator: 10) where line.first == UInt8(ascii: "{") {
            guard let tpv = try? decoder.decode(ReferenceTPV.self, from: Data(line)), tpv.class == "TPV",
                  let time = tpv.time, tpv.lat != nil, tpv.lon != nil else { continue }
            result[time] = tpv
        }
        return result
    }
}
