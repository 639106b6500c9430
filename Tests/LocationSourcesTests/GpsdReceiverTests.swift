#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import FoundationEssentials
import LocationCore
import LocationPosix
@testable import LocationSources
import Testing

/// The gpsd receiver against a real gpsd: gpsfake (Debian package gpsd-clients) starts a private gpsd on a
/// free TCP port and feeds it real captures through pseudo-terminals; gpspipe, gpsd's own client, watches
/// the same daemon, and our fixes must equal the TPV reports it prints.
@Suite("GpsdReceiver against gpsd (gpsfake)", .serialized)
struct GpsdReceiverTests {
    /// Captures gpsd decodes with dated positions: a Garmin (two TPVs per epoch, GGA then RMC) and a SiRF
    /// with GLONASS (GN talker).
    static let garmin = "garmin-10x.log"
    static let glonass = "bu353-glonass.log"

    @Test("fixes equal gpspipe's TPV reports epoch by epoch; the device filter keeps one device's fixes")
    func fixesEqualGpspipe() async throws {
        let tools = try GpsdTools.require()
        let scratch = try GpsdScratch()
        defer { scratch.remove() }
        let port = try freeTCPPort()
        let descriptorsBefore = await openDescriptorsAfterWarmUp()

        // -1: play each capture once; -c: 30 ms between sentences (about 6 s for both); -W 1: end 1 s
        // after the input is exhausted (gpsd is stopped then, and every client sees end of file).
        let gpsfake = try ChildProcess(tools.gpsfake, ["-q", "-1", "-W", "1", "-c", "0.03", "-P", String(port),
                                                       sharedLog(Self.garmin), sharedLog(Self.glonass)],
                                       output: scratch.path + "/gpsfake.out", environment: scratch.gpsfakeEnvironment)
        defer { gpsfake.terminate() }
        try await waitForListener(port: port, gpsfake: gpsfake, output: scratch.read("gpsfake.out"))
        // gpsfake registers its two ptys with gpsd right after gpsd starts.
        let devices = try await gpsdDevices(port: port, count: 2)

        let all = GpsdEventLog()
        let unfiltered = GpsdReceiver(ReceiverConfiguration(name: "gpsd-all", source: .gpsd(host: "localhost", port: port, device: nil)))
        unfiltered.start(all.handler)
        let one = GpsdEventLog()
        let filtered = GpsdReceiver(ReceiverConfiguration(name: "gpsd-one", source: .gpsd(host: "localhost", port: port, device: devices[1])))
        filtered.start(one.handler)
        defer {
            unfiltered.stop()
            filtered.stop()
        }
        let connected = await eventually(timeout: 5) { unfiltered.status.isConnected && filtered.status.isConnected }
        try #require(connected, "receivers not connected: \(unfiltered.status.state), \(filtered.status.state)")
        let gpspipe = try ChildProcess(tools.gpspipe, ["-w", "localhost:\(port)"], output: scratch.path + "/gpspipe.out")
        defer { gpspipe.terminate() }

        // gpspipe exits when gpsd goes away at the end of the captures; then our receivers must say so.
        let ended = await gpspipe.waitForExit(timeout: 30)
        try #require(ended, "gpspipe still running after 30 s; gpsfake said: \(scratch.read("gpsfake.out"))")
        #expect(await eventually(timeout: 5) { !unfiltered.status.isConnected && !filtered.status.isConnected })

        let reports = try GpspipeReport.load(scratch.path + "/gpspipe.out")
        let tpvs = reports.filter { $0.class == "TPV" }
        try #require(tpvs.contains { $0.device == devices[0] && $0.time != nil } && tpvs.contains { $0.device == devices[1] && $0.time != nil },
                     "gpsd decoded no dated fix from one of the captures; gpspipe printed \(reports.count) reports")

