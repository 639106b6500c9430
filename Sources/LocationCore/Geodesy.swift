#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Distances and bearings on the WGS84 ellipsoid.
public enum Geodesy {
    /// WGS84 semi-major axis, metres (NIMA TR8350.2).
    public static let semiMajorAxis = 6_378_137.0
    /// WGS84 flattening.
    public static let flattening = 1 / 298.257_223_563

    /// The largest radius of curvature of the WGS 84 ellipsoid, a/√(1−e²) ≈ 6,399,593.6 m (the polar
    /// radius of curvature; a and f from NIMA TR8350.2 §3), rounded up.
    public static let largestCurvatureRadius = 6_399_594.0

    /// A length no geodesic between the two points exceeds, in metres, without trigonometry: the path along
    /// the first point's meridian to the second's latitude, then along that parallel, is at most
    /// R·|Δφ| + R·|Δλ| (R the largest radius of curvature, angles in radians, Δλ the shorter way round),
    /// and the geodesic is no longer than any path. For checks such as "more than 1000 m/s": most pairs of
    /// fixes are settled by it without `distance`'s iterations.
    /// - Parameters: degrees (WGS 84).
    public static func distanceUpperBound(latitude1: Double, longitude1: Double, latitude2: Double, longitude2: Double) -> Double {
        let dLatitude = abs(latitude2 - latitude1)
        var dLongitude = abs(longitude2 - longitude1).truncatingRemainder(dividingBy: 360)
        if dLongitude > 180 { dLongitude = 360 - dLongitude }
        return largestCurvatureRadius * (dLatitude + dLongitude) * (Double.pi / 180)
    }

    /// Geodesic distance between two points, metres, by Vincenty's inverse formula (T. Vincenty, 1975,
    /// "Direct and inverse solutions of geodesics on the ellipsoid"), accurate to well under a millimetre;
    /// for nearly antipodal points, where it does not converge, the spherical distance.
    /// - Parameters: latitudes and longitudes in degrees WGS84.
    public static func distance(latitude1: Double, longitude1: Double, latitude2: Double, longitude2: Double) -> Double {
        let a = semiMajorAxis, f = flattening, b = a * (1 - f)
        let rad = Double.pi / 180
        let L = (longitude2 - longitude1) * rad
        let U1 = atan((1 - f) * tan(latitude1 * rad))
        let U2 = atan((1 - f) * tan(latitude2 * rad))
        let sinU1 = sin(U1), cosU1 = cos(U1), sinU2 = sin(U2), cosU2 = cos(U2)
        var lambda = L
        for _ in 0..<100 {
            let sinLambda = sin(lambda), cosLambda = cos(lambda)
            let t1 = cosU2 * sinLambda
            let t2 = cosU1 * sinU2 - sinU1 * cosU2 * cosLambda
            let sinSigma = (t1 * t1 + t2 * t2).squareRoot()
            if sinSigma == 0 { return 0 }
            let cosSigma = sinU1 * sinU2 + cosU1 * cosU2 * cosLambda
            let sigma = atan2(sinSigma, cosSigma)
            let sinAlpha = cosU1 * cosU2 * sinLambda / sinSigma
            let cos2Alpha = 1 - sinAlpha * sinAlpha
            let cos2SigmaM = cos2Alpha != 0 ? cosSigma - 2 * sinU1 * sinU2 / cos2Alpha : 0
            let C = f / 16 * cos2Alpha * (4 + f * (4 - 3 * cos2Alpha))
            let previous = lambda
            lambda = L + (1 - C) * f * sinAlpha
                * (sigma + C * sinSigma * (cos2SigmaM + C * cosSigma * (-1 + 2 * cos2SigmaM * cos2SigmaM)))
            if abs(lambda - previous) < 1e-12 {
                let u2 = cos2Alpha * (a * a - b * b) / (b * b)
                let A = 1 + u2 / 16384 * (4096 + u2 * (-768 + u2 * (320 - 175 * u2)))
                let B = u2 / 1024 * (256 + u2 * (-128 + u2 * (74 - 47 * u2)))
                let deltaSigma = B * sinSigma * (cos2SigmaM + B / 4 * (cosSigma * (-1 + 2 * cos2SigmaM * cos2SigmaM)
                    - B / 6 * cos2SigmaM * (-3 + 4 * sinSigma * sinSigma) * (-3 + 4 * cos2SigmaM * cos2SigmaM)))
                return b * A * (sigma - deltaSigma)
            }
        }
        // Haversine on the mean radius.
        let dLat = (latitude2 - latitude1) * rad
        let h = sin(dLat / 2) * sin(dLat / 2)
            + cos(latitude1 * rad) * cos(latitude2 * rad) * sin(L / 2) * sin(L / 2)
        return 2 * 6_371_008.8 * asin(min(1, h.squareRoot()))
    }
}
