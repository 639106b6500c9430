import LocationCore

extension ServerMessage {
    /// `SKY`: the satellites in view and the DOPs, after each `TPV` to a client that asked for them (`WATCH`
    /// `satellites`) and sees full accuracy (docs/PROTOCOL.md "SKY"; gpsd_json(5) SKY, with the satellites
    /// numbered as the receiver numbers them within their system).
    public struct Sky: Equatable, Sendable {
        /// The receiver it came from (`device`).
        public var device: String?
        /// The fix time, UTC (`time`).
        public var time: UTCTime?
        /// `hdop`, `vdop`, `pdop`, `tdop`, `gdop`, dimensionless.
        public var dop: DilutionOfPrecision
        /// Satellites in view (`nSat`).
        public var visible: Int?
        /// Satellites listed as used in the fix (`uSat`).
        public var used: Int?
        /// Each satellite (`satellites`): `PRN` within its system `gnssid` (0 GPS, 1 SBAS, 2 Galileo, 3 BeiDou,
        /// 5 QZSS, 6 GLONASS, 7 NavIC), `el`/`az` degrees, `ss` dB-Hz, `used`, `sigid` (NMEA 4.10+ signal id).
        public var satellites: [Satellite]

        /// Makes the value; each parameter is the property of the same name (units there).
        public init(device: String? = nil, time: UTCTime? = nil, dop: DilutionOfPrecision = DilutionOfPrecision(),
                    visible: Int? = nil, used: Int? = nil, satellites: [Satellite] = []) {
            self.device = device
            self.time = time
            self.dop = dop
            self.visible = visible
            self.used = used
            self.satellites = satellites
        }

        /// Appends the line, as `GPSDEncoder.appendSKY` writes it for the daemon.
        func append(to out: inout [UInt8]) {
            var encoder = GPSDEncoder()
            encoder.appendSKY(Fix(device: device, time: time, satellitesUsed: used, satellitesVisible: visible,
                                  dop: dop, satellites: satellites), to: &out)
        }

        init(_ m: MemberReader) throws(ServerMessageError) {
            let dop = DilutionOfPrecision(horizontal: try m.number("hdop"), vertical: try m.number("vdop"),
                                          position: try m.number("pdop"), time: try m.number("tdop"),
                                          geometric: try m.number("gdop"))
            let satellites = try m.objects("satellites").map { s throws(ServerMessageError) in
                Satellite(prn: try s.required(s.integer("PRN"), "PRN"),
                          constellation: try s.integer("gnssid").flatMap(Constellation.init(rawValue:)),
                          elevation: try s.number("el"), azimuth: try s.number("az"), signalToNoise: try s.number("ss"),
                          used: try s.bool("used") ?? false, signalID: try s.integer("sigid"))
            }
            self.init(device: try m.string("device"), time: try m.time("time"), dop: dop, visible: try m.integer("nSat"),
                      used: try m.integer("uSat"), satellites: satellites)
        }
    }
}