        let allCompared = compare(ours: all.fixes, theirs: tpvs, label: "unfiltered")
        #expect(allCompared >= 8, "only \(allCompared) epochs in common with gpspipe")
        let oneCompared = compare(ours: one.fixes, theirs: tpvs.filter { $0.device == devices[1] }, label: "device \(devices[1])")
        #expect(oneCompared >= 5, "only \(oneCompared) epochs of \(devices[1]) in common with gpspipe")
        let otherTimes = Set(tpvs.filter { $0.device != devices[1] }.compactMap(\.time))
        let leaked = one.fixes.compactMap { $0.time?.iso8601 }.filter { otherTimes.contains($0) }
        #expect(leaked.isEmpty, "the filtered receiver delivered another device's epochs: \(leaked)")

        // Every JSON report counts; the unfiltered receiver read at least every TPV and SKY gpspipe printed
        // after it connected (it connected before gpspipe).
        #expect(unfiltered.status.sentences >= tpvs.count)
        #expect(unfiltered.status.path == "localhost:\(port)")
        // gpsd has two devices: the unfiltered receiver names none (taken from each TPV, it would change at each
        // device's fixes, and tell their times); the filtered one names its own.
        #expect(unfiltered.status.device == nil)
        #expect(filtered.status.device == devices[1])
        #expect(unfiltered.status.type == "gpsd")
        if case let .unavailable(reason) = unfiltered.status.state {
            #expect(reason.hasPrefix("gpsd at localhost:\(port): "), "reason: \(reason)")
        }

