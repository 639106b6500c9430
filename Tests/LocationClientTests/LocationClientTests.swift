#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationCore
import LocationPosix
import LocationWire
import Testing
@testable import LocationClient

/// TPV lines as locationd sends them: `locationctl decode` output for gpsd's captures, with the
/// `device` and `accuracy` members the daemon adds.
enum CannedLines {
    /// haicom-305N.log, before the first fix.
    static let noFix = #"{"class":"TPV","device":"gnss0","mode":1,"time":"2007-04-08T09:52:55.810Z","accuracy":"full"}"#
    static let noFixAgain = #"{"class":"TPV","device":"gnss0","mode":1,"time":"2007-04-08T09:52:57.809Z","accuracy":"full"}"#
    /// haicom-305N.log, the first (2D) fix.
    static let first2D = #"{"class":"TPV","device":"gnss0","mode":2,"time":"2007-04-08T09:53:04.802Z","lat":-27.210866667,"lon":153.052328333,"altHAE":45.2,"altMSL":3,"geoidSep":42.2,"speed":0,"track":133.96,"eph":323,"accuracy":"full"}"#
    /// haicom-305N.log, the first 3D fix (the `locationctl watch` example line).
    static let first3D = #"{"class":"TPV","device":"gnss0","mode":3,"time":"2007-04-08T09:53:05.802Z","lat":-27.210911667,"lon":153.05225,"altHAE":45.2,"altMSL":3,"geoidSep":42.2,"speed":0.9929,"track":133.96,"eph":400.9,"accuracy":"full"}"#
    /// haicom-305N.log, a fix with a vertical error estimate.
    static let withEPV = #"{"class":"TPV","device":"gnss0","mode":3,"time":"2007-04-08T09:53:07.801Z","lat":-27.21081,"lon":153.052155,"altHAE":45.2,"altMSL":3,"geoidSep":42.2,"speed":0.89,"track":279.46,"climb":0,"eph":400.9,"epv":634.8,"accuracy":"full"}"#
    /// hemi.log: a receiver with heading (HDT), reduced for this client.
    static let withHeading = #"{"class":"TPV","device":"hemi","mode":3,"time":"2018-09-07T19:40:58.000Z","lat":42.363727402,"lon":-71.03239789,"altHAE":-26.271,"altMSL":6.786,"geoidSep":-33.057,"speed":0.0206,"track":346.88,"climb":-1.77,"eph":26.6,"heading":274.07,"accuracy":"reduced"}"#
}

/// The location a TPV line carries.
func parseTPV(_ line: String) -> Location? {
    guard case .tpv(let tpv)? = try? ServerMessage.decode(Array(line.utf8)) else { return nil }
    return tpv.location(json: line)
}

/// Runs `body` with a client connected to a fake server running `script`; checks the server finished.
func withFakeServer(_ script: @escaping @Sendable (FakePeer) -> Void,
                            _ body: (LocationClient, FakeServer) async throws -> Void) async throws {
    let server = try FakeServer(script: script)
    let client = try await LocationClient.connect(socketPath: server.path)
    try await body(client, server)
    client.close()
    #expect(await server.finished())
}

@Suite("LocationClient against a fake daemon")
struct LocationClientTests {
    @Test("connect reads VERSION and reports the server's release")
    func connectReadsVersion() async throws {
        let server = try FakeServer { peer in
            peer.send(#"{"class":"VERSION","release":"0.1.0","proto_major":1,"proto_minor":3}"#)
            peer.waitForClose()
        }
        let client = try await LocationClient.connect(socketPath: server.path)
        #expect(client.serverRelease == "0.1.0")
        #expect(client.serverProtocolMinor == 3)
        #expect(client.socketPath == server.path)
        client.close()
        #expect(await server.finished())
        #expect(server.requests.isEmpty)
    }

    @Test("a different proto_major is a protocolMismatch, and the connection is closed")
    func versionMismatch() async throws {
        let server = try FakeServer { peer in
            peer.send(#"{"class":"VERSION","release":"9.0.0","proto_major":2,"proto_minor":0}"#)
            peer.waitForClose()
        }
        await #expect(throws: LocationClientError.protocolMismatch(serverMajor: 2, supportedMajor: 1)) {
            _ = try await LocationClient.connect(socketPath: server.path)
        }
        #expect(await server.finished())
    }

    @Test("a greeting that is not VERSION is an invalidReply")
    func greetingNotVersion() async throws {
        let server = try FakeServer { peer in
            peer.send(CannedLines.first3D)
            peer.waitForClose()
        }
        await #expect {
            _ = try await LocationClient.connect(socketPath: server.path)
        } throws: { error in
            guard case .invalidReply(let text) = error as? LocationClientError else { return false }
            return text.contains("VERSION")
        }
        #expect(await server.finished())
    }

