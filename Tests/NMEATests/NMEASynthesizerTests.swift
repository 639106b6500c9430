import Foundation
import LocationCore
import NMEA
import Testing

/// NMEA synthesized from real fixes (the haicom-305N capture decoded) must decode back to the same fixes, by our
/// decoder and by gpsd's own `gpsdecode`.
@Suite("NMEA synthesized from fixes")
struct NMEASynthesizerTests {
    static func fixes() throws -> [Fix] {
        Captures.decode(try Captures.bytes("haicom-305N.log")).filter { $0.hasPosition && $0.time?.date != nil }
    }

    static func synthesized(_ fixes: [Fix]) -> [UInt8] {
        var out: [UInt8] = []
        for fix in fixes { NMEASynthesizer.appendEpoch(fix, satellites: true, to: &out) }
        return out
    }

    @Test("every sentence carries a correct checksum and ends in CR LF")
    func checksums() throws {
        let text = Self.synthesized(try Self.fixes())
        var lines = 0
        for line in text.split(separator: 10) {
            lines += 1
            #expect(line.last == 13)
            let body = line.dropFirst().prefix { $0 != UInt8(ascii: "*") }
            let hex = String(decoding: line.dropLast().suffix(2), as: UTF8.self)
            #expect(UInt8(hex, radix: 16) == NMEASynthesizer.checksum(body))
        }
        #expect(lines > 100)
    }

    @Test("our decoder reads back the same positions, times, speeds, tracks and altitudes")
    func roundTrip() throws {
        let original = try Self.fixes()
        #expect(original.count > 50)
        var decoder = NMEADecoder()
        var back: [Fix] = []
        decoder.decode(Self.synthesized(original)) { back.append($0) }
        decoder.finish { back.append($0) }
        let byTime = Dictionary(back.compactMap { f in f.time.map { ($0, f) } }, uniquingKeysWith: { _, b in b })
        for fix in original {
            let time = try #require(fix.time)
            let other = try #require(byTime[time], "\(time.iso8601) missing")
            #expect(other.mode == fix.mode)
            #expect(abs((other.latitude ?? 99) - (fix.latitude ?? 0)) < 1e-7)
            #expect(abs((other.longitude ?? 999) - (fix.longitude ?? 0)) < 1e-7)
            if let s = fix.speed { #expect(abs((other.speed ?? -1) - s) < 0.001) }
            if let t = fix.track { #expect(abs((other.track ?? -1) - t) < 0.006) }
            if fix.mode == .threeDimensional, let a = fix.altitudeMSL { #expect(abs((other.altitudeMSL ?? -1e9) - a) < 0.0006) }
            #expect(other.satellites.count == fix.satellites.count)
        }
    }

    @Test("gpsd's gpsdecode reads the same positions")
    func gpsdecode() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gpsdecode") else {
            Issue.record("gpsdecode not installed (apt install gpsd-clients)")
            return
        }
        let original = try Self.fixes()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gpsdecode")
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(Self.synthesized(original)))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        struct TPV: Decodable { var `class`: String; var time: String?; var lat: Double?; var lon: Double? }
        var decoded: [String: TPV] = [:]
        for line in data.split(separator: 10) {
            if let tpv = try? JSONDecoder().decode(TPV.self, from: Data(line)), tpv.class == "TPV", let t = tpv.time,
               tpv.lat != nil { decoded[String(t.split(separator: "T").last ?? "")] = tpv }
        }
        var matched = 0
        for fix in original {
            // By time of day: gpsd moves a 2007 date by its rollover guess (to 2026), the time stays.
            guard let iso = fix.time?.iso8601, case let t = String(iso.split(separator: "T").last ?? ""),
                  let tpv = decoded[t] else { continue }
            #expect(abs((tpv.lat ?? 99) - (fix.latitude ?? 0)) < 1e-7, "\(t)")
            #expect(abs((tpv.lon ?? 999) - (fix.longitude ?? 0)) < 1e-7, "\(t)")
            matched += 1
        }
        print("gpsdecode read \(matched) of \(original.count) synthesized epochs with a position")
        #expect(matched >= original.count * 9 / 10)
    }

