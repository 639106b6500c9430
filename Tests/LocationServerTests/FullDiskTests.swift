#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import Testing
import TestSupport
@testable import LocationServer

/// The state directory's filesystem full, for real: a tmpfs of a few KiB mounted for the test (tests run
/// as root) and filled. Found by `Scripts/faults audit`: an audit record that did not fit was written in
/// part — the next record was glued to the half line — and the loss was never logged.
@Suite("Full disk", .serialized)
struct FullDiskTests {
    /// A fresh tmpfs of `kib` KiB on a temporary directory, unmounted by `unmount`.
    static func tmpfs(kib: Int) throws -> String {
        var template = Array("/tmp/locationd-full-XXXXXX".utf8CString)
        let made = try #require(TemporaryDirectories.mkdtemp(&template))
        let path = String(cString: made)
        let rc = mount("tmpfs", path, "tmpfs", 0, "size=\(kib)k,mode=0755")
        try #require(rc == 0, "mount tmpfs on \(path): \(Errno.current) (the tests run as root)")
        return path
    }

    static func unmount(_ path: String) {
        umount2(path, Int32(MNT_DETACH))
        rmdir(path)
    }

    /// Fills the filesystem at `path` with `path/filler`.
    static func fill(_ path: String) {
        let fd = open(path + "/filler", O_WRONLY | O_CREAT, 0o600)
        let block = [UInt8](repeating: 0, count: 4096)
        while write(fd, block, block.count) > 0 {}
        close(fd)
    }

    static func lines(_ path: String) -> [Substring] {
        guard case .success(let bytes) = FileDescriptorOps.readFile(atPath: path) else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
    }

    @Test("an audit record that does not fit is not written in part; the next ones are whole once there is room")
    func auditWholeRecords() throws {
        let dir = try Self.tmpfs(kib: 16)
        defer { Self.unmount(dir) }
        let audit = AuditLog(directory: dir)
        #expect(audit.append(Array(#"{"event":"grant","n":0}"#.utf8)) == nil)
        Self.fill(dir)
        // 700-byte records: the first ones fill the file's last page, then one goes over its end.
        var failure: Errno?
        for n in 1...20 where failure == nil {
            failure = audit.append(Array((#"{"event":"grant","n":\#(n),"pad":""# + String(repeating: "x", count: 680) + #""}"#).utf8))
        }
        #expect(failure == .noSpaceLeftOnDevice)
        let written = Self.lines(dir + "/audit.jsonl")
        #expect(written.last == "")  // ends with a whole line
        #expect(written.dropLast().allSatisfy { $0.hasPrefix("{") && $0.hasSuffix("}") })
        unlink(dir + "/filler")
        #expect(audit.append(Array(#"{"event":"grant","n":99}"#.utf8)) == nil)
        let after = Self.lines(dir + "/audit.jsonl")
        #expect(after.dropLast().allSatisfy { $0.hasPrefix("{") && $0.hasSuffix("}") })
        #expect(after.dropLast().last == #"{"event":"grant","n":99}"#)
    }

    @Test("the daemon with its audit filesystem full: fixes flow, the loss is logged once, and the recovery once")
    func auditFullDaemon() throws {
        let state = try Self.tmpfs(kib: 64)
        defer { Self.unmount(state) }
        let daemon = try DaemonProcess(config: """
            [receiver demo]
            type = replay
            file = \(DaemonProcess.demoCapture)
            rate = 5
            loop = yes

            [policy]
            access = once
            accuracy = full
            """, daemonKeys: "state-directory = \(state)")
        let watcher = try RawClient(daemon.socketPath)
        _ = watcher.message("VERSION")
        watcher.send(#"{"class":"AUTHORIZE","authorization":"once"}"#)
        watcher.send(#"{"class":"WATCH"}"#)
        #expect(watcher.message("TPV", timeout: 10) != nil)
        usleep(300_000)
        Self.fill(state)
        // Every AUTHORIZE is audited (a decision, with the name the client gives, 20 a minute): with a name of
        // 390 bytes, a few fill the file's last page, and the rest do not fit.
        let asker = try RawClient(daemon.socketPath)
        _ = asker.message("VERSION")
        let name = String(repeating: "n", count: 390)
        for _ in 0..<15 {
            asker.send(#"{"class":"AUTHORIZE","authorization":"once","name":"\#(name)"}"#)
            _ = asker.message("AUTHORIZATION")
        }
        var fixes = 0
        let end = monotonic() + 2
        while monotonic() < end { if watcher.message("TPV", timeout: end - monotonic()) != nil { fixes += 1 } }
        #expect(fixes >= 5, "fixes stopped while the audit could not be written")
        let lost = daemon.log.split(separator: "\n").filter { $0.contains("cannot write the audit file") }
        #expect(lost.count == 1, "\(lost)")
        unlink(state + "/filler")
        asker.send(#"{"class":"AUTHORIZE","authorization":"once"}"#)
        _ = asker.message("AUTHORIZATION")
        // The audit is written on the store's own queue, after the reply.
        var again: [Substring] = []
        let deadline = monotonic() + 5
        while again.isEmpty && monotonic() < deadline {
            usleep(50_000)
            again = daemon.log.split(separator: "\n").filter { $0.contains("audit file is written again") }
        }
        #expect(again.count == 1 && again.first?.contains("audit.lost=") == true, "\(again)")
    }
}
