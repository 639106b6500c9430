import LocationCore
import LocationWire

/// The satellites a receiver sees and the DOPs of its fix: a `SKY` object (docs/PROTOCOL.md "SKY"), sent after
/// each location to a client that asked for satellites (`updates(satellites: true)`) and sees full accuracy.
public struct SatelliteView: Hashable, Sendable {
    /// Each satellite in view: its number within its system (`prn`, `constellation`), elevation and azimuth
    /// (degrees), signal-to-noise ratio (dB-Hz), and whether the fix used it (SKY `satellites`).
    public var satellites: [Satellite]
    /// Satellites in view (SKY `nSat`).
    public var visible: Int?
    /// Satellites used in the fix (SKY `uSat`: those listed with `used`).
    public var used: Int?
    /// Horizontal, vertical, position, time and geometric dilution of precision (SKY `hdop` … `gdop`).
    public var dop: DilutionOfPrecision
    /// The fix time, UTC (SKY `time`).
    public var timestamp: UTCTime?
    /// Name of the receiver (SKY `device`).
    public var device: String?
    /// The SKY object as the server sent it, one line without the newline; nil for values made in code.
    public var json: String?

    /// Makes the value; each parameter is the property of the same name.
    public init(satellites: [Satellite], visible: Int? = nil, used: Int? = nil, dop: DilutionOfPrecision = DilutionOfPrecision(),
                timestamp: UTCTime? = nil, device: String? = nil, json: String? = nil) {
        self.satellites = satellites
        self.visible = visible
        self.used = used
        self.dop = dop
        self.timestamp = timestamp
        self.device = device
        self.json = json
    }

    init(_ sky: ServerMessage.Sky, json: String?) {
        self.init(satellites: sky.satellites, visible: sky.visible, used: sky.used, dop: sky.dop, timestamp: sky.time,
                  device: sky.device, json: json)
    }
}
