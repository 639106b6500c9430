#if canImport(Glibc)
import Glibc
#endif
import LocationPolicy
import LocationPosix
import LocationWire

/// The grant store: persistent grants and pre-approvals as JSON in the state directory (mode 0600).
///
/// Writes are atomic — a temporary file, fsync, rename over the old one, fsync of the directory — so a
/// crash at any moment leaves either the old or the new store, never a mix. An unreadable or corrupt
/// store is moved aside (`grants.json.corrupt-<unix time>`), logged, and treated as empty: fail closed.
///
/// `@unchecked Sendable`: `grants` is unguarded; sound only while its owner calls it from one serial
/// context at a time (today the server's queue).
public final class GrantStore: @unchecked Sendable {
    public let path: String
    public private(set) var grants: GrantSet

    /// Loads the store at `directory/grants.json`.
    public init(directory: String, log: Log) {
        path = directory + "/grants.json"
        grants = GrantSet()
        let file = FileDescriptorOps.readFile(atPath: path)
        if case .failure(.noSuchFileOrDirectory) = file { return }
        do {
            grants = try GrantStoreFormat.decode(try JSONReader.read(try file.get()))
        } catch {
            let aside = path + ".corrupt-\(Int(wallClockSeconds()))"
            _ = FileDescriptorOps.rename(path, to: aside)
            log.error("grant store unreadable; moved aside and starting empty", ["path": path, "moved-to": aside, "error": "\(error)"])
        }
    }

    /// Replaces the grants and writes them durably.
    /// - Throws: `Errno` when the file cannot be written (the in-memory grants still change).
    public func update(_ change: (inout GrantSet) -> Void) throws(Errno) {
        change(&grants)
        try FileDescriptorOps.writeAtomically(path: path, bytes: try encoded())
    }

    private func encoded() throws(Errno) -> [UInt8] {
        guard let json = GrantStoreFormat.encode(grants) else { throw .invalidArgument }
        return json.encoded(prettyPrinted: true) + [10]
    }

}

/// The fudger's secret: 32 random bytes and the hour they were made, in `directory/fudger.secret`
/// (mode 0600). Made on first start; kept across restarts so a restart reveals no fresh sample.
enum FudgerSecret {
    static func load(directory: String, log: Log) -> (secret: [UInt8], originHour: Int) {
        let path = directory + "/fudger.secret"
        if case .success(let bytes) = FileDescriptorOps.readFile(atPath: path, maximumBytes: 40), bytes.count == 40 {
            var hour = 0
            for i in 0..<8 { hour |= Int(bytes[32 + i]) << (8 * i) }
            return (Array(bytes[0..<32]), hour)
        }
        // SystemRandomNumberGenerator reads getrandom(2): cryptographically secure.
        var generator = SystemRandomNumberGenerator()
        let secret = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let hour = Int(wallClockSeconds() / 3600)
        var bytes = secret
        for i in 0..<8 { bytes.append(UInt8((hour >> (8 * i)) & 0xFF)) }
        do {
            try FileDescriptorOps.writeAtomically(path: path, bytes: bytes)
        } catch {
            log.error("cannot write the fudger secret", ["path": path, "errno": error.description])
        }
        return (secret, hour)
    }
}
