import LocationCore

/// Decodes one framed sentence (bytes from `$`/`!` up to, not including, `*`).
public enum SentenceParser {
    /// Decodes a sentence into its typed form.
    ///
    /// - Parameter bytes: one sentence as delivered by `SentenceFramer`.
    /// - Returns: the typed sentence, or `.ignored` for sentences recognised but not used (AIS, other
    ///   proprietary and standard sentences).
    /// - Throws: `SentenceError` when the address or a field does not follow the sentence's definition.
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(SentenceError) -> DecodedSentence {
        let n = bytes.count
        var addressEnd = 1
        while addressEnd < n && bytes[addressEnd] != UInt8(ascii: ",") { addressEnd += 1 }
        let addressLength = addressEnd - 1
        guard addressLength >= 2 else { throw .malformedAddress }
        for i in 1..<addressEnd {
            let c = bytes[i]
            guard (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z")) || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9"))
            else { throw .malformedAddress }
        }
        if bytes[0] == UInt8(ascii: "!") {
            // Encapsulated sentences (AIS VDM/VDO and the like): recognised, not ours to decode.
            return DecodedSentence(talker: nil, sentence: .ignored)
        }
        if bytes[1] == UInt8(ascii: "P") {
            return DecodedSentence(talker: nil, sentence: try parseProprietary(bytes, addressEnd: addressEnd))
        }
        guard addressLength == 5 else {
            if addressLength > 5 { return DecodedSentence(talker: nil, sentence: .ignored) }
            throw .malformedAddress
        }
        let talker = Talker(bytes[1], bytes[2])
        let code = UInt32(bytes[3]) << 16 | UInt32(bytes[4]) << 8 | UInt32(bytes[5])
        let start = addressEnd + 1
        func fields(_ name: StaticString) -> FieldCursor { FieldCursor(bytes, from: start, sentence: name) }
        // Each case returns the result directly: no intermediate `Sentence` to copy.
        switch code {
        case code3("GGA"): return DecodedSentence(talker: talker, sentence: .gga(try parseGGA(fields("GGA"))))
        case code3("RMC"): return DecodedSentence(talker: talker, sentence: .rmc(try parseRMC(fields("RMC"))))
        case code3("GLL"): return DecodedSentence(talker: talker, sentence: .gll(try parseGLL(fields("GLL"))))
        case code3("GSA"): return DecodedSentence(talker: talker, sentence: .gsa(try parseGSA(fields("GSA"))))
        case code3("GSV"): return DecodedSentence(talker: talker, sentence: .gsv(try parseGSV(fields("GSV"), talker: talker)))
        case code3("VTG"): return DecodedSentence(talker: talker, sentence: .vtg(try parseVTG(fields("VTG"))))
        case code3("GNS"): return DecodedSentence(talker: talker, sentence: .gns(try parseGNS(fields("GNS"))))
        case code3("GST"): return DecodedSentence(talker: talker, sentence: .gst(try parseGST(fields("GST"))))
        case code3("GBS"): return DecodedSentence(talker: talker, sentence: .gbs(try parseGBS(fields("GBS"))))
        case code3("ZDA"): return DecodedSentence(talker: talker, sentence: .zda(try parseZDA(fields("ZDA"))))
        case code3("HDT"): return DecodedSentence(talker: talker, sentence: .hdt(try parseHDT(fields("HDT"))))
        case code3("THS"): return DecodedSentence(talker: talker, sentence: .ths(try parseTHS(fields("THS"))))
        default: return DecodedSentence(talker: talker, sentence: .ignored)
        }
    }

    /// Parses a whole sentence given as text, checksum included or not (for tests and tools).
    public static func parse(_ text: String) throws(SentenceError) -> DecodedSentence {
        var bytes = Array(text.utf8)
        while let last = bytes.last, last == 10 || last == 13 { bytes.removeLast() }
        if bytes.count >= 3, bytes[bytes.count - 3] == UInt8(ascii: "*") { bytes.removeLast(3) }
        guard !bytes.isEmpty else { throw .malformedAddress }
        let result: Result<DecodedSentence, SentenceError> = bytes.withUnsafeBufferPointer { buffer in
            do throws(SentenceError) { return .success(try parse(buffer)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    // MARK: - Standard sentences

    static func parseGGA(_ c: consuming FieldCursor) throws(SentenceError) -> GGA {
        var s = GGA()
        s.timeOfDay = try c.timeOfDay()
        s.latitude = try c.angle(positive: UInt8(ascii: "N"), negative: UInt8(ascii: "S"), limit: 90)
        s.longitude = try c.angle(positive: UInt8(ascii: "E"), negative: UInt8(ascii: "W"), limit: 180)
        s.qualityIndicator = try c.integer()
        s.satellitesUsed = try c.integer()
        s.hdop = try c.decimal()
        s.altitudeMSL = try c.decimal()
        _ = c.next()  // M
        s.geoidSeparation = try c.decimal()
        _ = c.next()  // M
        s.differentialAge = try c.decimal()
        s.differentialStation = try? c.integer()
        return s
    }

    static func parseRMC(_ c: consuming FieldCursor) throws(SentenceError) -> RMC {
        let time = try c.timeOfDay()
        let status = c.character()
        var s = RMC(timeOfDay: time, isValid: status == UInt8(ascii: "A"))
        s.latitude = try c.angle(positive: UInt8(ascii: "N"), negative: UInt8(ascii: "S"), limit: 90)
        s.longitude = try c.angle(positive: UInt8(ascii: "E"), negative: UInt8(ascii: "W"), limit: 180)
        s.speedKnots = try c.decimal()
        s.track = try c.decimal()
        s.date = try c.dateDDMMYY()
        if let variation = try c.decimal() {
            let direction = c.character()
            s.magneticVariation = direction == UInt8(ascii: "W") ? -variation : variation
        } else {
            _ = c.next()
        }
        s.mode = c.character().flatMap(ModeIndicator.init(rawValue:))
        if s.mode == .notValid { s.isValid = false }
        return s
    }

    static func parseGLL(_ c: consuming FieldCursor) throws(SentenceError) -> GLL {
        let latitude = try c.angle(positive: UInt8(ascii: "N"), negative: UInt8(ascii: "S"), limit: 90)
        let longitude = try c.angle(positive: UInt8(ascii: "E"), negative: UInt8(ascii: "W"), limit: 180)
        let time = try c.timeOfDay()
        let status = c.character()
        let mode = c.character().flatMap(ModeIndicator.init(rawValue:))
        // NMEA 2.0 GLL has no status field; a position without one is taken as valid.
        let valid = (status == nil ? latitude != nil : status == UInt8(ascii: "A")) && mode != .notValid
        return GLL(latitude: latitude, longitude: longitude, timeOfDay: time, isValid: valid, mode: mode)
    }

    static func parseGSA(_ c: consuming FieldCursor) throws(SentenceError) -> GSA {
        _ = c.next()  // selection mode, A/M
        var s = GSA()
        s.fixType = try c.integer()
        for _ in 0..<12 {
            if let prn = try c.integer() { s.usedPRNs.append(prn) }
        }
        s.pdop = try c.decimal()
        s.hdop = try c.decimal()
        s.vdop = try c.decimal()
        s.systemID = try? c.integer()
        return s
    }

    static func parseGSV(_ c: consuming FieldCursor, talker: Talker) throws(SentenceError) -> GSV {
        // NMEA 4.11 lets pages after the first leave the page count empty (it repeats the first page's).
        let total = try c.integer() ?? 0
        guard let number = try c.integer() else { throw .missingField(sentence: "GSV", field: 2) }
        var s = GSV(totalMessages: total, messageNumber: number)
        s.constellation = talker.constellation
        s.satellitesInView = try c.integer()
        // Groups of four fields (PRN, elevation, azimuth, SNR); NMEA 4.10+ adds a lone signal id at the end.
        var left = c.remaining
        while left >= 4 {
            let prn = try c.integer()
            let elevation = try c.wholeOrDecimal()
            let azimuth = try c.wholeOrDecimal()
            let snr = try c.wholeOrDecimal()
            left -= 4
            if let prn {
                s.satelliteList.append(GSVSatellite(prn: prn, elevation: elevation, azimuth: azimuth,
                                                    signalToNoise: snr))
            }
        }
        if left == 1 { s.signalID = try? c.integer() }
        return s
    }

    static func parseVTG(_ c: consuming FieldCursor) throws(SentenceError) -> VTG {
        var s = VTG()
        let first = try c.decimal()
        let second = c.next()
        if second.equals("T") || (second.isEmpty && c.remaining >= 6) {
            // NMEA 2.3+: value,unit pairs T, M, N, K then the mode indicator.
            s.trackTrue = first
            s.trackMagnetic = try c.decimal()
            _ = c.next()
            s.speedKnots = try c.decimal()
            _ = c.next()
            s.speedKilometersPerHour = try c.decimal()
            _ = c.next()
            s.mode = c.character().flatMap(ModeIndicator.init(rawValue:))
        } else {
            // NMEA 1.5/2.0 form without unit letters: true track, magnetic track, knots, km/h.
            s.trackTrue = first
            if !second.isEmpty {
                guard let magnetic = second.decimalValue else { throw .malformedField(sentence: "VTG", field: 2) }
                s.trackMagnetic = magnetic
            }
            s.speedKnots = try c.decimal()
            s.speedKilometersPerHour = try c.decimal()
        }
        return s
    }

    static func parseGNS(_ c: consuming FieldCursor) throws(SentenceError) -> GNS {
        let time = try c.timeOfDay()
        let latitude = try c.angle(positive: UInt8(ascii: "N"), negative: UInt8(ascii: "S"), limit: 90)
        let longitude = try c.angle(positive: UInt8(ascii: "E"), negative: UInt8(ascii: "W"), limit: 180)
        let modeField = c.next()
        var s = GNS(timeOfDay: time, latitude: latitude, longitude: longitude)
        for i in 0..<modeField.count {
            if let m = ModeIndicator(rawValue: modeField[i]) { s.modeList.append(m) }
        }
        s.satellitesUsed = try c.integer()
        s.hdop = try c.decimal()
        s.altitudeMSL = try c.decimal()
        s.geoidSeparation = try c.decimal()
        s.differentialAge = try c.decimal()
        s.differentialStation = try? c.integer()
        return s
    }

    static func parseGST(_ c: consuming FieldCursor) throws(SentenceError) -> GST {
        var s = GST()
        s.timeOfDay = try c.timeOfDay()
        s.rangeRMS = try c.decimal()
        s.semiMajor = try c.decimal()
        s.semiMinor = try c.decimal()
        s.orientation = try c.decimal()
        s.latitudeError = try c.decimal()
        s.longitudeError = try c.decimal()
        s.altitudeError = try c.decimal()
        return s
    }

    static func parseGBS(_ c: consuming FieldCursor) throws(SentenceError) -> GBS {
        var s = GBS()
        s.timeOfDay = try c.timeOfDay()
        s.latitudeError = try c.decimal()
        s.longitudeError = try c.decimal()
        s.altitudeError = try c.decimal()
        return s
    }

    static func parseZDA(_ c: consuming FieldCursor) throws(SentenceError) -> ZDA {
        let time = try c.timeOfDay()
        let day = try c.integer(), month = try c.integer(), year = try c.integer()
        var date: CivilDate? = nil
        if let day, let month, let year {
            guard let d = CivilDate(year: year, month: month, day: day) else {
                throw .malformedField(sentence: "ZDA", field: 2)
            }
            date = d
        }
        return ZDA(timeOfDay: time, date: date)
    }

    static func parseHDT(_ c: consuming FieldCursor) throws(SentenceError) -> Heading {
        Heading(degrees: try c.decimal(), mode: nil)
    }

    static func parseTHS(_ c: consuming FieldCursor) throws(SentenceError) -> Heading {
        let degrees = try c.decimal()
        return Heading(degrees: degrees, mode: c.character())
    }

    // MARK: - Proprietary sentences

    static func parseProprietary(_ bytes: UnsafeBufferPointer<UInt8>, addressEnd: Int) throws(SentenceError) -> Sentence {
        let length = addressEnd - 1
        guard length == 5, bytes[2] == UInt8(ascii: "G"), bytes[3] == UInt8(ascii: "R"), bytes[4] == UInt8(ascii: "M")
        else { return .ignored }
        let start = addressEnd + 1
        switch bytes[5] {
        case UInt8(ascii: "E"):
            var c = FieldCursor(bytes, from: start, sentence: "PGRME")
            let h = try c.decimal(); _ = c.next()
            let v = try c.decimal(); _ = c.next()
            let s = try c.decimal()
            return .garminErrorEstimate(GarminErrorEstimate(horizontal: h, vertical: v, spherical: s))
        case UInt8(ascii: "Z"):
            var c = FieldCursor(bytes, from: start, sentence: "PGRMZ")
            let value = try c.decimal()
            let unit = c.character()
            let dimension = try? c.integer()
            let metres = value.map { unit == UInt8(ascii: "f") || unit == UInt8(ascii: "F") ? $0 * Units.metersPerFoot : $0 }
            return .garminAltitude(GarminAltitude(altitudeMSL: metres, fixDimension: dimension))
        default:
            return .ignored
        }
    }
}

@inline(__always)
func code3(_ s: StaticString) -> UInt32 {
    let p = s.utf8Start
    return UInt32(p[0]) << 16 | UInt32(p[1]) << 8 | UInt32(p[2])
}
