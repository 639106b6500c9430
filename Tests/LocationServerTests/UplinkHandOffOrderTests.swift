#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationPolicy
import LocationPosix
import LocationWire
import Testing
import TestSupport
@testable import LocationServer

/// The uplinks are handed their reports and the sharing switch's changes after the server's turn, on their own
/// queue (issue 34): what a turn decided must reach them in the order it was decided, and a SHARE is answered
/// only once its file is written — after the uplinks were told.
@Suite("Uplink hand-offs and the SHARE reply, in the order the turns decided them")
struct UplinkHandOffOrderTests {
    struct NoReceivers: ReceiverStatusProvider {
        func receiverReports() -> [ReceiverReport] { [] }
    }

    /// Reads whatever waits on `fd` without blocking.
    static func available(_ fd: Int32) -> String {
        var bytes = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &bytes, bytes.count, Int32(MSG_DONTWAIT))
        return n > 0 ? String(decoding: bytes[..<n], as: UTF8.self) : ""
    }

    @Test("a fix's report, then `share off`: the report is handed over before the switch, and the reply waits for the file")
    func reportThenShareOff() throws {
        var template = Array("/tmp/locationd-handoff-XXXXXX".utf8CString)
        let directory = String(cString: try #require(TemporaryDirectories.mkdtemp(&template)))
        defer { _ = FileDescriptorOps.unlink(directory + "/fudger.secret"); rmdir(directory) }
        let log = Log(level: .error)
        let context = ServerContext(limits: ServerLimits(), log: log, store: PolicyStore(stateDirectory: directory, log: log),
                                    receivers: NoReceivers(), release: "test")
        var state = ServerState(context: context, publisher: PublisherTests.publisher(PublisherUplinkTests.rules()))
        let changes = Locked<[SharingChange]>([])
        state.publisher.addUplink(PublisherUplinkTests.subscription("fleet", .full), identity: PublisherUplinkTests.daemon,
                                  sink: { _, _ in }, sharing: { change in changes.withLock { $0.append(change) } })
        state.publisher.uplinks.settings = SharingSettings(group: nil, path: directory + "/sharing")

        // Root's connection asks for the switch (root may turn it).
        var pair: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[1]) }
        let root = ClientIdentity(pid: getpid(), uid: 0, gid: 0, user: "root", executable: "/usr/bin/locationctl")
        let admitted = state.admit(pair[0], identity: root, at: PublisherTests.moment(0))
        let id = try #require(admitted)
        #expect(Self.available(pair[1]).contains(#""class":"VERSION""#))

        // The fix's turn hands the uplink its report as an effect; nothing was called in the turn.
        state.publish(PublisherTests.positioned[0], at: PublisherTests.moment(1))
        state.handleLine(Array(#"{"class":"SHARE","sharing":false}"#.utf8), from: id, at: PublisherTests.moment(1.5))
        let kinds = state.effects.map { effect -> String in
            switch effect {
            case .uplinks(let work):
                return work.map { if case .report = $0 { "report" } else { "sharing" } }.joined(separator: ",")
            case let .saveSharing(text, path, reply):
                return "save \(text ?? "-") \(path == directory + "/sharing") \(reply?.id == id)"
            default: return "other"
            }
        }
        #expect(kinds == ["report", "sharing", "save off\n true true"])
        #expect(changes.withLock { $0 }.isEmpty, "the switch reaches the uplink when the effects run, after the turn")
        #expect(Self.available(pair[1]).isEmpty, "no SHARE reply before the file is written")

        // The effects as the front runs them, in order: the uplink is told, then the file written, then the reply.
        var reply: (id: Int, bytes: [UInt8])?
        for effect in state.effects {
            switch effect {
            case .uplinks(let work): work.forEach { $0.run() }
            case let .saveSharing(text, path, r):
                writeSharingFile(try #require(path), text)
                reply = r
            default: break
            }
        }
        state.effects.removeAll()
        #expect(changes.withLock { $0 } == [.off(discard: false)])
        #expect(readSharingFile(directory + "/sharing") == SharingState(pausedUntil: .infinity))
        _ = FileDescriptorOps.unlink(directory + "/sharing")
        state.handle(.sharingSaved(reply: reply), at: PublisherTests.moment(2))
        #expect(Self.available(pair[1]) == #"{"class":"SHARE","sharing":false,"uplinks":1}"# + "\n")

        // A reply for a connection closed meanwhile goes nowhere.
        state.close(id, why: "client disconnected")
        state.handle(.sharingSaved(reply: reply), at: PublisherTests.moment(3))
        #expect(Self.available(pair[1]).isEmpty)
    }
}
