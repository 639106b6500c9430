#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationCore
import LocationPosix
import LocationWire
import Synchronization
import Testing
@testable import LocationClient

/// LocationClientTests, continued: STATUS, concurrent requests, cancellation and the connection's lifetime.
extension LocationClientTests {
    @Test("status() decodes the daemon's STATUS, receivers included")
    func status() async throws {
        let receivers = [
            ReceiverReport(name: "gnss0", type: "serial", path: "/dev/ttyACM0", state: "connected", speed: 9600,
                           connectedSince: UTCTime(unixSeconds: 1_796_015_400), sentences: 1203, fixes: 300, errors: 0,
                           lastFixTime: UTCTime(date: CivilDate(year: 2026, month: 11, day: 30),
                                                millisecondsOfDay: (5 * 3600 + 14 * 60 + 59) * 1000),
                           priority: 1),
            ReceiverReport(name: "backup", type: "gpsd", path: "localhost:2947", state: "unavailable",
                           reason: "connection refused"),
        ]
        let reply = ServerMessage.status(mode: .threeDimensional, clients: 2, receivers: receivers)
        try await withFakeServer({ peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(bytes: reply)
            peer.waitForClose()
        }) { client, server in
            let status = try await client.status()
            #expect(server.requests == [#"{"class":"STATUS"}"#])
            #expect(status.mode == .threeDimensional)
            #expect(status.clients == 2)
            #expect(status.json.map { Array($0.utf8) + [10] } == reply)
            guard status.receivers.count == 2 else {
                Issue.record("receivers: \(status.receivers)")
                return
            }
            let gnss0 = status.receivers[0]
            #expect(gnss0.name == "gnss0")
            #expect(gnss0.type == "serial")
            #expect(gnss0.path == "/dev/ttyACM0")
            #expect(gnss0.state == "connected")
            #expect(gnss0.speed == 9600)
            #expect(gnss0.connectedSince?.unixMilliseconds == 1_796_015_400_000)
            #expect(gnss0.sentences == 1203)
            #expect(gnss0.fixes == 300)
            #expect(gnss0.lastFixTime?.iso8601 == "2026-11-30T05:14:59.000Z")
            #expect(gnss0.priority == 1)
            let backup = status.receivers[1]
            #expect(backup.state == "unavailable")
            #expect(backup.reason == "connection refused")
            #expect(backup.speed == nil)
            #expect(backup.connectedSince == nil)
        }
    }

    @Test("status() decodes the example in docs/PROTOCOL.md")
    func statusDocumentedExample() async throws {
        try await withFakeServer({ peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"STATUS","mode":3,"clients":2,"receivers":[{"name":"gnss0","type":"serial","path":"/dev/ttyACM0","state":"connected","speed":9600,"connectedSince":"2026-11-30T05:10:00.000Z","sentences":1203,"fixes":300,"errors":0,"lastFixTime":"2026-11-30T05:14:59.000Z","priority":0}]}"#)
            peer.waitForClose()
        }) { client, _ in
            let status = try await client.status()
            #expect(status.receivers.first?.connectedSince?.iso8601 == "2026-11-30T05:10:00.000Z")
            #expect(status.receivers.first?.errors == 0)
        }
    }

    @Test("replies are matched to concurrent requests by class")
    func concurrentRequests() async throws {
        try await withFakeServer({ peer in
            peer.greet()
            // Answer both requests only once both arrived, in the opposite order.
            guard let one = peer.readLine(), let two = peer.readLine() else { return }
            let statusReply = #"{"class":"STATUS","mode":1,"clients":1,"receivers":[]}"#
            let pollReply = #"{"class":"POLL","tpv":["# + CannedLines.first3D + "]}"
            for request in [two, one] {
                peer.send(request.contains("STATUS") ? statusReply : pollReply)
            }
            peer.waitForClose()
        }) { client, _ in
            async let status = client.status()
            async let location = client.requestLocation()
            let (s, l) = try await (status, location)
            #expect(s.mode == .noFix)
            #expect(s.receivers.isEmpty)
            #expect(l.latitude == -27.210911667)
        }
    }

    @Test("a request pending when the daemon hangs up fails with disconnected")
    func disconnectDuringRequest() async throws {
        let server = try FakeServer { peer in
            peer.greet()
            peer.readLine()
        }
        let client = try await LocationClient.connect(socketPath: server.path)
        await #expect(throws: LocationClientError.disconnected) {
            _ = try await client.status()
        }
        // Later calls fail at once.
        await #expect(throws: LocationClientError.disconnected) {
            _ = try await client.requestLocation()
        }
        #expect(await server.finished())
    }

    @Test("cancelling the waiting task throws CancellationError")
    func cancellation() async throws {
        try await withFakeServer({ peer in
            peer.greet()
            peer.waitForClose()
        }) { client, server in
            let task = Task { try await client.status() }
            for _ in 0..<2000 where server.requests.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
            task.cancel()
            await #expect(throws: CancellationError.self) { _ = try await task.value }
        }
    }

    @Test("dropping a subscription unsubscribes; dropping the client then closes the connection")
    func dropSubscription() async throws {
        let server = try FakeServer { peer in
            peer.greet()
            peer.waitForClose()
        }
        do {
            let client = try await LocationClient.connect(socketPath: server.path)
            _ = client.updates(minInterval: 2)
        }
        #expect(await server.finished())
        #expect(server.requests == [#"{"class":"WATCH","enable":true,"minInterval":2,"distanceFilter":0}"#,
                                    #"{"class":"WATCH","enable":false}"#])
    }

    @Test("a second updates() replaces the first, which ends")
    func secondSubscriptionReplacesFirst() async throws {
        try await withFakeServer({ peer in
            peer.greet()
            guard peer.readLine() != nil, peer.readLine() != nil else { return }
            peer.send(CannedLines.first3D)
            peer.waitForClose()
        }) { client, server in
            let first = client.updates()
            let second = client.updates(distanceFilter: 5)
            var firstUpdates = 0
            for try await _ in first { firstUpdates += 1 }
            #expect(firstUpdates == 0)
            var iterator = second.makeAsyncIterator()
            let update = try await iterator.next()
            #expect(update == .location(try #require(parseTPV(CannedLines.first3D))))
            #expect(server.requests.count == 2)
        }
    }

    @Test("dropping the client closes the connection")
    func dropClosesConnection() async throws {
        let server = try FakeServer { peer in
            peer.greet()
            peer.waitForClose()
        }
        do {
            let client = try await LocationClient.connect(socketPath: server.path)
            #expect(client.serverRelease == "0.1.0")
        }
        #expect(await server.finished())
    }
}
