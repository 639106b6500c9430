/// Geoid separation (height of the geoid above the WGS84 ellipsoid) for receivers that report altitude
/// above MSL but no separation.
///
/// The model is gpsd's: EGM2008 sampled on a 5° × 5° grid and interpolated bilinearly inside the cell that
/// holds the point (gpsd `wgs84_separation()`), so that our altHAE equals gpsd's on the same input.
public enum GeoidModel {
    /// Geoid separation N in metres at a point (altHAE = altMSL + N).
    /// - Parameters:
    ///   - latitude: degrees WGS84, −90…90.
    ///   - longitude: degrees WGS84, −180…180.
    /// - Returns: metres; the grid's accuracy is roughly a metre away from steep geoid gradients.
    public static func separation(latitude: Double, longitude: Double) -> Double {
        let columns = 73, rows = 37
        let lat = min(max(latitude, -90), 90)
        var lon = longitude
        if lon < -180 { lon += 360 }
        if lon > 180 { lon -= 360 }
        let row = min(Int(((lat + 90) / 5).rounded(.down)), rows - 1)
        let column = min(Int(((lon + 180) / 5).rounded(.down)), columns - 1)
        let row1 = min(row + 1, rows - 1), column1 = min(column + 1, columns - 1)
        let lat0 = Double(row * 5 - 90), lon0 = Double(column * 5 - 180)
        let grid = egm2008FiveDegreeCentimeters
        func at(_ r: Int, _ c: Int) -> Double { Double(grid[r * columns + c]) }
        // Bilinear interpolation between the cell's four corners.
        let fy = (lat - lat0) / 5, fx = (lon - lon0) / 5
        let south = at(row, column) + (at(row, column1) - at(row, column)) * fx
        let north = at(row1, column) + (at(row1, column1) - at(row1, column)) * fx
        return (south + (north - south) * fy) / 100
    }
}
