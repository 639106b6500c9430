/// Converting gpsd's error estimates (about 95 % confidence) to the 68 % figures of Core Location and Android.
///
/// gpsd's `eph`/`epv` (and the native front's, which are gpsd's) are DOP × UERE with UERE constants stated at
/// 95 % confidence (gpsd `libgpsd_core.c` `gpsd_error_model()`: "meters, 95% confidence"), or a receiver's 1σ
/// GST figures doubled to match. Android's `Location.getAccuracy()` is the radius of 68 % confidence, and its
/// vertical accuracy the 68 % interval; Core Location's `horizontalAccuracy` is used the same way.
///
/// Assuming normally distributed errors (the model behind gpsd's UERE): horizontally a circular bivariate
/// normal, where the radius holding probability p is σ·√(−2 ln(1−p)), so r68/r95 = √(−2 ln 0.32)/√(−2 ln 0.05)
/// = 1.50959/2.44775 = 0.61673; vertically a normal, where the two-sided interval holding p is z_p·σ, so
/// z68/z95 = 0.99446/1.95996 = 0.50739.
public enum ConfidenceLevel {
    /// Multiplies a ~95 % horizontal radius (TPV `eph`) into a 68 % radius.
    public static let horizontal68Per95 = 0.61673
    /// Multiplies a ~95 % vertical error (TPV `epv`) into a 68 % one.
    public static let vertical68Per95 = 0.50739

    /// The 68 % horizontal radius for a TPV's `eph`, metres; a reduced-accuracy TPV's `eph` is already the
    /// bound the daemon guarantees (at least the reduction grid), so it is kept.
    /// - Parameters:
    ///   - eph: TPV `eph`, metres (gpsd_json(5) TPV.eph, ~95 %).
    ///   - accuracy: TPV `accuracy`; nil when the TPV did not say.
    public static func horizontalAccuracy(eph: Double?, accuracy: AccuracyAuthorization?) -> Double? {
        guard let eph else { return nil }
        return accuracy == .reduced ? eph : eph * horizontal68Per95
    }

    /// The 68 % vertical error for a TPV's `epv`, metres (gpsd_json(5) TPV.epv, ~95 %).
    public static func verticalAccuracy(epv: Double?) -> Double? {
        epv.map { $0 * vertical68Per95 }
    }
}
