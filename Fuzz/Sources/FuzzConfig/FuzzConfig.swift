import FuzzMain
import LocationServer

/// libFuzzer entry point: arbitrary bytes as a config file (`locationd.conf` or a drop-in).
///
/// The text goes through inih as `ConfigFile.read` reads a file, then through `DaemonConfiguration`'s
/// validation; a config that validates must also give its effective rules. Any error is an answer, not a
/// finding: the checks are no crash, no hang, and every error names the file.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    do throws(ConfigFileError) {
        let entries = try ConfigFile.read(contentsOf: bytes, name: "fuzz.conf")
        let configuration = try DaemonConfiguration(entries: entries)
        _ = configuration.rules
    } catch {
        if error.file != "fuzz.conf" { fatalError("error names \(error.file), not the file: \(error)") }
    }
    return 0
}
