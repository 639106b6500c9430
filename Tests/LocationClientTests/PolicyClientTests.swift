#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationWire
import Synchronization
import Testing
@testable import LocationClient

/// Runs `body` with a client connected to a fake server running `script`; checks the server finished.
func withFakeDaemon(_ script: @escaping @Sendable (FakePeer) -> Void,
                    _ body: (LocationClient, FakeServer) async throws -> Void) async throws {
    let server = try FakeServer(script: script)
    let client = try await LocationClient.connect(socketPath: server.path)
    try await body(client, server)
    client.close()
    #expect(await server.finished())
}

/// Lines as locationd writes them (docs/PROTOCOL.md "Authorization", "Agents and administrators").
enum PolicyLines {
    static let once = #"{"class":"AUTHORIZATION","status":"authorizedOnce","accuracy":"full","reason":"one-time grant for this connection"}"#
    static let reduced = #"{"class":"AUTHORIZATION","status":"authorizedPersistent","accuracy":"reduced","reason":"persistent grant by agent root (uid 0)"}"#
    static let noAgent = #"{"class":"AUTHORIZATION","status":"denied","reason":"no agent is running to ask"}"#
    static let notDetermined = #"{"class":"AUTHORIZATION","status":"notDetermined","reason":"not authorized yet"}"#
    static let ask = #"{"class":"ASK","id":7,"client":{"pid":4242,"uid":1000,"user":"alice","exe":"/usr/bin/navit","unit":"navit.service","name":"My Navigator"},"request":"once","accuracy":"full","timeout":30,"remembers":"whenInUse","inUse":"running"}"#
    static let askPurpose = #"{"class":"ASK","id":8,"client":{"pid":4242,"uid":1000,"user":"alice","exe":"/usr/bin/navit"},"request":"temporaryFullAccuracy","purposeKey":"Navigation","accuracy":"full","purpose":"Turn-by-turn directions need your exact position.","timeout":30}"#
    static let grants = #"{"class":"GRANTS","persistent":[{"executable":"/usr/bin/navit","allowed":true,"accuracy":"reduced","created":"2026-11-30T05:00:00.000Z","expires":"2026-12-07T05:00:00.000Z","decidedBy":"agent root (uid 0)"},{"unit":"spy.service","allowed":false,"accuracy":"reduced","created":"2026-11-30T05:01:00.000Z","decidedBy":"agent root (uid 0)"}],"preapproved":[{"user":"kiosk","accuracy":"full","created":"2026-11-30T05:02:00.000Z"}],"once":[{"pid":4242,"uid":1000,"exe":"/usr/bin/navit","accuracy":"full","granted":"2026-11-30T05:03:00.000Z","expires":"2026-11-30T06:03:00.000Z"}]}"#
    static let emptyGrants = #"{"class":"GRANTS","persistent":[],"preapproved":[],"once":[]}"#
    static let auditEvent1 = #"{"unix":1796014800.5,"time":"2026-11-30T05:00:00.500Z","event":"decision","client":{"pid":4242,"uid":1000,"user":"alice","exe":"/usr/bin/navit","name":"My Navigator"},"request":"AUTHORIZE","status":"authorizedOnce","accuracy":"full","reason":"agent root (uid 0) answered allowOnce"}"#
    static let auditEvent2 = #"{"unix":1796014801,"time":"2026-11-30T05:00:01.000Z","event":"revoke","client":{"pid":1,"uid":0,"user":"root","exe":"/usr/bin/locationctl"},"request":"REVOKE executable /usr/bin/navit","reason":"by administrator root (uid 0)"}"#
    static let audit = #"{"class":"AUDIT","events":["# + auditEvent1 + "," + auditEvent2 + "]}"
    static let permissionDenied = #"{"class":"ERROR","request":"GRANT","message":"permission denied: needs root or group locationd-admin"}"#
}