        unfiltered.stop()
        filtered.stop()
        #expect(unfiltered.status.state == .stopped)
        #expect(await eventually(timeout: 3) { socketsOfThisProcess(connectedToPort: port) == 0 },
                "a socket to gpsd is still open after stop()")
        #expect(await eventually(timeout: 3) { descriptorsBefore.ownDescriptorsClosed() },
                "\(descriptorsBefore.leakReport())")
    }

    @Test("gpsd stopping makes it unavailable; a new gpsd on the same port brings the fixes back")
    func reconnectsWhenGpsdReturns() async throws {
        let tools = try GpsdTools.require()
        let scratch = try GpsdScratch()
        defer { scratch.remove() }
        let port = try freeTCPPort()
        let descriptorsBefore = await openDescriptorsAfterWarmUp()
        let path = "localhost:\(port)"
        // Without -1 gpsfake plays the capture in a loop, until it is stopped.
        let arguments = ["-q", "-c", "0.02", "-P", String(port), sharedLog(Self.garmin)]

        var gpsfake = try ChildProcess(tools.gpsfake, arguments, output: scratch.path + "/gpsfake-1.out",
                                       environment: scratch.gpsfakeEnvironment)
        defer { gpsfake.terminate() }
        try await waitForListener(port: port, gpsfake: gpsfake, output: scratch.read("gpsfake-1.out"))

        let log = GpsdEventLog()
        let receiver = GpsdReceiver(ReceiverConfiguration(name: "gpsd", source: .gpsd(host: "localhost", port: port, device: nil)))
        receiver.start(log.handler)
        defer { receiver.stop() }
        let firstFixes = await eventually(timeout: 15) { log.positions.count >= 3 }
        try #require(firstFixes, "no fixes from the first gpsd; gpsfake said: \(scratch.read("gpsfake-1.out"))")
        #expect(receiver.status.isConnected)
        #expect(receiver.status.fixes >= 3)

        // Stop gpsfake and its gpsd.
        gpsfake.terminate()
        let stoppedAt = monotonic()
        let noticed = await eventually(timeout: 5) { !receiver.status.isConnected }
        try #require(noticed, "still connected \(monotonic() - stoppedAt) s after gpsd stopped")
        #expect(monotonic() - stoppedAt < 3)
        guard case let .unavailable(reason) = receiver.status.state else {
            Issue.record("state \(receiver.status.state), expected unavailable")
            return
        }
        #expect(reason.hasPrefix("gpsd at \(path): "), "reason: \(reason)")
        // While nothing listens, retries are refused.
        #expect(await eventually(timeout: 5) { log.reasons.contains("gpsd at \(path): connection refused") },
                "reasons: \(log.reasons)")

        // A new gpsd on the same port; the receiver was not restarted.
        let before = log.positions.count
        gpsfake = try ChildProcess(tools.gpsfake, arguments, output: scratch.path + "/gpsfake-2.out",
                                   environment: scratch.gpsfakeEnvironment)
        try await waitForListener(port: port, gpsfake: gpsfake, output: scratch.read("gpsfake-2.out"))
        let resumed = await eventually(timeout: 15) { log.positions.count >= before + 3 }
        try #require(resumed, "fixes did not resume; state \(receiver.status.state); gpsfake said: \(scratch.read("gpsfake-2.out"))")
        #expect(receiver.status.isConnected)
        #expect(log.statuses.last?.state == .connected)

        receiver.stop()
        gpsfake.terminate()
        #expect(await eventually(timeout: 3) { socketsOfThisProcess(connectedToPort: port) == 0 },
                "a socket to gpsd is still open after stop()")
        #expect(await eventually(timeout: 3) { descriptorsBefore.ownDescriptorsClosed() },
                "\(descriptorsBefore.leakReport())")
    }

    @Test("nothing listening: unavailable, connection refused, and nothing left open")
    func refusedConnection() async throws {
        let port = try freeTCPPort()
        let descriptorsBefore = await openDescriptorsAfterWarmUp()
        let log = GpsdEventLog()
        let receiver = GpsdReceiver(ReceiverConfiguration(name: "nogpsd", source: .gpsd(host: "localhost", port: port, device: "/dev/ttyACM0")))
        receiver.start(log.handler)
        let expected = "gpsd at localhost:\(port): connection refused"
        #expect(await eventually(timeout: 3) { log.reasons.contains(expected) }, "reasons: \(log.reasons)")
        #expect(receiver.status.path == "localhost:\(port)")
        #expect(log.fixes.isEmpty)
        receiver.stop()
        #expect(receiver.status.state == .stopped)
        #expect(await eventually(timeout: 3) { descriptorsBefore.ownDescriptorsClosed() }, "\(descriptorsBefore.leakReport())")
    }

    @Test("an unknown host is reported as such")
    func unknownHost() async throws {
        let log = GpsdEventLog()
        let receiver = GpsdReceiver(ReceiverConfiguration(name: "nohost", source: .gpsd(host: "no-such-host.invalid", port: 2947, device: nil)))
        receiver.start(log.handler)
        #expect(await eventually(timeout: 5) { !log.reasons.isEmpty })
        receiver.stop()
        #expect(log.reasons.first?.hasPrefix("gpsd at no-such-host.invalid:2947: ") == true, "reasons: \(log.reasons)")
    }

    @Test("libgps timespec to UTCTime: dated, rounded to the millisecond",
          arguments: [
            (0, 0, "1970-01-01T00:00:00.000Z"),
            (1_898_787_045, 0, "2030-03-03T16:50:45.000Z"),
            (1_400_000_000, 123_456_789, "2014-05-13T16:53:20.123Z"),
            (1_400_000_000, 999_600_000, "2014-05-13T16:53:21.000Z"),
            (86_399, 999_499_999, "1970-01-01T23:59:59.999Z"),
            (-1, 0, "1969-12-31T23:59:59.000Z"),
          ])
    func timeConversion(seconds: Int, nanoseconds: Int, expected: String) {
        let time = GpsdReceiver.utcTime(seconds: seconds, nanoseconds: nanoseconds)
        #expect(time.iso8601 == expected)
        #expect(time.date != nil)
    }

    @Test("gpsd TPV.status to quality")
    func qualityMapping() {
        #expect(GpsdReceiver.quality(gpsdStatus: 0) == nil)
        #expect(GpsdReceiver.quality(gpsdStatus: 1) == .gps)
        #expect(GpsdReceiver.quality(gpsdStatus: 2) == .dgps)
        #expect(GpsdReceiver.quality(gpsdStatus: 3) == .rtkFixed)
        #expect(GpsdReceiver.quality(gpsdStatus: 4) == .rtkFloat)
        #expect(GpsdReceiver.quality(gpsdStatus: 5) == .deadReckoning)
        #expect(GpsdReceiver.quality(gpsdStatus: 8) == .simulated)
        for status in 1...9 where status != 6 {
            if let quality = GpsdReceiver.quality(gpsdStatus: status), status != 9 {
                #expect(quality.gpsdStatus == status, "status \(status)")
            }
        }
    }
}