    @Test("GGA's HDOP: the fix's own; else eph / 19 m, at most 99.99 (a reduced fix reads as coarse, never as exact); else empty")
    func horizontalDOP() throws {
        func hdop(_ fix: Fix) -> Substring {
            var out: [UInt8] = []
            NMEASynthesizer.appendGGA(fix, to: &out)
            return String(decoding: out, as: UTF8.self).split(separator: ",", omittingEmptySubsequences: false)[8]
        }
        var own = Fix(device: nil, mode: .threeDimensional, latitude: -27.2, longitude: 153.0, eph: 30)
        own.dop.horizontal = 1.2
        #expect(hdop(own) == "1.20")
        #expect(hdop(Fix(device: nil, mode: .twoDimensional, latitude: -27.2, longitude: 153.0, eph: 2000)) == "99.99")
        #expect(hdop(Fix(device: nil, mode: .twoDimensional, latitude: -27.2, longitude: 153.0, eph: 190)) == "10.00")
        #expect(hdop(Fix(device: nil, mode: .twoDimensional, latitude: -27.2, longitude: 153.0)) == "")
    }

    @Test("a multi-constellation sky (u-blox M9N) reads back whole: each system's satellites under its talker, every used one in its system's GSA")
    func multiConstellation() throws {
        // A new-user helper found one `$GPGSV` set for all systems (Galileo 3 written as GPS 3) and one `$GPGSA` holding
        // 12 of the 25 used satellites.
        let original = Captures.decode(try Captures.bytes("ublox-neo-m9n-nmea.log")).filter { $0.hasPosition && $0.time != nil }
        var out: [UInt8] = []
        for fix in original { NMEASynthesizer.appendEpoch(fix, satellites: true, to: &out) }
        var decoder = NMEADecoder()
        var back: [Fix] = []
        decoder.decode(out) { back.append($0) }
        decoder.finish { back.append($0) }
        let byTime = Dictionary(back.compactMap { f in f.time.map { ($0, f) } }, uniquingKeysWith: { _, b in b })
        func key(_ s: Satellite) -> String { "\(s.constellation.map { "\($0)" } ?? "-") \(s.prn) \(s.signalID ?? 0) \(s.used)" }
        var compared = 0
        for fix in original.dropFirst(2) where fix.satellites.filter(\.used).count > 12 {
            let time = try #require(fix.time)
            let other = try #require(byTime[time])
            #expect(Set(other.satellites.map(key)) == Set(fix.satellites.map(key)), "\(fix.time?.iso8601 ?? "")")
            compared += 1
        }
        #expect(compared > 20)
        let text = String(decoding: out, as: UTF8.self)
        for talker in ["$GPGSV", "$GLGSV", "$GAGSV", "$GBGSV", "$GNGSA"] { #expect(text.contains(talker), "no \(talker)") }
        #expect(!text.contains("$GPGSA"), "several systems' used satellites: a GSA per system")
    }

    @Test("PRNs are written with two digits at least, as NMEA 0183 fields are")
    func prnDigits() {
        var fix = Fix(device: nil, mode: .threeDimensional, latitude: 1, longitude: 2)
        fix.satellites = [Satellite(prn: 3, constellation: .gps, elevation: 40, azimuth: 100, signalToNoise: 30, used: true)]
        var out: [UInt8] = []
        NMEASynthesizer.appendGSA(fix, to: &out)
        NMEASynthesizer.appendGSV(fix, to: &out)
        let text = String(decoding: out, as: UTF8.self)
        #expect(text.hasPrefix("$GPGSA,A,3,03,,"), "\(text)")
        #expect(text.contains("$GPGSV,1,1,01,03,40,100,30*"), "\(text)")
    }

    @Test("values out of range are written so that readers take them: azimuth 000–359, the rest empty")
    func outOfRange() {
        // The fuzzer (CI 2026-12-03): a satellite decoded with elevation 100, azimuth -3 and SNR -8 was written
        // `$GAGSV,1,1,01,33,100,0-3,-8`, which our decoder refuses.
        var fix = Fix(device: nil, mode: .noFix)
        fix.satellites = [Satellite(prn: 33, constellation: .galileo, elevation: 100, azimuth: -3, signalToNoise: -8),
                          Satellite(prn: 5, constellation: .gps, elevation: -4, azimuth: 1e300, signalToNoise: .nan)]
        var out: [UInt8] = []
        NMEASynthesizer.appendEpoch(fix, satellites: true, to: &out)
        let text = String(decoding: out, as: UTF8.self)
        #expect(text.contains("$GAGSV,1,1,01,33,,357,*"), "\(text)")
        #expect(text.contains("$GPGSV,1,1,01,05,-04,,*"), "\(text)")
        var decoder = NMEADecoder()
        decoder.decode(out) { _ in }
        decoder.finish { _ in }
        #expect(decoder.statistics.malformedSentences == 0 && decoder.statistics.framing.rejectedSentences == 0, "\(text)")
    }
}
