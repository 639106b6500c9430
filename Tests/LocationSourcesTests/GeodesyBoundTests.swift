import LocationCore
import Testing

/// `Geodesy.distanceUpperBound`, the plausibility rules' short cut past Vincenty's iterations: it must
/// never be below the geodesic, or an impossible jump would pass unchecked.
@Suite("Geodesy: the distance bound")
struct GeodesyBoundTests {
    /// Pairs with their geodesic distances, metres, from outside this code.
    static let pairs: [(name: String, latitude1: Double, longitude1: Double, latitude2: Double, longitude2: Double, meters: Double)] = [
        // Vincenty's worked example as Geoscience Australia publishes it: Flinders Peak
        // (37°57′03.72030″ S, 144°25′29.52440″ E) to Buninyong (37°39′10.15610″ S, 143°55′35.38390″ E), 54,972.271 m.
        ("Flinders Peak to Buninyong", -(37 + 57.0 / 60 + 3.72030 / 3600), 144 + 25.0 / 60 + 29.52440 / 3600,
         -(37 + 39.0 / 60 + 10.15610 / 3600), 143 + 55.0 / 60 + 35.38390 / 3600, 54_972.271),
        // Along the equator the geodesic is the equator: a × Δλ, a = 6,378,137 m (WGS 84), Δλ = 0.2° across
        // the antimeridian (the shorter way round).
        ("0.2° of equator across 180°", 0, 179.9, 0, -179.9, 6_378_137 * 0.2 * Double.pi / 180),
        ("0.2° of equator at 0°", 0, -0.1, 0, 0.1, 6_378_137 * 0.2 * Double.pi / 180),
    ]

    @Test("the bound is never below the geodesic, and the geodesic is Vincenty's to the millimetre", arguments: pairs)
    func bound(_ pair: (name: String, latitude1: Double, longitude1: Double, latitude2: Double, longitude2: Double, meters: Double)) {
        let distance = Geodesy.distance(latitude1: pair.latitude1, longitude1: pair.longitude1,
                                        latitude2: pair.latitude2, longitude2: pair.longitude2)
        let bound = Geodesy.distanceUpperBound(latitude1: pair.latitude1, longitude1: pair.longitude1,
                                               latitude2: pair.latitude2, longitude2: pair.longitude2)
        #expect(abs(distance - pair.meters) < 0.001, "\(pair.name): \(distance) m")
        #expect(bound >= pair.meters, "\(pair.name): bound \(bound) m")
        // Loose (|Δφ| + |Δλ| at the largest radius) but not useless: the longitude difference is taken the short
        // way round (across 180° it is 0.2°, not 359.8°).
        #expect(bound < pair.meters * 2, "\(pair.name): bound \(bound) m")
    }

    @Test("over the pole and between random points the bound holds too")
    func holdsEverywhere() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let latitude1 = Double.random(in: -89.9...89.9, using: &generator)
            let longitude1 = Double.random(in: -180...180, using: &generator)
            let latitude2 = Double.random(in: -89.9...89.9, using: &generator)
            let longitude2 = Double.random(in: -180...180, using: &generator)
            let distance = Geodesy.distance(latitude1: latitude1, longitude1: longitude1, latitude2: latitude2, longitude2: longitude2)
            let bound = Geodesy.distanceUpperBound(latitude1: latitude1, longitude1: longitude1, latitude2: latitude2, longitude2: longitude2)
            #expect(bound >= distance, "(\(latitude1), \(longitude1)) to (\(latitude2), \(longitude2))")
        }
        #expect(Geodesy.distanceUpperBound(latitude1: 89.9, longitude1: 0, latitude2: 89.9, longitude2: 180)
                >= Geodesy.distance(latitude1: 89.9, longitude1: 0, latitude2: 89.9, longitude2: 180))
    }
}
