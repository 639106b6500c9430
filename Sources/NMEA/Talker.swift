import LocationCore

/// The two-letter talker identifier that starts a sentence's address (`GP` in `$GPGGA`).
/// Source: NMEA 0183 v4.11 Table 6 "Talker identifier mnemonics".
public struct Talker: Hashable, Sendable, CustomStringConvertible {
    /// The two ASCII letters packed big-endian.
    public let rawValue: UInt16

    public init(_ first: UInt8, _ second: UInt8) { rawValue = UInt16(first) << 8 | UInt16(second) }

    /// Creates a talker from two ASCII letters, e.g. `Talker("GP")`.
    public init(_ text: StaticString) {
        precondition(text.utf8CodeUnitCount == 2, "a talker id has two letters")
        self.init(text.utf8Start[0], text.utf8Start[1])
    }

    public var description: String {
        String(decoding: [UInt8(rawValue >> 8), UInt8(rawValue & 0xFF)], as: UTF8.self)
    }

    public static let gps = Talker("GP")
    public static let glonass = Talker("GL")
    public static let galileo = Talker("GA")
    public static let beidou = Talker("GB")
    public static let beidouLegacy = Talker("BD")
    public static let qzss = Talker("GQ")
    public static let qzssLegacy = Talker("QZ")
    public static let navic = Talker("GI")
    /// Combined solution from several constellations.
    public static let multiConstellation = Talker("GN")

    /// The constellation a talker speaks for; nil for combined (`GN`) and non-GNSS talkers.
    public var constellation: Constellation? {
        switch self {
        case .gps: return .gps
        case .glonass: return .glonass
        case .galileo: return .galileo
        case .beidou, .beidouLegacy: return .beidou
        case .qzss, .qzssLegacy: return .qzss
        case .navic: return .navic
        default: return nil
        }
    }
}