// MARK: - Comparing with gpspipe

/// Compares our fixes with gpspipe's TPV reports, keyed by fix time: for each time the last report and
/// the last fix must agree (mode, lat, lon within 1e-9°, altHAE, altMSL within 1 mm, speed within 1 mm/s,
/// track within 1e-9°, each present in both or absent in both). The two clients connect at slightly
/// different moments, so an epoch only one of them has must come before every epoch both have.
/// Returns the number of epochs compared.
private func compare(ours fixes: [Fix], theirs reports: [GpspipeReport], label: String) -> Int {
    var ourOrder: [String] = []
    var ourLast: [String: Fix] = [:]
    for fix in fixes {
        guard let time = fix.time else { continue }
        let key = time.iso8601
        if ourLast[key] == nil { ourOrder.append(key) }
        ourLast[key] = fix
    }
    var theirOrder: [String] = []
    var theirLast: [String: GpspipeReport] = [:]
    for report in reports {
        guard let key = report.time else { continue }
        if theirLast[key] == nil { theirOrder.append(key) }
        theirLast[key] = report
    }
    func onlyLeading(_ order: [String], missingFrom other: [String: some Any], _ who: String) {
        guard let firstCommon = order.firstIndex(where: { other[$0] != nil }) else { return }
        let late = order[firstCommon...].filter { other[$0] == nil }
        #expect(late.isEmpty, "\(label): epochs only \(who) has, after the first common one: \(late)")
    }
    onlyLeading(ourOrder, missingFrom: theirLast, "we")
    onlyLeading(theirOrder, missingFrom: ourLast, "gpspipe")

    var compared = 0
    for key in theirOrder {
        guard let tpv = theirLast[key], let fix = ourLast[key] else { continue }
        compared += 1
        var problems: [String] = []
        func check(_ field: String, _ expected: Double?, _ actual: Double?, _ tolerance: Double) {
            switch (expected, actual) {
            case (nil, nil): return
            case let (e?, a?) where abs(e - a) <= tolerance: return
            default: problems.append("\(field) ours \(actual.map { "\($0)" } ?? "absent") gpsd \(expected.map { "\($0)" } ?? "absent")")
            }
        }
        if tpv.mode != fix.mode.rawValue { problems.append("mode ours \(fix.mode.rawValue) gpsd \(tpv.mode.map(String.init) ?? "absent")") }
        check("lat", tpv.lat, fix.latitude, 1e-9)
        check("lon", tpv.lon, fix.longitude, 1e-9)
        check("altHAE", tpv.altHAE, fix.altitudeHAE, 1e-3)
        check("altMSL", tpv.altMSL, fix.altitudeMSL, 1e-3)
        check("speed", tpv.speed, fix.speed, 1e-3)
        check("track", tpv.track, fix.track, 1e-9)
        #expect(problems.isEmpty, "\(label) \(key): \(problems.joined(separator: "; "))")
    }
    return compared
}

/// One line of `gpspipe -w`: the fields of a TPV report we compare (gpsd_json(5)).
private struct GpspipeReport: Decodable {
    var `class`: String
    var device: String?
    var mode: Int?
    var time: String?
    var lat: Double?
    var lon: Double?
    var altHAE: Double?
    var altMSL: Double?
    var speed: Double?
    var track: Double?

