#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationWire
import NMEA

/// `locationctl decode [FILE]`: NMEA 0183 bytes in, one gpsd-style JSON object per line out.
enum DecodeCommand {
    static let help = """
        usage: locationctl decode [--no-sky] [--allow-missing-checksum] [--stats] [FILE]

        Decodes NMEA 0183 from FILE (or standard input when FILE is absent or '-') and prints one
        gpsd-style JSON object per line: a TPV for every epoch (reporting cycle) and a SKY after it when
        the satellites in view or the DOPs changed. Lines starting with '#' (capture headers) are skipped.
        Garbled input is counted and skipped; the exit status is 0 whatever the input.

        options:
          --no-sky                   print TPV objects only
          --allow-missing-checksum   accept sentences without '*hh' (old receivers)
          --stats                    print framing and decoding counts to standard error at the end
          -h, --help                 show this help

        """

    static func run(_ arguments: [String]) -> ExitCode {
        var path: String? = nil
        var sky = true
        var requireChecksum = true
        var stats = false
        for argument in arguments {
            switch argument {
            case "-h", "--help":
                print(help, terminator: "")
                return .ok
            case "--no-sky": sky = false
            case "--allow-missing-checksum": requireChecksum = false
            case "--stats": stats = true
            case "-": path = nil
            default:
                if argument.hasPrefix("-") || path != nil {
                    writeStandardError("locationctl decode: unexpected argument '\(argument)'\n\(help)")
                    return .usage
                }
                path = argument
            }
        }

        var fd: Int32 = 0
        if let path {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            if fd < 0 {
                let reason = String(cString: strerror(errno))
                writeStandardError("locationctl decode: cannot open '\(path)': \(reason)\n")
                return .noInput
            }
        }
        defer { if fd > 0 { close(fd) } }

        var decoder = NMEADecoder(requiresChecksum: requireChecksum)
        var filter = CaptureFilter()
        var encoder = GPSDEncoder()
        var output: [UInt8] = []
        output.reserveCapacity(1 << 17)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var failed = false

        var lastSky: (dop: DilutionOfPrecision, satellites: [Satellite], used: Int?)? = nil
        func emit(_ fix: Fix) {
            encoder.appendTPV(fix, to: &output)
            // SKY when the satellite view or the DOPs changed, as gpsd reports it once per GSV/GSA cycle.
            if sky && (!fix.satellites.isEmpty || !fix.dop.isEmpty),
               lastSky == nil || lastSky!.dop != fix.dop || lastSky!.used != fix.satellitesUsed || lastSky!.satellites != fix.satellites {
                encoder.appendSKY(fix, to: &output)
                lastSky = (fix.dop, fix.satellites, fix.satellitesUsed)
            }
            if output.count >= 1 << 16 { failed = !flush(&output) || failed }
        }

        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                writeStandardError("locationctl decode: read failed: \(String(cString: strerror(errno)))\n")
                break
            }
            if n == 0 { break }
            chunk.withUnsafeBufferPointer { read in
                filter.forEachRun(in: UnsafeBufferPointer(rebasing: read[0..<n])) { decoder.decode($0, emit: emit) }
            }
        }
        decoder.finish(emit: emit)
        failed = !flush(&output) || failed
        if stats {
            let s = decoder.statistics
            let f = s.framing
            writeStandardError("""
                sentences=\(f.sentences) fixes=\(s.fixes) ignored=\(s.ignoredSentences) \
                malformed=\(s.malformedSentences) checksum-mismatch=\(f.checksumMismatches) \
                missing-checksum=\(f.missingChecksums) truncated=\(f.truncatedSentences) \
                overlong=\(f.overlongSentences) discarded-bytes=\(f.discardedBytes)

                """)
        }
        return failed ? .ioError : .ok
    }

    /// Writes all of `buffer` to standard output and empties it; false on a write error (e.g. EPIPE).
    static func flush(_ buffer: inout [UInt8]) -> Bool {
        defer { buffer.removeAll(keepingCapacity: true) }
        return buffer.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(1, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += n
            }
            return true
        }
    }
}
