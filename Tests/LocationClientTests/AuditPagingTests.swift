import LocationWire
import Testing
@testable import LocationClient

/// Issue 12, hole 1: `audit(since:)` reads every page of a protocol 1.2 daemon's AUDIT answer, and a
/// 1.1 daemon's single reply as the only page.
@Suite("LocationClient: AUDIT pages")
struct AuditPagingTests {
    static func page(_ events: [String], next: String?) -> String {
        #"{"class":"AUDIT","events":["# + events.joined(separator: ",") + "]" + (next.map { #","next":"\#($0)""# } ?? "") + "}"
    }

    @Test("every page is read, the cursor sent back with since, the events in order with their JSON",
          arguments: [1, 2, 5])
    func readsEveryPage(pages: Int) async throws {
        let events = (0..<pages).map { #"{"unix":\#(1_796_014_800 + $0),"event":"decision","reason":"page \#($0)"}"# }
        let server = try FakeServer { peer in
            peer.greet()
            for i in 0..<pages {
                guard peer.readLine() != nil else { return }
                peer.send(Self.page([events[i]], next: i + 1 < pages ? "\(1_796_014_800 + i):1" : nil))
            }
            peer.waitForClose()
        }
        let client = try await LocationClient.connect(socketPath: server.path)
        let read = try await client.audit(since: 1_796_014_800)
        client.close()
        #expect(await server.finished())
        #expect(read.map(\.json) == events)
        #expect(read.map(\.reason) == (0..<pages).map { "page \($0)" })
        let cursors = [nil] + (0..<pages - 1).map { #","cursor":"\#(1_796_014_800 + $0):1""# }
        #expect(server.requests == cursors.map { #"{"class":"AUDIT","since":1796014800"# + ($0 ?? "") + "}" })
    }

    @Test("a reply whose next does not move on is an invalid reply, not an endless loop")
    func stuckCursor() async throws {
        let server = try FakeServer { peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(Self.page([#"{"unix":1,"event":"decision"}"#], next: "1:1"))
            guard peer.readLine() != nil else { return }
            peer.send(Self.page([#"{"unix":1,"event":"decision"}"#], next: "1:1"))
            peer.waitForClose()
        }
        let client = try await LocationClient.connect(socketPath: server.path)
        await #expect(throws: LocationClientError.self) { try await client.audit() }
        client.close()
        #expect(await server.finished())
    }
}
