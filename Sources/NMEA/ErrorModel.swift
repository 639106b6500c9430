import LocationCore

/// Error estimates from dilutions of precision, as gpsd computes them when a receiver reports none.
///
/// gpsd multiplies each DOP by a user equivalent range error (UERE) for 95 % confidence; these are its
/// constants (gpsd `libgpsd_core.c`, `gpsd_error_model()`, `H_UERE_*`, `V_UERE_*`, `P_UERE_*`).
/// With GST present we use the receiver's own 1σ figures instead (see `FixAssembler`).
public enum UERE {
    /// Horizontal UERE for one axis (epx, epy), metres: 15 without, 3.75 with differential corrections.
    public static func horizontal(differential: Bool) -> Double { differential ? 3.75 : 15.0 }
    /// Vertical UERE (epv), metres: 23 without, 5.75 with differential corrections.
    public static func vertical(differential: Bool) -> Double { differential ? 5.75 : 23.0 }
    /// Position UERE (eph = HDOP × this), metres: 19 without, 4.75 with differential corrections.
    public static func position(differential: Bool) -> Double { differential ? 4.75 : 19.0 }
}
