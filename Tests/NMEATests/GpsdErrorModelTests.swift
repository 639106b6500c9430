import FoundationEssentials
import LocationCore
import LocationWire
import NMEA
import Testing

/// gpsd's error model (`GpsdErrorModel`) against gpsd's own figures in every shared capture's `.chk` file:
/// for each fix time, gpsd's last TPV with a position is the reference (the shared README's rule).
@Suite("gpsd error model against gpsd's .chk files")
struct GpsdErrorModelTests {
    /// The estimate fields compared, with gpsd's printed precision (gpsd 3.22 `json_tpv_dump()`: `%.3f` for
    /// epx/epy/epv/eph/sep, `%.2f` for eps/epc, `%.4f` for epd and magtrack).
    static let fields: [(name: String, precision: Double)] = [
        ("eph", 0.001), ("epv", 0.001), ("epx", 0.001), ("epy", 0.001), ("sep", 0.001), ("eps", 0.01),
        ("epc", 0.01), ("ept", 0.001), ("magtrack", 0.0001), ("magvar", 0.1),
    ]

    struct Tally {
        var agree = 0
        var total = 0
        var percent: Double { total == 0 ? 100 : 100 * Double(agree) / Double(total) }
    }

    static func value(_ e: GpsdEstimates, _ name: String) -> Double? {
        switch name {
        case "eph": return e.eph
        case "epv": return e.epv
        case "epx": return e.epx
        case "epy": return e.epy
        case "sep": return e.sep
        case "eps": return e.eps
        case "epc": return e.epc
        case "ept": return e.ept
        case "magtrack": return e.magneticTrack
        case "magvar": return e.magneticVariation
        default: return nil
        }
    }

    /// The estimate fields of one of gpsd's TPV objects.
    struct EstimatesTPV: Decodable {
        var time: String?
        var lat: Double?
        var eph: Double?, epv: Double?, epx: Double?, epy: Double?, sep: Double?, eps: Double?, epc: Double?
        var ept: Double?, magtrack: Double?, magvar: Double?

        func value(_ name: String) -> Double? {
            switch name {
            case "eph": return eph
            case "epv": return epv
            case "epx": return epx
            case "epy": return epy
            case "sep": return sep
            case "eps": return eps
            case "epc": return epc
            case "ept": return ept
            case "magtrack": return magtrack
            case "magvar": return magvar
            default: return nil
            }
        }
    }

    /// gpsd's last TPV with a position for each time.
    static func reference(_ name: String) throws -> [String: EstimatesTPV] {
        let data = try Captures.bytes(name + ".chk")
        var result: [String: EstimatesTPV] = [:]
        let decoder = JSONDecoder()
        for line in data.split(separator: 10) where line.starts(with: Array("{\"class\":\"TPV\"".utf8)) {
            guard let tpv = try? decoder.decode(EstimatesTPV.self, from: Data(line)), let time = tpv.time,
                  tpv.lat != nil else { continue }
            result[time] = tpv
        }
        return result
    }

    /// Per-field tallies over one capture; a field counts where gpsd printed it, and agrees when ours is
    /// present and equal within gpsd's printed precision.
    static func tally(_ name: String, into tallies: inout [String: Tally], misses: inout [String: [String]]) throws {
        let reference = try reference(name)
        guard !reference.isEmpty else { return }
        var model = GpsdErrorModel()
        var ours: [String: GpsdEstimates] = [:]
        for fix in Captures.decode(try Captures.bytes(name)) {
            let e = model.estimates(for: fix)
            if let time = fix.time, time.date != nil { ours[time.iso8601] = e }
        }
        for (time, ref) in reference {
            for (field, precision) in fields {
                guard let expected = ref.value(field) else { continue }
                tallies[field, default: Tally()].total += 1
                if let e = ours[time], let actual = value(e, field), abs(actual - expected) <= precision * 0.51 + 1e-9 {
                    tallies[field, default: Tally()].agree += 1
                } else if misses[field, default: []].count < 400 {
                    let actual = ours[time].flatMap { value($0, field) }
                    misses[field, default: []].append("\(name) \(time): gpsd \(expected), ours \(actual.map { "\($0)" } ?? "none")")
                }
            }
        }
    }

    @Test("each estimate agrees with gpsd's on at least the floor of epochs, over all captures")
    func agreement() throws {
        #expect(Captures.names.count >= 70, "captures not found in \(Captures.directory)")
        var tallies: [String: Tally] = [:]
        var misses: [String: [String]] = [:]
        for name in Captures.names { try Self.tally(name, into: &tallies, misses: &misses) }
        for (field, _) in Self.fields {
            let t = tallies[field, default: Tally()]
            print("gpsd agreement \(field): \(t.agree)/\(t.total) (\((t.percent * 10).rounded() / 10)%)")
        }
        if ProcessInfo.processInfo.environment["GPSD_AGREEMENT_MISSES"] != nil {
            for (field, lines) in misses.sorted(by: { $0.key < $1.key }) { for l in lines { print("miss \(field) \(l)") } }
        }
        for (field, floor) in Self.floors {
            #expect(tallies[field, default: Tally()].percent >= floor, "\(field) below \(floor)%")
        }
    }

    /// Agreement floors, percent of gpsd's epochs, per field (measured figures in docs/GPSD.md).
    /// Measured: eph 97.5, epv 84.2, epx/epy 39.3, sep 80.5, eps 37.8, epc 82.5, ept 100, magtrack 99.9, magvar 100 (docs/GPSD.md).
    /// magtrack was 86.7 while VTG's magnetic track was not kept (gpsd prints it rather than track + magvar).
    /// epx/epy/eps were 44.0/42.7 before the model followed gpsd 3.22 (the goldens, GpsdGoldenTests) on a used
    /// satellite without elevation and azimuth: 3.22 takes it at 0°, 0° and leaves out the DOPs of a geometry
    /// without a solution; the `.chk` files come from a later gpsd, which leaves such a satellite out and, there,
    /// kept the last solution's DOPs.
    static let floors: [(String, Double)] = [("eph", 97), ("epv", 83), ("epx", 39), ("epy", 39), ("sep", 79),
                                             ("eps", 37), ("epc", 81), ("ept", 100), ("magtrack", 99), ("magvar", 100)]
}