@Suite("LocationClient: authorization, agent and administration")
struct PolicyClientTests {
    @Test("requestAuthorization sends AUTHORIZE and returns the AUTHORIZATION reply; a refusal is a status, not an error")
    func requestAuthorization() async throws {
        try await withFakeDaemon({ peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.once)
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.noAgent)
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.reduced)
            peer.waitForClose()
        }) { client, server in
            let once = try await client.requestAuthorization(.once, accuracy: .fullAccuracy, name: "My Navigator")
            #expect(once == Authorization(status: .authorizedOnce, accuracy: .fullAccuracy,
                                          reason: "one-time grant for this connection", json: PolicyLines.once))
            #expect(once.isAuthorized)

            let refused = try await client.requestAuthorization(.persistent, accuracy: .reducedAccuracy)
            #expect(refused.status == .denied)
            #expect(refused.accuracy == nil)
            #expect(refused.reason == "no agent is running to ask")
            #expect(!refused.isAuthorized)

            let status = try await client.authorizationStatus()
            #expect(status.status == .authorizedPersistent)
            #expect(status.accuracy == .reducedAccuracy)

            #expect(server.requests == [
                #"{"class":"AUTHORIZE","authorization":"once","accuracy":"full","name":"My Navigator"}"#,
                #"{"class":"AUTHORIZE","authorization":"persistent","accuracy":"reduced"}"#,
                #"{"class":"AUTHORIZATION"}"#,
            ])
        }
    }

    @Test("every status name of the protocol decodes; only the three authorized ones are authorized")
    func statuses() {
        let names = ["notDetermined", "denied", "restricted", "authorizedOnce", "authorizedPersistent", "authorizedWhenInUse"]
        #expect(AuthorizationStatus.allCases.map(\.rawValue) == names)
        #expect(AuthorizationStatus.allCases.filter(\.isAuthorized) == [.authorizedOnce, .authorizedPersistent, .authorizedWhenInUse])
        #expect(AuthorizationStatus.authorizedAlways == .authorizedPersistent)
    }

    @Test("an AUTHORIZATION with an unknown status is an invalidReply")
    func unknownStatus() async throws {
        try await withFakeDaemon({ peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"AUTHORIZATION","status":"authorizedSometimes"}"#)
            peer.waitForClose()
        }) { client, _ in
            await #expect {
                _ = try await client.authorizationStatus()
            } throws: { error in
                guard case .invalidReply = error as? LocationClientError else { return false }
                return true
            }
        }
    }

    @Test("an AUTHORIZE waiting for an agent does not hold up other requests; replies go by class")
    func authorizeWhileAsking() async throws {
        try await withFakeDaemon({ peer in
            peer.greet()
            // AUTHORIZE, then STATUS: the daemon answers STATUS at once and AUTHORIZE when the agent has.
            guard let first = peer.readLine(), let second = peer.readLine() else { return }
            guard first.contains("AUTHORIZE"), second.contains("STATUS") else {
                peer.send(#"{"class":"ERROR","request":"?","message":"unexpected order"}"#)
                return
            }
            peer.send(#"{"class":"STATUS","mode":3,"clients":2,"receivers":[]}"#)
            usleep(100_000)
            peer.send(PolicyLines.once)
            peer.waitForClose()
        }) { client, server in
            let authorize = Task { try await client.requestAuthorization() }
            for _ in 0..<2000 where server.requests.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
            let status = try await client.status()
            #expect(status.clients == 2)
            #expect(try await authorize.value.status == .authorizedOnce)
        }
    }

    @Test("FULLACCURACY: granted; refused by the agent (AUTHORIZATION, then an ERROR that is dropped); undeclared key throws")
    func temporaryFullAccuracy() async throws {
        try await withFakeDaemon({ peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.once)
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.reduced)
            peer.send(#"{"class":"ERROR","request":"FULLACCURACY","message":"temporary full accuracy denied by the agent"}"#)
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"ERROR","request":"FULLACCURACY","message":"purpose key \"Ads\" is not declared for this client ([policy])"}"#)
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"STATUS","mode":1,"clients":1,"receivers":[]}"#)
            // The daemon hangs up: the call waiting fails with .disconnected, not with the dropped ERROR.
            guard peer.readLine() != nil else { return }
        }) { client, server in
            let granted = try await client.requestTemporaryFullAccuracy(purposeKey: "Navigation")
            #expect(granted.accuracy == .fullAccuracy)
            let refused = try await client.requestTemporaryFullAccuracy(purposeKey: "Navigation")
            #expect(refused.accuracy == .reducedAccuracy)
            #expect(refused.isAuthorized)
            await #expect(throws: LocationClientError.server(request: "FULLACCURACY",
                                                             message: #"purpose key "Ads" is not declared for this client ([policy])"#)) {
                _ = try await client.requestTemporaryFullAccuracy(purposeKey: "Ads")
            }
            #expect(try await client.status().mode == .noFix)
            await #expect(throws: LocationClientError.disconnected) { _ = try await client.authorizationStatus() }
            #expect(server.requests.first == #"{"class":"FULLACCURACY","purposeKey":"Navigation"}"#)
        }
    }

    @Test("an unsolicited AUTHORIZATION while streaming is an .authorization update; the WATCH ERROR then ends the stream")
    func revokedWhileStreaming() async throws {
        try await withFakeDaemon({ peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.once)
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"WATCH","enable":true,"minInterval":0,"distanceFilter":0}"#)
            peer.send(CannedLines.first3D)
            peer.send(PolicyLines.reduced)  // the accuracy changed: still authorized
            peer.send(PolicyLines.notDetermined)
            peer.send(#"{"class":"ERROR","request":"WATCH","message":"not authorized: not authorized yet"}"#)
            peer.waitForClose()
        }) { client, _ in
            #expect(try await client.requestAuthorization().status == .authorizedOnce)
            var updates: [LocationUpdate] = []
            do {
                for try await update in client.updates() { updates.append(update) }
                Issue.record("the stream ended without an error")
            } catch let error as LocationClientError {
                #expect(error == .server(request: "WATCH", message: "not authorized: not authorized yet"))
                #expect(error.meansNotAuthorized)
            }
            guard updates.count == 3 else {
                Issue.record("updates: \(updates)")
                return
            }
            #expect(updates[0].isLocation)
            #expect(updates[1] == .authorization(Authorization(status: .authorizedPersistent, accuracy: .reducedAccuracy,
                                                               reason: "persistent grant by agent root (uid 0)",
                                                               json: PolicyLines.reduced)))
            guard case .authorization(let lost) = updates[2] else {
                Issue.record("expected an authorization update, got \(updates[2])")
                return
            }
            #expect(lost.status == .notDetermined)
            #expect(lost.reason == "not authorized yet")
        }
    }

    @Test("WATCH and POLL without authorization: the status, then an error that meansNotAuthorized")
    func notAuthorized() async throws {
        try await withFakeDaemon({ peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.notDetermined)
            peer.send(#"{"class":"ERROR","request":"WATCH","message":"not authorized (notDetermined): not authorized yet"}"#)
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.notDetermined)
            peer.send(#"{"class":"ERROR","request":"POLL","message":"not authorized (notDetermined): not authorized yet"}"#)
            peer.waitForClose()
        }) { client, _ in
            var updates: [LocationUpdate] = []
            await #expect(throws: LocationClientError.server(request: "WATCH", message: "not authorized (notDetermined): not authorized yet")) {
                for try await update in client.updates() { updates.append(update) }
            }
            #expect(updates.map(\.authorizationStatus) == [.notDetermined])
            do {
                _ = try await client.requestLocation()
                Issue.record("expected an error")
            } catch let error as LocationClientError {
                #expect(error.meansNotAuthorized)
                #expect(!error.meansNoFixInTime)
            }
        }
    }
}

extension LocationUpdate {
    var isLocation: Bool {
        if case .location = self { return true }
        return false
    }

    var authorizationStatus: AuthorizationStatus? {
        if case .authorization(let a) = self { return a.status }
        return nil
    }
}
