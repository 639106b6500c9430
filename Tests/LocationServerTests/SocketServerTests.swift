#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationPosix
import Testing

/// End-to-end: the real locationd binary on a replay receiver, real clients on its socket.
@Suite("Location socket, end to end", .serialized)
struct SocketServerTests {
    static func replay(rate: String = "10", loop: Bool = true, access: String = "always") -> String {
        """
        [receiver demo]
        type = replay
        file = \(DaemonProcess.demoCapture)
        rate = \(rate)
        loop = \(loop ? "yes" : "no")

        [policy]
        access = \(access)
        accuracy = full
        """
    }

    @Test("VERSION on connect; WATCH streams TPVs equal to the decoder's fixes")
    func watchMatchesDecode() throws {
        let daemon = try DaemonProcess(config: Self.replay(rate: "20"))
        let client = try RawClient(daemon.socketPath)
        let version = try #require(client.message("VERSION"))
        #expect(version["proto_major"]?.number == 1)
        client.send(#"{"class":"WATCH","enable":true}"#)
        #expect(client.message("WATCH")?["enable"]?.bool == true)
        let expected = decodedFixes(DaemonProcess.demoCapture)
        var compared = 0
        for _ in 0..<40 {
            guard let tpv = client.message("TPV"), let time = tpv["time"]?.string else { break }
            let fix = try #require(expected[time])
            #expect(tpv["lat"]?.number.map { abs($0 - fix.latitude!) < 1e-9 } == true)
            #expect(tpv["lon"]?.number.map { abs($0 - fix.longitude!) < 1e-9 } == true)
            if let alt = fix.altitudeMSL { #expect(tpv["altMSL"]?.number.map { abs($0 - alt) < 1e-4 } == true) }
            if let speed = fix.speed { #expect(tpv["speed"]?.number.map { abs($0 - speed) < 1e-4 } == true) }
            #expect(tpv["accuracy"]?.string == "full")
            #expect(tpv["device"]?.string == "demo")
            compared += 1
        }
        #expect(compared == 40)
    }

    @Test("minInterval and distanceFilter are honoured")
    func filters() throws {
        let daemon = try DaemonProcess(config: Self.replay(rate: "20"))
        let slow = try RawClient(daemon.socketPath)
        slow.send(#"{"class":"WATCH","minInterval":0.5}"#)
        var arrivals: [Double] = []
        let end = monotonic() + 3
        while monotonic() < end, slow.message("TPV", timeout: 1) != nil { arrivals.append(monotonic()) }
        // At 20 fixes a second, 3 s would bring ~60; at most one per 0.5 s may arrive.
        #expect(arrivals.count >= 3 && arrivals.count <= 8, "\(arrivals.count) reports")
        let gaps = zip(arrivals.dropFirst(), arrivals).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 >= 0.45 }, "gaps \(gaps)")

        let far = try RawClient(daemon.socketPath)
        far.send(#"{"class":"WATCH","distanceFilter":5}"#)
        var positions: [(Double, Double)] = []
        for _ in 0..<4 {
            guard let tpv = far.message("TPV", timeout: 10), let la = tpv["lat"]?.number, let lo = tpv["lon"]?.number else { break }
            positions.append((la, lo))
        }
        #expect(positions.count == 4)
        for (a, b) in zip(positions, positions.dropFirst()) {
            #expect(Geodesy.distance(latitude1: a.0, longitude1: a.1, latitude2: b.0, longitude2: b.1) >= 5)
        }
    }

    @Test("POLL returns a fix newer than the request")
    func poll() throws {
        let daemon = try DaemonProcess(config: Self.replay(rate: "5"))
        let watcher = try RawClient(daemon.socketPath)
        watcher.send(#"{"class":"WATCH"}"#)
        let seen = try #require(watcher.message("TPV", timeout: 10)?["time"]?.string)
        let client = try RawClient(daemon.socketPath)
        client.send(#"{"class":"POLL","timeout":5}"#)
        let reply = try #require(client.message("POLL", timeout: 6))
        guard case .array(let tpvs)? = reply["tpv"], case .object(let tpv)? = tpvs.first else {
            Issue.record("POLL without tpv: \(reply)")
            return
        }
        let time = try #require(tpv["time"]?.string)
        #expect(time > seen)
        // gpsd's spelling works too.
        client.send("?POLL;")
        #expect(client.message("POLL", timeout: 6) != nil)
    }

    @Test("STATUS lists the receivers and clients")
    func status() throws {
        let daemon = try DaemonProcess(config: Self.replay())
        let client = try RawClient(daemon.socketPath)
        client.send(#"{"class":"STATUS"}"#)
        let status = try #require(client.message("STATUS"))
        #expect(status["clients"]?.number == 1)
        guard case .array(let receivers)? = status["receivers"], case .object(let r)? = receivers.first else {
            Issue.record("no receivers: \(status)")
            return
        }
        #expect(r["name"]?.string == "demo")
        #expect(r["type"]?.string == "replay")
        #expect(r["state"]?.string == "connected")
    }

    @Test("bad requests get an ERROR naming the problem and keep the connection", arguments: [
        ("not json at all", "?", "invalid JSON"),
        (#"{"class":"FROB"}"#, "FROB", "unknown class"),
        (#"{"class":"WATCH","minInterval":"soon"}"#, "WATCH", "minInterval"),
        (#"{"class":"WATCH","enable":1}"#, "WATCH", "enable"),
        (#"{"class":"POLL","timeout":-1}"#, "POLL", "timeout"),
        (#"{"enable":true}"#, "?", "class"),
        (#"[1,2,3]"#, "?", "object"),
    ])
    func badRequests(line: String, request: String, mentions: String) throws {
        let daemon = try DaemonProcess(config: Self.replay())
        let client = try RawClient(daemon.socketPath)
        client.send(line)
        let error = try #require(client.message("ERROR"))
        #expect(error["request"]?.string == request)
        #expect(error["message"]?.string?.contains(mentions) == true, "\(error)")
        client.send(#"{"class":"STATUS"}"#)
        #expect(client.message("STATUS") != nil)
    }

    @Test("a request over 16 KiB gets an ERROR, the connection stays; 101 bad requests close it")
    func limits() throws {
        let daemon = try DaemonProcess(config: Self.replay())
        let client = try RawClient(daemon.socketPath)
        client.sendRaw(Array(repeating: UInt8(ascii: "x"), count: 20_000) + [10])
        #expect(client.message("ERROR")?["message"]?.string?.contains("16384") == true)
        client.send(#"{"class":"STATUS"}"#)
        #expect(client.message("STATUS") != nil)
        for _ in 0..<101 { client.send("{") }
        #expect(client.closedByServer(timeout: 5))
        let other = try RawClient(daemon.socketPath)
        other.send(#"{"class":"STATUS"}"#)
        #expect(other.message("STATUS") != nil)
    }

    @Test("max-clients: the next client gets an ERROR and is closed")
    func maxClients() throws {
        let daemon = try DaemonProcess(config: Self.replay(), daemonKeys: "max-clients = 2")
        let a = try RawClient(daemon.socketPath), b = try RawClient(daemon.socketPath)
        #expect(a.message("VERSION") != nil && b.message("VERSION") != nil)
        let c = try RawClient(daemon.socketPath)
        #expect(c.message("ERROR")?["message"]?.string?.contains("too many clients") == true)
        #expect(c.closedByServer(timeout: 3))
    }

    @Test("a client without authorization receives not one byte of location")
    func deniedGetsNothing() throws {
        let daemon = try DaemonProcess(config: Self.replay(rate: "20", access: "deny"))
        let client = try RawClient(daemon.socketPath)
        client.send(#"{"class":"WATCH","enable":true}"#)
        #expect(client.message("ERROR")?["request"]?.string == "WATCH")
        client.send(#"{"class":"POLL","timeout":1}"#)
        #expect(client.message("ERROR")?["request"]?.string == "POLL")
        _ = client.line(timeout: 2)
        let text = String(decoding: client.received, as: UTF8.self)
        #expect(!text.contains("\"lat\"") && !text.contains("\"lon\"") && !text.contains("TPV"))
    }

    @Test("a stuck client does not delay the others and is dropped after the client timeout")
    func stuckClient() throws {
        let daemon = try DaemonProcess(config: Self.replay(rate: "20"), daemonKeys: "client-timeout = 2s")
        func gaps(_ client: RawClient, count: Int) -> [Double] {
            var arrivals: [Double] = []
            for _ in 0..<count { if client.message("TPV", timeout: 5) != nil { arrivals.append(monotonic()) } }
            return zip(arrivals.dropFirst(), arrivals).map { $0 - $1 }.sorted()
        }
        let good = try RawClient(daemon.socketPath)
        good.send(#"{"class":"WATCH"}"#)
        let before = gaps(good, count: 21)
        let stuck = try RawClient(daemon.socketPath, receiveBuffer: 4096)
        stuck.send(#"{"class":"WATCH"}"#)
        let during = gaps(good, count: 21)
        let medianBefore = before[before.count / 2], medianDuring = during[during.count / 2]
        #expect(abs(medianDuring - medianBefore) < 0.010, "median gap \(medianBefore) s without, \(medianDuring) s with a stuck client")
        // The stuck client, reading at last (after the 2 s timeout), finds the server gave up on it.
        usleep(3_000_000)
        #expect(stuck.closedByServer(timeout: 6))
        #expect(daemon.log.contains("read nothing for 2 s"))
        // A client that vanishes mid-stream (EPIPE) does not kill the daemon.
        for _ in 0..<5 {
            let c = try RawClient(daemon.socketPath)
            c.send(#"{"class":"WATCH"}"#)
        }
        usleep(300_000)
        #expect(good.message("TPV") != nil)
    }

    @Test("with no fix at all, a client that leaves its VERSION unread is still cut after the client timeout")
    func stuckClientWithoutFixes() throws {
        // A receiver that never delivers (its device does not exist): no fix's turn runs the sweep, so only
        // the front's poller thread does, every quarter of the timeout.
        let daemon = try DaemonProcess(config: """
            [receiver absent]
            type = serial
            path = /nonexistent/ttyGNSS

            [policy]
            access = always
            accuracy = full
            """, daemonKeys: "client-timeout = 2s")
        let stuck = try RawClient(daemon.socketPath)
        // Looked at without reading: VERSION waits, and the server has not hung up (RDHUP) before 2 s.
        func hungUp() -> Bool {
            let rdhup: Int16 = 0x2000  // POLLRDHUP (Linux <bits/poll.h>; Glibc hides it without _GNU_SOURCE)
            var p = pollfd(fd: stuck.fd, events: Int16(POLLIN) | rdhup, revents: 0)
            return Glibc.poll(&p, 1, 0) == 1 && p.revents & (rdhup | Int16(POLLHUP)) != 0
        }
        usleep(1_500_000)
        #expect(!hungUp(), "cut before the client timeout")
        // Due after 2 s, swept within a quarter of it (the poller's tick): closed by 2.5 s; 4.5 s for a busy machine.
        usleep(3_000_000)
        #expect(hungUp(), "not cut 4.5 s after it connected")
        #expect(stuck.closedByServer(timeout: 5))
        #expect(daemon.log.contains("read nothing for 2 s"))
    }

    @Test("a WATCH with minInterval 188888888888888888888.0 (found by FuzzServer) gets an ERROR; the daemon keeps serving")
    func hugeMinIntervalEndToEnd() throws {
        let daemon = try DaemonProcess(config: Self.replay(rate: "20"))
        let client = try RawClient(daemon.socketPath)
        #expect(client.message("VERSION") != nil)
        client.send(#"{"class":"WATCH","enable":true,"minInterval":188888888888888888888.0,"distanceFilter":10}"#)
        #expect(client.message("ERROR")?["message"]?.string == "minInterval must be a number of seconds in [0, 86400]")
        client.send(#"{"class":"WATCH","enable":true,"minInterval":1}"#)
        #expect(client.message("TPV") != nil, "the daemon still serves")
    }

    @Test("SIGTERM: clients are told and the daemon exits 0")
    func termination() throws {
        let daemon = try DaemonProcess(config: Self.replay())
        let client = try RawClient(daemon.socketPath)
        #expect(client.message("VERSION") != nil)
        let status = daemon.stop()
        #expect(status == 0)
        #expect(client.message("ERROR")?["message"]?.string?.contains("stopping") == true)
    }
}
