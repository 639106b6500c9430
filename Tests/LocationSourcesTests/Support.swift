#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import FoundationEssentials
import LocationCore
import LocationPosix
import LocationSources
import NMEA

/// Shared captures and a thread-safe event recorder for receiver tests.
enum TestCaptures {
    static let directory: String = {
        if let shared = ProcessInfo.processInfo.environment["LOCATIOND_SHARED"] { return shared + "/nmea-logs" }
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path + "/../shared/nmea-logs"
    }()

    static func path(_ name: String) -> String { directory + "/" + name }

    /// The capture's receiver bytes, `#` lines removed.
    static func receiverBytes(_ name: String) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path(name)) else { return [] }
        var filter = CaptureFilter()
        var out: [UInt8] = []
        [UInt8](data).withUnsafeBufferPointer { filter.filter($0, into: &out) }
        return out
    }

    /// What `locationctl decode` makes of the bytes: every epoch's fix.
    static func decode(_ bytes: [UInt8]) -> [Fix] {
        var decoder = NMEADecoder()
        var fixes: [Fix] = []
        decoder.decode(bytes) { fixes.append($0) }
        decoder.finish { fixes.append($0) }
        return fixes
    }
}

/// Collects receiver events from any thread and lets a test wait for a condition.
final class EventRecorder: @unchecked Sendable {
    private let state = Locked<(fixes: [Fix], statuses: [ReceiverStatus])>(([], []))

    var handler: @Sendable (ReceiverEvent) -> Void {
        { [self] event in
            state.withLock {
                switch event {
                case .fix(let f): $0.fixes.append(f)
                case .status(let s): $0.statuses.append(s)
                case .counts: break
                }
            }
        }
    }

    var setHandler: @Sendable (ReceiverSet.Event) -> Void {
        { [self] event in
            state.withLock {
                switch event {
                case .fix(let f): $0.fixes.append(f)
                case .status(let s): $0.statuses.append(s)
                case .rejected: break
                }
            }
        }
    }

    var fixes: [Fix] { state.withLock { $0.fixes } }
    var statuses: [ReceiverStatus] { state.withLock { $0.statuses } }

    /// Polls `condition` every 10 ms until it holds or `timeout` seconds pass; returns whether it held.
    func wait(timeout: Double, _ condition: (EventRecorder) -> Bool) -> Bool {
        let end = monotonic() + timeout
        while monotonic() < end {
            if condition(self) { return true }
            usleep(10_000)
        }
        return condition(self)
    }
}

func monotonic() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

/// Writes bytes into a pseudo-terminal's master side from a background thread (a pty holds ~4 KB).
func feed(_ pty: PseudoTerminal, _ bytes: [UInt8], chunk: Int = 512, pause: UInt32 = 0) -> DispatchGroup {
    let group = DispatchGroup()
    let master = pty.master
    DispatchQueue.global().async(group: group) {
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + chunk, bytes.count)
            if case .failure = FileDescriptorOps.writeAll(master, Array(bytes[offset..<end])) { return }
            offset = end
            if pause > 0 { usleep(pause) }
        }
    }
    return group
}

/// How many of this process's descriptors are open on `path` (read from /proc/self/fd).
func descriptors(pointingTo path: String) -> Int {
    guard let dir = opendir("/proc/self/fd") else { return -1 }
    defer { closedir(dir) }
    var count = 0
    var buffer = [CChar](repeating: 0, count: 4096)
    while let entry = readdir(dir) {
        let name = FileDescriptorOps.entryName(entry)
        let n = readlink("/proc/self/fd/" + name, &buffer, buffer.count - 1)
        guard n > 0 else { continue }
        let target = buffer.withUnsafeBufferPointer { String(decoding: UnsafeRawBufferPointer($0).prefix(n), as: UTF8.self) }
        if target == path { count += 1 }
    }
    return count
}
