#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationWire
import Testing

/// gpsd prints numbers with C's `printf("%.Nf")`; ours must give the same text. The reference is glibc's
/// `snprintf` itself, on the values the captures produce and on ties and negative zeros.
@Suite("gpsd number formats against glibc printf")
struct PrintfDecimalTests {
    static func c(_ value: Double, _ decimals: Int) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        _ = withVaList([value]) { vsnprintf(&buffer, 64, "%.\(decimals)f", $0) }
        return String(cString: buffer)
    }

    static func ours(_ value: Double, _ decimals: Int) -> String {
        var fix = Fix(mode: .threeDimensional, latitude: value, longitude: 0)
        fix.quality = .gps
        var out: [UInt8] = []
        // lat is printed %.9f; other precisions through SKY's DOPs (%.2f) and the satellites' el (%.1f).
        switch decimals {
        case 9:
            GpsdReports.appendTPV(fix, estimates: GpsdEstimates(), device: nil, to: &out)
            let text = String(decoding: out, as: UTF8.self)
            return Self.member("lat", in: text)
        case 2:
            GpsdReports.appendSKY(Fix(), dop: GpsdDOP(xdop: value), device: nil, to: &out)
            let text = String(decoding: out, as: UTF8.self)
            return Self.member("xdop", in: text)
        default:
            var sky = Fix()
            sky.satellites = [Satellite(prn: 1, elevation: value)]
            GpsdReports.appendSKY(sky, dop: GpsdDOP(), device: nil, to: &out)
            let text = String(decoding: out, as: UTF8.self)
            return Self.member("el", in: text)
        }
    }

    /// The printed value of member `name` in a JSON line.
    static func member(_ name: String, in text: String) -> String {
        let parts = text.split(separator: "\"\(name)\":", maxSplits: 1)
        guard parts.count == 2 else { return "" }
        return String(parts[1].prefix { $0 != "," && $0 != "}" })
    }

    static let values: [Double] = [0, -0.0, 0.125, 0.375, 2.5, -2.5, 0.005, 0.015, 1.005, 44.068826440, -121.314475755,
                                   5.7, 1.2 * 4.75, 0.94999999, 19.165, 1e-12, -1e-12, 123456.789, 89.9999999995,
                                   -27.2108666666667, 153.052328333333, 0.05, 0.25, 0.35, 1.45]

    @Test("values print as printf prints them", arguments: values)
    func matchesPrintf(value: Double) {
        for decimals in [9, 2, 1] {
            #expect(Self.ours(value, decimals) == Self.c(value, decimals), "\(value) %.\(decimals)f")
        }
    }

    @Test("random values print as printf prints them")
    func randomValues() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            let value = Double.random(in: -1000...1000, using: &generator)
            let rounded = (value * 1000).rounded() / 1000 + [0, 0.0005, -0.0005, 0.05][Int.random(in: 0..<4)]
            for decimals in [9, 2, 1] {
                #expect(Self.ours(rounded, decimals) == Self.c(rounded, decimals), "\(rounded) %.\(decimals)f")
            }
        }
    }
}