    @Test("an ERROR instead of the greeting (too many clients) is a server error")
    func greetingError() async throws {
        let server = try FakeServer { peer in
            peer.send(#"{"class":"ERROR","request":"?","message":"too many clients"}"#)
        }
        await #expect(throws: LocationClientError.server(request: "?", message: "too many clients")) {
            _ = try await LocationClient.connect(socketPath: server.path)
        }
        #expect(await server.finished())
    }

    @Test("no greeting within the timeout is timedOut")
    func greetingTimeout() async throws {
        let server = try FakeServer { peer in peer.waitForClose() }
        await #expect(throws: LocationClientError.timedOut) {
            _ = try await LocationClient.connect(socketPath: server.path, timeout: 0.2)
        }
        #expect(await server.finished())
    }

    @Test("a missing socket is cannotConnect with the path and ENOENT")
    func cannotConnect() async throws {
        let path = "/tmp/locationclient-test-missing-\(getpid())/locationd.sock"
        await #expect(throws: LocationClientError.cannotConnect(path: path, errno: .noSuchFileOrDirectory)) {
            _ = try await LocationClient.connect(socketPath: path)
        }
        let error = LocationClientError.cannotConnect(path: path, errno: .noSuchFileOrDirectory)
        #expect(error.description == "cannot connect to \(path): No such file or directory")
    }

    @Test("the socket path: argument, else LOCATIOND_SOCKET, else the default")
    func socketPathResolution() {
        #expect(LocationClient.resolveSocketPath("/tmp/x.sock") == "/tmp/x.sock")
        let environment = getenv(LocationClient.socketPathEnvironmentVariable).map { String(cString: $0) }
        let expected = environment.flatMap { $0.isEmpty ? nil : $0 } ?? "/run/locationd/locationd.sock"
        #expect(LocationClient.resolveSocketPath(nil) == expected)
        #expect(LocationClient.resolveSocketPath("") == expected)
    }

    @Test("updates() sends WATCH, yields locations with their values and fix-state changes, unsubscribes")
    func updatesYieldLocationsAndStates() async throws {
        try await withFakeServer({ peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"WATCH","enable":true,"minInterval":1,"distanceFilter":10}"#)
            peer.send(CannedLines.noFix)
            peer.send(CannedLines.noFixAgain)
            peer.send(CannedLines.first2D)
            peer.send(CannedLines.first3D)
            peer.send(#"{"class":"STATE","fix":false,"reason":"no receiver has a fix"}"#)
            peer.send(#"{"class":"STATE","fix":true}"#)
            peer.send(#"{"class":"SKY","device":"gnss0","hdop":1.2}"#)
            peer.send(CannedLines.withHeading)
            peer.waitForClose()
        }) { client, server in
            var updates: [LocationUpdate] = []
            for try await update in client.updates(minInterval: 1, distanceFilter: 10) {
                updates.append(update)
                if updates.count == 7 { break }
            }
            guard updates.count == 7 else {
                Issue.record("got \(updates)")
                return
            }
            #expect(updates[0] == .state(fix: false, reason: nil))
            #expect(updates[1] == .state(fix: true, reason: nil))
            guard case .location(let first) = updates[2], case .location(let second) = updates[3],
                  case .location(let third) = updates[6] else {
                Issue.record("expected locations, got \(updates)")
                return
            }
            #expect(updates[4] == .state(fix: false, reason: "no receiver has a fix"))
            #expect(updates[5] == .state(fix: true, reason: nil))

            #expect(first.mode == .twoDimensional)
            // eph 323 m (~95 %, gpsd's) is a 68 % radius of 323 × 0.61673 m (docs/PROTOCOL.md "Accuracy").
            #expect(abs((first.horizontalAccuracy ?? 0) - 199.20379) < 1e-6)
            #expect(first.speed == 0)

            #expect(second.latitude == -27.210911667)
            #expect(second.longitude == 153.05225)
            #expect(second.altitude == 3)
            #expect(second.ellipsoidalAltitude == 45.2)
            #expect(abs((second.horizontalAccuracy ?? 0) - 247.247057) < 1e-6)
            #expect(second.verticalAccuracy == nil)
            #expect(second.course == 133.96)
            #expect(second.speed == 0.9929)
            #expect(second.heading == nil)
            #expect(second.timestamp?.iso8601 == "2007-04-08T09:53:05.802Z")
            #expect(second.accuracyAuthorization == .fullAccuracy)
            #expect(second.device == "gnss0")
            #expect(second.mode == .threeDimensional)
            #expect(second.json == CannedLines.first3D)

            #expect(third.heading == 274.07)
            #expect(third.climb == -1.77)
            #expect(third.accuracyAuthorization == .reducedAccuracy)
            #expect(third.device == "hemi")
            #expect(abs(third.distance(from: second) - 15_709_099) < 10)

            // Breaking out of the loop ended the subscription: the client said so before closing.
            client.close()
            #expect(await server.finished())
            let requests = server.requests
            #expect(requests.first == #"{"class":"WATCH","enable":true,"minInterval":1,"distanceFilter":10}"#)
            #expect(requests.dropFirst().first == #"{"class":"WATCH","enable":false}"#)
        }
    }

    @Test("a refused WATCH ends the updates with a server error")
    func watchRefused() async throws {
        try await withFakeServer({ peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"ERROR","request":"WATCH","message":"minInterval must be a number of seconds ≥ 0"}"#)
            peer.waitForClose()
        }) { client, _ in
            await #expect(throws: LocationClientError.server(request: "WATCH", message: "minInterval must be a number of seconds ≥ 0")) {
                for try await _ in client.updates(minInterval: -1) {}
            }
        }
    }

    @Test("updates end with disconnected when the daemon goes away, and normally after close()")
    func updatesEnd() async throws {
        let served = Locked(0)
        let server = try FakeServer(connections: 2) { peer in
            let number = served.withLock { n in
                n += 1
                return n
            }
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(CannedLines.first3D)
            // First connection: the daemon hangs up after one fix. Second: it waits for the client.
            if number == 2 { peer.waitForClose() }
        }
        let client = try await LocationClient.connect(socketPath: server.path)
        var count = 0
        await #expect(throws: LocationClientError.disconnected) {
            for try await _ in client.updates() { count += 1 }
        }
        #expect(count == 1)

        let second = try await LocationClient.connect(socketPath: server.path)
        let stream = second.updates()
        var iterator = stream.makeAsyncIterator()
        let update = try await iterator.next()
        #expect(update.map { if case .location = $0 { true } else { false } } == true)
        second.close()
        #expect(await server.finished())
    }

    @Test("requestLocation() sends POLL and returns the fix; an ERROR becomes .server")
    func requestLocation() async throws {
        try await withFakeServer({ peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"POLL","tpv":["# + CannedLines.withEPV + "]}")
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"ERROR","request":"POLL","message":"no fix within 1 s"}"#)
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"ERROR","request":"POLL","message":"not authorized: no rule allows this client"}"#)
            peer.waitForClose()
        }) { client, server in
            let location = try await client.requestLocation(timeout: 5)
            #expect(location.latitude == -27.21081)
            #expect(location.longitude == 153.052155)
            // epv 634.8 m (~95 %) is 634.8 × 0.50739 m at 68 %.
            #expect(abs((location.verticalAccuracy ?? 0) - 322.091172) < 1e-6)
            #expect(location.climb == 0)
            #expect(location.timestamp?.iso8601 == "2007-04-08T09:53:07.801Z")
            #expect(location.json == CannedLines.withEPV)
            #expect(server.requests.first == #"{"class":"POLL","timeout":5}"#)

            do {
                _ = try await client.requestLocation(timeout: 1)
                Issue.record("expected an error")
            } catch let error as LocationClientError {
                #expect(error == .server(request: "POLL", message: "no fix within 1 s"))
                #expect(error.meansNoFixInTime)
            }

            do {
                _ = try await client.requestLocation()
                Issue.record("expected an error")
            } catch let error as LocationClientError {
                #expect(error == .server(request: "POLL", message: "not authorized: no rule allows this client"))
                #expect(!error.meansNoFixInTime)
            }
        }
    }
}
