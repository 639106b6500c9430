/// Fixed-point decimal text as C's `printf("%.Nf")` prints it (glibc): the exact binary value rounded to N
/// decimals, ties to even, trailing zeros kept, `-` for negative values including those that round to zero.
///
/// gpsd prints every number this way (gpsd 3.22 `gpsd_json.c`: `%.9f` lat/lon, `%.4f` altitudes and track,
/// `%.3f` errors and speed, `%.2f` DOPs …), so the gpsd front must too, byte for byte.
enum PrintfDecimal {
    private static let powers: [Double] = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]

    /// Appends `value` with `decimals` (0...9) places. Non-finite values are written as `nan`/`inf` as C does
    /// (gpsd never prints them: it tests `isfinite` first).
    static func append(_ value: Double, decimals: Int, to out: inout [UInt8]) {
        guard value.isFinite else {
            out.append(contentsOf: value.isNaN ? Array("nan".utf8) : Array((value < 0 ? "-inf" : "inf").utf8))
            return
        }
        let negative = value.sign == .minus
        let magnitude = abs(value)
        let scale = powers[decimals]
        let product = magnitude * scale
        guard product < 9.0e15 else {
            // Beyond 2^53 every double is a whole number: print its integer digits, then the zeros.
            appendLarge(magnitude, negative: negative, decimals: decimals, to: &out)
            return
        }
        // product + residual is magnitude × 10^decimals exactly (10^decimals ≤ 1e9 is exact, FMA is exact).
        let residual = (-product).addingProduct(magnitude, scale)
        let floor = product.rounded(.down)
        let fraction = product - floor  // exact below 2^52
        var units = UInt64(floor)
        if fraction > 0.5 || (fraction == 0.5 && (residual > 0 || (residual == 0 && units & 1 == 1))) {
            units += 1
        }
        if negative { out.append(UInt8(ascii: "-")) }
        let divisor = UInt64(scale)
        appendDigits(units / divisor, minimumCount: 1, to: &out)
        if decimals > 0 {
            out.append(UInt8(ascii: "."))
            appendDigits(units % divisor, minimumCount: decimals, to: &out)
        }
    }

    /// Appends `value`'s decimal digits, left-padded with zeros to `minimumCount`.
    /// Written in place, last digit first (no temporary array: every number of every report comes here).
    static func appendDigits(_ value: UInt64, minimumCount: Int, to out: inout [UInt8]) {
        var count = 1
        var v = value
        while v >= 10 {
            v /= 10
            count += 1
        }
        count = max(count, minimumCount)
        out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: count))
        var i = out.count - 1
        v = value
        while v > 0 {
            out[i] = UInt8(truncatingIfNeeded: 48 + v % 10)
            v /= 10
            i -= 1
        }
    }

    private static func appendLarge(_ magnitude: Double, negative: Bool, decimals: Int, to out: inout [UInt8]) {
        if negative { out.append(UInt8(ascii: "-")) }
        if magnitude < 1.8e19 {
            appendDigits(UInt64(magnitude), minimumCount: 1, to: &out)
        } else {
            out.append(contentsOf: Array("\(magnitude)".utf8))  // never in gpsd's output
        }
        if decimals > 0 {
            out.append(UInt8(ascii: "."))
            out.append(contentsOf: [UInt8](repeating: 48, count: decimals))
        }
    }
}