    static func load(_ path: String) throws -> [GpspipeReport] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        let decoder = JSONDecoder()
        return data.split(separator: UInt8(ascii: "\n")).compactMap { line in
            line.first == UInt8(ascii: "{") ? try? decoder.decode(GpspipeReport.self, from: Data(line)) : nil
        }
    }
}

// MARK: - Events

/// Records a receiver's events from its queue.
final class GpsdEventLog: Sendable {
    private let state = Locked<[ReceiverEvent]>([])

    var handler: @Sendable (ReceiverEvent) -> Void {
        { [self] event in state.withLock { $0.append(event) } }
    }

    var events: [ReceiverEvent] { state.withLock { $0 } }

    var fixes: [Fix] {
        events.compactMap { if case .fix(let f) = $0 { f } else { nil } }
    }

    var positions: [Fix] { fixes.filter(\.hasPosition) }

    var statuses: [ReceiverStatus] {
        events.compactMap { if case .status(let s) = $0 { s } else { nil } }
    }

    /// The reasons of every `unavailable` status, in order.
    var reasons: [String] {
        statuses.compactMap { if case .unavailable(let r) = $0.state { r } else { nil } }
    }
}

/// Waits until `condition` holds, checking every 20 ms, at most `timeout` seconds; returns whether it held.
func eventually(timeout: Double, _ condition: () -> Bool) async -> Bool {
    let end = monotonic() + timeout
    while monotonic() < end {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}

/// This process's descriptors at one moment, to check that a receiver closed what it opened.
///
/// `FileDescriptorOps.openCount()` must come back to its earlier value; but `swift test` runs the suites of
/// every test target in parallel in one process, and their ptys, pipes and Unix sockets come and go
/// meanwhile. So the count is accepted as back when it is, or when every descriptor opened since is not an
/// IP socket — the only kind a gpsd receiver opens (`gps_open`'s TCP socket and its connection probe).
private struct DescriptorSnapshot {
    let count: Int
    /// "fd:inode" of the IPv4/IPv6 sockets open then.
    let ipSockets: Set<String>

    init() {
        count = FileDescriptorOps.openCount()
        ipSockets = Self.currentIPSockets()
    }

    /// IP sockets open now that were not open at the snapshot.
    func newIPSockets() -> [String] { Self.currentIPSockets().subtracting(ipSockets).sorted() }

    func ownDescriptorsClosed() -> Bool {
        FileDescriptorOps.openCount() <= count || newIPSockets().isEmpty
    }

    func leakReport() -> String {
        "open descriptors: \(FileDescriptorOps.openCount()) now, \(count) before; IP sockets opened since and still open: \(newIPSockets())"
    }

    static func currentIPSockets() -> Set<String> {
        var result = Set<String>()
        guard let dir = opendir("/proc/self/fd") else { return result }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = FileDescriptorOps.entryName(entry)
            guard let fd = Int32(name) else { continue }
            var info = stat()
            guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { continue }
            var domain: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) == 0,
                  domain == AF_INET || domain == AF_INET6 else { continue }
            result.insert("\(fd):\(info.st_ino)")
        }
        return result
    }
}

/// A `DescriptorSnapshot`, taken after making libdispatch create what it creates once and keeps (its
/// timerfds, one per clock), so that the count after a receiver has run compares like with like.
private func openDescriptorsAfterWarmUp() async -> DescriptorSnapshot {
    let queue = DispatchQueue(label: "gpsd-test-warm-up")
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        queue.asyncAfter(deadline: .now() + 0.001) {
            queue.asyncAfter(wallDeadline: .now() + 0.001) {
                let timer = DispatchSource.makeTimerSource(queue: queue)
                timer.schedule(deadline: .now() + 0.001)
                timer.setEventHandler {
                    timer.cancel()
                    done.resume()
                }
                timer.resume()
            }
        }
    }
    try? await Task.sleep(for: .milliseconds(2))
    return DescriptorSnapshot()
}

