import LocationCore
import NMEA
import TestSupport
import Testing

/// Our decoding of every shared capture compared with gpsd's, epoch by epoch (issue 2's acceptance test).
@Suite("Agreement with gpsd on real captures")
struct GpsdAgreementTests {
    /// Tolerances of the comparison: lat/lon ~1 cm, metres at gpsd's printed precision, speed the coarsest
    /// unit receivers print (0.1 knot), track 0.1°.
    static let tolerance = (angle: 1e-7, metres: 0.011, speed: 0.06, track: 0.1)

    struct Score {
        var agreeing = 0
        var references = 0
        var sameMode = 0
    }

    static func score(_ name: String) throws -> (Score, [String]) {
        let reference = try ReferenceTPV.load(name)
        var ours: [String: Fix] = [:]
        for fix in Captures.decode(try Captures.bytes(name)) {
            if let time = fix.time, time.date != nil { ours[time.iso8601] = fix }
        }
        var score = Score()
        var problems: [String] = []
        for (time, ref) in reference.sorted(by: { $0.key < $1.key }) {
            score.references += 1
            guard let fix = ours[time] else { problems.append("\(time): missing"); continue }
            var bad: [String] = []
            func check(_ field: String, _ expected: Double?, _ actual: Double?, _ tolerance: Double, circular: Bool = false) {
                guard let expected else { return }
                guard let actual else { bad.append("\(field) absent"); return }
                var difference = abs(expected - actual)
                if circular { difference = abs((expected - actual + 540).truncatingRemainder(dividingBy: 360) - 180) }
                if !(difference <= tolerance) { bad.append("\(field) \(actual) != \(expected)") }
            }
            if !fix.hasPosition { bad.append("no fix (mode \(fix.mode.rawValue))") }
            check("lat", ref.lat, fix.latitude, tolerance.angle)
            check("lon", ref.lon, fix.longitude, tolerance.angle)
            check("altMSL", ref.altMSL, fix.altitudeMSL, tolerance.metres)
            check("altHAE", ref.altHAE, fix.altitudeHAE, tolerance.metres)
            check("speed", ref.speed, fix.speed, tolerance.speed)
            check("track", ref.track, fix.track, tolerance.track, circular: true)
            if bad.isEmpty {
                score.agreeing += 1
                if ref.mode == fix.mode.rawValue { score.sameMode += 1 }
            } else {
                problems.append("\(time): " + bad.joined(separator: ", "))
            }
        }
        return (score, problems)
    }

    @Test("at least 99% of gpsd's fixes agree, over all captures")
    func overallAgreement() throws {
        #expect(Captures.names.count >= 70, "captures not found in \(Captures.directory)")
        var total = Score()
        for name in Captures.names {
            let (score, problems) = try Self.score(name)
            total.agreeing += score.agreeing
            total.references += score.references
            total.sameMode += score.sameMode
            let first = problems.first.map { " first: \($0)" } ?? ""
            print("agreement \(name): \(score.agreeing)/\(score.references), same 2D/3D \(score.sameMode)\(first)")
        }
        let percent = 100 * Double(total.agreeing) / Double(max(total.references, 1))
        print("agreement overall: \(total.agreeing)/\(total.references) epochs (\(percent)%), same 2D/3D mode as gpsd on \(total.sameMode)/\(total.agreeing)")
        #expect(total.references > 1500)
        #expect(percent >= 99.0)
    }

    @Test("logs with only AIS traffic yield no position", arguments: ["ais-18-27.log", "ais-nmea-type6-fid55.log", "ais-raw-messages.log", "ais_unpack_sixbit.log"])
    func aisOnly(name: String) throws {
        let fixes = Captures.decode(try Captures.bytes(name))
        #expect(fixes.allSatisfy { !$0.hasPosition && $0.latitude == nil })
    }

    @Test("the same output whole, byte by byte and in random chunks", arguments: Captures.names)
    func chunkingDoesNotMatter(name: String) throws {
        let bytes = try Captures.bytes(name)
        let whole = Captures.decode(bytes, chunkSizes: { _ in bytes.count })
        let byByte = Captures.decode(bytes, chunkSizes: { _ in 1 })
        var generator = SplitMix64(seed: UInt64(truncatingIfNeeded: name.utf8.reduce(0) { $0 &* 31 &+ Int($1) }))
        let random = Captures.decode(bytes, chunkSizes: { _ in Int(generator.next() % 97) + 1 })
        #expect(whole == byByte)
        #expect(whole == random)
    }
}
