#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationCore
import LocationPosix
@testable import LocationSources
import Testing

/// Issue 13: locationd in front of an existing gpsd passes gpsd's satellites through — the gpsd receiver fills
/// each fix's satellite list from libgps's skyview, as gpsd's own SKY reports list them.
@Suite("GpsdReceiver: satellites from gpsd's SKY (gpsfake)", .serialized)
struct GpsdSkyPassthroughTests {
    /// A satellite as gpsd identifies it: gnssid, svid, used.
    struct Seen: Hashable, Decodable {
        var gnssid: Int?
        var svid: Int?
        var used: Bool?
    }

    struct Report: Decodable {
        var `class`: String
        var satellites: [Seen]?
    }

    @Test("every satellite list our fixes carry is one gpspipe printed in a SKY of the same gpsd (GPS and GLONASS capture)")
    func satellitesAsGpspipeSeesThem() async throws {
        let tools = try GpsdTools.require()
        let scratch = try GpsdScratch()
        defer { scratch.remove() }
        let port = try freeTCPPort()
        // bu353-glonass: a SiRF receiver with GPS and GLONASS in view (GN talker); gpsd 3.22 lists both in SKY.
        let gpsfake = try ChildProcess(tools.gpsfake, ["-q", "-1", "-W", "1", "-c", "0.03", "-P", String(port),
                                                       sharedLog("bu353-glonass.log")],
                                       output: scratch.path + "/gpsfake.out", environment: scratch.gpsfakeEnvironment)
        defer { gpsfake.terminate() }
        try await waitForListener(port: port, gpsfake: gpsfake, output: scratch.read("gpsfake.out"))

        let log = GpsdEventLog()
        let receiver = GpsdReceiver(ReceiverConfiguration(name: "gpsd", source: .gpsd(host: "localhost", port: port, device: nil)))
        receiver.start(log.handler)
        defer { receiver.stop() }
        let connected = await eventually(timeout: 5) { receiver.status.isConnected }
        try #require(connected, "receiver not connected: \(receiver.status.state)")
        let gpspipe = try ChildProcess(tools.gpspipe, ["-w", "localhost:\(port)"], output: scratch.path + "/gpspipe.out")
        defer { gpspipe.terminate() }
        let ended = await gpspipe.waitForExit(timeout: 30)
        try #require(ended, "gpspipe still running after 30 s; gpsfake said: \(scratch.read("gpsfake.out"))")

        let decoder = JSONDecoder()
        let output = FileManager.default.contents(atPath: scratch.path + "/gpspipe.out") ?? Data()
        let skies = Set(output.split(separator: UInt8(ascii: "\n")).compactMap { line -> Set<Seen>? in
            guard let report = try? decoder.decode(Report.self, from: Data(line)), report.class == "SKY",
                  let satellites = report.satellites, !satellites.isEmpty else { return nil }
            return Set(satellites)
        })
        try #require(!skies.isEmpty, "gpspipe printed no SKY with satellites")
        #expect(skies.contains { sky in sky.contains { $0.gnssid == 6 } }, "no GLONASS satellite in gpsd's SKY")

        let ours = log.fixes.filter { !$0.satellites.isEmpty }
        try #require(ours.count >= 3, "only \(ours.count) fixes carried satellites")
        for fix in ours {
            // Passed through as gpsd numbers them: constellation = gnssid, prn = svid.
            let listed = Set(fix.satellites.map { Seen(gnssid: $0.constellation?.rawValue, svid: $0.prn, used: $0.used) })
            #expect(skies.contains(listed), "fix at \(fix.time?.iso8601 ?? "?"): \(listed.count) satellites not in any gpspipe SKY")
            #expect(fix.satellitesUsed == fix.satellites.filter(\.used).count)
        }
    }
}
