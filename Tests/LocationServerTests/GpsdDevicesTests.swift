import LocationCore
import LocationWire
import Testing
@testable import LocationServer

/// What `DEVICES` tells a gpsd client of the receivers (docs/GPSD.md "The policy as on the native front").
@Suite("gpsd front: DEVICES by what the client may see")
struct GpsdDevicesTests {
    static let serial = ReceiverReport(name: "gnss0", type: "serial", path: "/dev/ttyUSB0", state: "connected", speed: 4800,
                                       connectedSince: UTCTime(unixSeconds: 1_764_480_000), sentences: 12, fixes: 2,
                                       errors: 0, priority: 0)

    @Test("a client that may see the location gets the receiver's state; another its path alone, no speed")
    func stateOnlyToThoseWhoSeeIt() throws {
        let seen = try #require(GpsdFrontState.devices([Self.serial], withState: true).first)
        #expect(seen.path == "/dev/ttyUSB0" && seen.bitsPerSecond == 4800 && seen.flags == 1 && seen.activated != nil)
        // With `speed = auto` the speed appears once the receiver was opened and its speed found: that is state too
        // (found 2026-12-03 by an attacker helper as uid nobody).
        let blind = try #require(GpsdFrontState.devices([Self.serial], withState: false).first)
        #expect(blind.path == "/dev/ttyUSB0" && blind.bitsPerSecond == nil && blind.flags == nil && blind.activated == nil)
    }
}
