import LocationClient
import LocationWire
import Testing

/// LocationClient under Core Location's names (issue 14): `requestWhenInUseAuthorization()`,
/// `requestAlwaysAuthorization()`, `requestTemporaryFullAccuracyAuthorization(withPurposeKey:)`,
/// `authorizationStatus`, `accuracyAuthorization` — the requests they send and the replies they read.
@Suite("LocationClient: Core Location's names")
struct CoreLocationNamesTests {
    static let whenInUse = #"{"class":"AUTHORIZATION","status":"authorizedWhenInUse","accuracy":"full","reason":"When-In-Use grant by agent root (uid 0); the user has an active login session"}"#
    static let notInUse = #"{"class":"AUTHORIZATION","status":"authorizedWhenInUse","reason":"When In Use, and the user has no active login session: nothing is sent until one is active","inUse":false}"#
    static let always = #"{"class":"AUTHORIZATION","status":"authorizedPersistent","accuracy":"reduced","reason":"persistent grant by agent root (uid 0)"}"#

    @Test("each call sends its AUTHORIZE or FULLACCURACY and reads status, accuracy and inUse")
    func names() async throws {
        try await withFakeDaemon({ peer in
            peer.greet()
            for reply in [Self.whenInUse, Self.notInUse, Self.always, Self.always, Self.notInUse] {
                guard peer.readLine() != nil else { return }
                peer.send(reply)
            }
            peer.waitForClose()
        }) { client, server in
            let whenInUse = try await client.requestWhenInUseAuthorization(name: "Map")
            #expect(whenInUse.authorizationStatus == .authorizedWhenInUse && whenInUse.accuracyAuthorization == .fullAccuracy)
            #expect(whenInUse.inUse && whenInUse.isAuthorized)
            let paused = try await client.authorizationStatus()
            #expect(paused.authorizationStatus == .authorizedWhenInUse && !paused.inUse && paused.accuracyAuthorization == nil)
            let always = try await client.requestAlwaysAuthorization(accuracy: .reducedAccuracy)
            #expect(always.authorizationStatus == .authorizedAlways && always.accuracyAuthorization == .reducedAccuracy)
            _ = try await client.requestTemporaryFullAccuracyAuthorization(withPurposeKey: "Navigation")
            #expect(try await client.accuracyAuthorization() == nil)
            #expect(server.requests == [
                #"{"class":"AUTHORIZE","authorization":"whenInUse","accuracy":"full","name":"Map"}"#,
                #"{"class":"AUTHORIZATION"}"#,
                #"{"class":"AUTHORIZE","authorization":"persistent","accuracy":"reduced"}"#,
                #"{"class":"FULLACCURACY","purposeKey":"Navigation"}"#,
                #"{"class":"AUTHORIZATION"}"#,
            ])
        }
    }
}
