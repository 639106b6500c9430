import FoundationEssentials
import LocationCore
import LocationPosix
import LocationWire
import Testing
@testable import LocationClient

/// docs/PROTOCOL.md "SKY": `updates(satellites: true)` asks for SKY and yields each as `.satellites`.
@Suite("LocationClient: satellites")
struct LocationClientSatellitesTests {
    @Test("updates(satellites: true) sends WATCH with satellites and yields the SKY after the location")
    func satellites() async throws {
        try await withFakeServer({ peer in
            peer.greet()
            guard let watch = peer.readLine() else { return }
            #expect(watch.contains(#""satellites":true"#))
            peer.send(#"{"class":"WATCH","enable":true,"minInterval":0,"distanceFilter":0,"satellites":true}"#)
            peer.send(CannedLines.first3D)
            // The daemon's SKY for the same epoch of haicom-305N.log (gpsd's .chk: 4 used of 12, HDOP 21.1).
            peer.send(#"{"class":"SKY","device":"gnss0","time":"2007-04-08T09:53:05.802Z","hdop":21.1,"nSat":2,"uSat":1,"satellites":[{"PRN":5,"gnssid":0,"el":45,"az":347,"ss":44,"used":true},{"PRN":14,"gnssid":0,"el":32,"az":72,"ss":0,"used":false}]}"#)
            peer.waitForClose()
        }) { client, server in
            var updates: [LocationUpdate] = []
            for try await update in client.updates(satellites: true) {
                updates.append(update)
                if updates.count == 2 { break }
            }
            guard updates.count == 2, case .location = updates[0], case .satellites(let view) = updates[1] else {
                Issue.record("got \(updates)")
                return
            }
            #expect(view.used == 1 && view.visible == 2)
            #expect(view.dop.horizontal == 21.1)
            #expect(view.satellites.first == Satellite(prn: 5, constellation: .gps, elevation: 45, azimuth: 347, signalToNoise: 44, used: true))
            #expect(view.json?.hasPrefix(#"{"class":"SKY""#) == true)
        }
    }
}
