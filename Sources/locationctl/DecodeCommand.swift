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
                    return usageFailure("decode", "unexpected argument '\(argument)'", help: help)
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
        var output = Output(sky: sky)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)

        // The closures below are literals passed straight to the decoder, so the state they change (`output`)
        // is checked for exclusive access at compile time, not at every fix.
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                writeStandardError("locationctl decode: read failed: \(String(cString: strerror(errno)))\n")
                break
            }
            if n == 0 { break }
            chunk.withUnsafeBufferPointer { read in
                filter.forEachRun(in: UnsafeBufferPointer(rebasing: read[0..<n])) { run in
                    decoder.decode(run) { fix in output.emit(fix) }
                }
            }
        }
        decoder.finish { fix in output.emit(fix) }
        output.flushAll()
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
        return output.failed ? .ioError : .ok
    }

    /// The JSON lines of the fixes decoded so far, written to standard output in blocks of 64 KiB.
    struct Output {
        /// Whether SKY lines are printed.
        let sky: Bool
        /// True once a write to standard output failed.
        private(set) var failed = false
        private var encoder = GPSDEncoder()
        private var buffer: [UInt8] = []
        private var lastSky: (dop: DilutionOfPrecision, satellites: [Satellite], used: Int?)? = nil

        init(sky: Bool) {
            self.sky = sky
            buffer.reserveCapacity(1 << 17)
        }

        /// Prints a TPV for `fix`, and a SKY after it when the satellite view or the DOPs changed (gpsd
        /// reports SKY once per GSV/GSA cycle).
        mutating func emit(_ fix: Fix) {
            encoder.appendTPV(fix, to: &buffer)
            if sky && (!fix.satellites.isEmpty || !fix.dop.isEmpty),
               lastSky == nil || lastSky!.dop != fix.dop || lastSky!.used != fix.satellitesUsed
                || lastSky!.satellites != fix.satellites {
                encoder.appendSKY(fix, to: &buffer)
                lastSky = (fix.dop, fix.satellites, fix.satellitesUsed)
            }
            if buffer.count >= 1 << 16 { flushAll() }
        }

        /// Writes what is buffered.
        mutating func flushAll() {
            failed = !DecodeCommand.flush(&buffer) || failed
        }
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
