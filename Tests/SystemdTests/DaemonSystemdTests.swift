#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import Testing

extension SystemdIntegration {
    /// The real `locationd` binary under systemd's protocols: socket activation, sd_notify readiness,
    /// status and watchdog, SIGHUP reload, SIGTERM.
    @Suite("locationd under systemd")
    struct DaemonSystemdTests {
        @Test("socket activation: the first connection starts the daemon on the passed socket, and it is served")
        func socketActivation() async throws {
            let activate = try requireTool("systemd-socket-activate", package: "systemd")
            let dir = try TemporaryDirectory()
            let socketPath = dir.path + "/locationd.sock"
            dir.write("locationd.conf", daemonConfig(directory: dir.path))
            let child = try ChildProcess([activate, "-l", socketPath, Repository.locationd, "--config", dir.path + "/locationd.conf"],
                                         directory: dir.path, name: "activate")
            #expect(await eventually(timeout: 5) { FileManager.default.fileExists(atPath: socketPath) }, "systemd-socket-activate made no socket")
            // Nothing started yet: the process is still systemd-socket-activate, the daemon has logged nothing.
            await pause(0.2)
            #expect(child.executable == activate)
            #expect(!child.errors.contains("started"), "\(child.errors)")

            let client = try LineClient(socketPath)
            let version = try #require(await client.line(timeout: 10), "no greeting; log:\n\(child.errors)")
            #expect(version.contains("\"class\":\"VERSION\""))
            #expect(child.executable == Repository.locationd, "the daemon replaced systemd-socket-activate in place")
            #expect(child.errors.contains("socket.activated=yes"), "\(child.errors)")

            // It serves: a location arrives, and a second client is greeted too.
            client.send(#"{"class":"WATCH","enable":true}"#)
            #expect(await client.count("TPV", during: 3).count > 0, "no location; log:\n\(child.errors)")
            let second = try LineClient(socketPath)
            #expect(await second.line(timeout: 5)?.contains("\"class\":\"VERSION\"") == true)

            // SIGTERM: exit 0; the socket belongs to the service manager and stays.
            child.kill(SIGTERM)
            let status = try #require(await child.wait(timeout: 2), "did not exit within 2 s")
            #expect(exitStatus(status) == 0)
            #expect(FileManager.default.fileExists(atPath: socketPath), "the daemon removed the socket systemd owns")
        }

        @Test("socket activation with a TCP socket named gpsd (locationd-gpsd.socket): gpspipe's connection starts the daemon, which speaks gpsd's protocol on it")
        func socketActivationGpsd() async throws {
            let activate = try requireTool("systemd-socket-activate", package: "systemd")
            let gpspipe = try requireTool("gpspipe", package: "gpsd-clients")
            let probe = try TCPListener(address: try #require(TCPAddress(parsing: "127.0.0.1:0")))
            let port = try #require(probe.address?.port)
            probe.close()
            let dir = try TemporaryDirectory()
            let socketPath = dir.path + "/locationd.sock"
            dir.write("locationd.conf", daemonConfig(directory: dir.path))
            let child = try ChildProcess([activate, "-l", socketPath, "-l", "127.0.0.1:\(port)", "--fdname=locationd:gpsd",
                                          Repository.locationd, "--config", dir.path + "/locationd.conf"],
                                         directory: dir.path, name: "activate")
            #expect(await eventually(timeout: 5) { FileManager.default.fileExists(atPath: socketPath) }, "systemd-socket-activate made no socket")
            let result = try await runCommand([gpspipe, "-w", "-n", "5", "127.0.0.1:\(port)"], timeout: 20)
            #expect(result.output.hasPrefix(#"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3"#), "\(result.output)\n\(child.errors)")
            #expect(result.output.contains(#"{"class":"WATCH","enable":true,"json":true"#), "\(result.output)")
            #expect(child.errors.contains("socket.activated=yes"), "\(child.errors)")
            #expect(!child.errors.contains("closing a descriptor systemd passed"), "\(child.errors)")
            child.kill(SIGTERM)
            _ = await child.wait(timeout: 2)
        }

        @Test("socket activation with a Unix socket named nmea, passed first: a connection to it starts the daemon, which streams NMEA on it and serves its protocol on the other")
        func socketActivationNMEA() async throws {
            let activate = try requireTool("systemd-socket-activate", package: "systemd")
            let dir = try TemporaryDirectory()
            let socketPath = dir.path + "/locationd.sock", nmeaPath = dir.path + "/nmea.sock"
            dir.write("locationd.conf", daemonConfig(directory: dir.path, rate: "20"))
            // Named, so not taken for the native socket although it comes first.
            let child = try ChildProcess([activate, "-l", nmeaPath, "-l", socketPath, "--fdname=nmea:locationd",
                                          Repository.locationd, "--config", dir.path + "/locationd.conf"],
                                         directory: dir.path, name: "activate")
            #expect(await eventually(timeout: 5) { FileManager.default.fileExists(atPath: nmeaPath) }, "systemd-socket-activate made no socket")
            let reader = try LineClient(nmeaPath)
            var sentences: [String] = []
            let end = monotonic() + 10
            while sentences.count < 6, monotonic() < end, let line = await reader.line(timeout: max(0, end - monotonic())) {
                sentences.append(line)
            }
            #expect(sentences.contains { $0.hasPrefix("$GPRMC,") } && sentences.allSatisfy { $0.hasPrefix("$GP") }, "\(sentences)\n\(child.errors)")
            let client = try LineClient(socketPath)
            #expect(await client.line(timeout: 5)?.contains("\"class\":\"VERSION\"") == true)
            #expect(child.errors.contains("socket.activated=yes"), "\(child.errors)")
            #expect(!child.errors.contains("closing a descriptor systemd passed"), "\(child.errors)")
            child.kill(SIGTERM)
            _ = await child.wait(timeout: 2)
            #expect(FileManager.default.fileExists(atPath: nmeaPath), "the daemon removed the NMEA socket systemd owns")
        }

        @Test("socket activation with a descriptor that is not a listening Unix stream socket is refused")
        func socketActivationWrongSocket() async throws {
            let activate = try requireTool("systemd-socket-activate", package: "systemd")
            let dir = try TemporaryDirectory()
            dir.write("locationd.conf", daemonConfig(directory: dir.path))
            // A datagram socket: systemd-socket-activate --datagram starts the daemon on the first datagram.
            let socketPath = dir.path + "/dgram.sock"
            let child = try ChildProcess([activate, "--datagram", "-l", socketPath, Repository.locationd, "--config", dir.path + "/locationd.conf"],
                                         directory: dir.path, name: "activate")
            #expect(await eventually(timeout: 5) { FileManager.default.fileExists(atPath: socketPath) })
            let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            defer { close(fd) }
            var address = try unixAddress(socketPath)
            let sent = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, "x", 1, 0, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            #expect(sent == 1)
            let status = try #require(await child.wait(timeout: 10), "still running")
            #expect(exitStatus(status) == 71)
            #expect(child.errors.contains("none a listening AF_UNIX SOCK_STREAM socket"), "\(child.errors)")
        }

        @Test("readiness: READY=1 once the socket listens, STATUS= with fix and clients, WATCHDOG=1 every half WatchdogSec, STOPPING=1")
        func readinessStatusWatchdog() async throws {
            let dir = try TemporaryDirectory()
            let socketPath = dir.path + "/locationd.sock"
            dir.write("locationd.conf", daemonConfig(directory: dir.path))
            let notify = try NotifySocket(path: dir.path + "/notify.sock")
            // WATCHDOG_PID must name the daemon itself: the shell sets it to its own pid, then execs.
            let child = try ChildProcess(["/bin/sh", "-c", #"export WATCHDOG_PID=$$; exec "$@""#, "sh",
                                          Repository.locationd, "--config", dir.path + "/locationd.conf"],
                                         environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "1000000"],
                                         directory: dir.path, name: "daemon")
            let start = monotonic()
            let (before, ready) = await notify.receive(until: "READY=1", timeout: 10)
            try #require(ready, "no READY=1; got \(before.map(\.text)); log:\n\(child.errors)")
            #expect(ListeningSocket.isLive(socketPath), "READY=1 came before the socket listened")
            // ... and the receivers were opened: none is still starting.
            let probe = try LineClient(socketPath)
            probe.send(#"{"class":"STATUS"}"#)
            let reply = try #require(await probe.message("STATUS", timeout: 5), "no STATUS reply")
            #expect(reply.contains(#""state":"connected""#) && !reply.contains(#""state":"starting""#), "\(reply)")
            #expect(before.count == 1, "messages before READY=1: \(before.map(\.text))")
            let readyMessage = before.last!.text
            #expect(readyMessage.contains("STATUS="), "READY=1 carries the status: \(readyMessage)")
            print("readiness after \(milliseconds(before.last!.at - start)) ms: \(readyMessage.replacing("\n", with: " | "))")

            // Watchdog: WATCHDOG_USEC=1 s, so a keep-alive every 0.5 s. A client connects meanwhile.
            var watchdogs: [Double] = []
            var statuses: [String] = []
            let client = try LineClient(socketPath)
            for m in await notify.collect(for: 4) {
                for line in m.text.split(separator: "\n") {
                    if line == "WATCHDOG=1" { watchdogs.append(m.at) }
                    if line.hasPrefix("STATUS=") { statuses.append(String(line.dropFirst(7))) }
                }
            }
            let intervals = zip(watchdogs.dropFirst(), watchdogs).map { $0 - $1 }
            print("WATCHDOG=1 intervals: \(intervals.map { milliseconds($0) }.map(String.init).joined(separator: " ")) ms; STATUS=: \(statuses)")
            #expect(watchdogs.count >= 6 && watchdogs.count <= 9, "\(watchdogs.count) keep-alives in 4 s")
            let mean = intervals.reduce(0, +) / Double(max(intervals.count, 1))
            #expect(mean > 0.4 && mean < 0.6, "mean interval \(mean) s, expected 0.5 s: \(intervals.map(milliseconds)) ms")
            #expect(intervals.allSatisfy { $0 < 0.9 }, "a keep-alive came late: \(intervals.map(milliseconds)) ms")
            // The status follows the fix and the client count, and is not repeated while unchanged.
            #expect(statuses.contains { $0.contains("fix from demo") && $0.contains("2 clients") }, "\(statuses)")
            #expect(statuses.count <= 4, "STATUS= is sent on change only: \(statuses)")
            _ = client

            // SIGTERM: STOPPING=1, exit 0 within 2 s.
            child.kill(SIGTERM)
            let stopping = await notify.receive(until: "STOPPING=1", timeout: 2)
            #expect(stopping.found, "no STOPPING=1: \(stopping.messages.map(\.text))")
            let status = try #require(await child.wait(timeout: 2), "did not exit within 2 s")
            #expect(exitStatus(status) == 0)
        }

        @Test("no watchdog keep-alives when WATCHDOG_PID names another process")
        func watchdogForAnotherProcess() async throws {
            let dir = try TemporaryDirectory()
            dir.write("locationd.conf", daemonConfig(directory: dir.path))
            let notify = try NotifySocket(path: dir.path + "/notify.sock")
            let child = try ChildProcess([Repository.locationd, "--config", dir.path + "/locationd.conf"],
                                         environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"],
                                         directory: dir.path, name: "daemon")
            #expect(await notify.receive(until: "READY=1", timeout: 10).found)
            let after = await notify.receive(until: "WATCHDOG=1", timeout: 1.5)
            #expect(!after.found, "\(after.messages.map(\.text))")
            child.kill(SIGTERM)
            #expect(await child.wait(timeout: 2).map(exitStatus) == 0)
        }

        @Test("SIGHUP: a valid new config applies (log level, changed receivers reopened) and an invalid one is rejected with file:line; the client keeps streaming")
        func reload() async throws {
            let dir = try TemporaryDirectory()
            let socketPath = dir.path + "/locationd.sock"
            let configPath = dir.path + "/locationd.conf"
            dir.write("locationd.conf", daemonConfig(directory: dir.path, logLevel: "debug", rate: "10"))
            let notify = try NotifySocket(path: dir.path + "/notify.sock")
            let child = try ChildProcess([Repository.locationd, "--config", configPath],
                                         environment: ["NOTIFY_SOCKET": notify.path], directory: dir.path, name: "daemon")
            try #require(await notify.receive(until: "READY=1", timeout: 10).found, "log:\n\(child.errors)")
            let client = try LineClient(socketPath)
            #expect(await client.line(timeout: 5)?.contains("VERSION") == true)
            client.send(#"{"class":"WATCH","enable":true}"#)
            try #require(await client.message("TPV", timeout: 10) != nil, "not streaming; log:\n\(child.errors)")

            // 1. Valid: same receiver "demo", a new receiver "extra", log level notice.
            let extra = """

                [receiver extra]
                type = replay
                file = \(Repository.demoCapture)
                rate = 10
                loop = yes
                priority = -1
                """
            dir.write("locationd.conf", daemonConfig(directory: dir.path, logLevel: "notice", rate: "10", extra: extra))
            child.kill(SIGHUP)
            let reloaded = await notify.receive(until: "READY=1", timeout: 5)
            let reloading = reloaded.messages.firstIndex { $0.text.contains("RELOADING=1") }
            #expect(reloaded.found && reloading != nil && reloading! < reloaded.messages.count - 1,
                    "RELOADING=1, then READY=1: \(reloaded.messages.map(\.text))")
            #expect(reloading.map { reloaded.messages[$0].text.contains("MONOTONIC_USEC=") } == true)
            #expect(await eventually(timeout: 3) { child.errors.contains("configuration reloaded") }, "log:\n\(child.errors)")
            let log1 = child.errors
            #expect(log1.contains("receivers.added=extra") && log1.contains("receivers.unchanged=demo"), "\(log1)")
            let streaming1 = await client.count("TPV", during: 3)
            #expect(streaming1.open && streaming1.count > 0, "the client stopped streaming after a reload")
            // The new level applies: a new client's info-level "client connected" is no longer logged.
            let third = try LineClient(socketPath)
            _ = await third.line(timeout: 2)
            await pause(0.2)
            #expect(child.errors.ranges(of: "client connected").count == log1.ranges(of: "client connected").count,
                    "info events still logged at log-level = notice")

            // 2. Changed settings of "demo" (rate): it is reopened, "extra" untouched.
            dir.write("locationd.conf", daemonConfig(directory: dir.path, logLevel: "notice", rate: "12", extra: extra))
            child.kill(SIGHUP)
            #expect(await notify.receive(until: "READY=1", timeout: 5).found)
            #expect(await eventually(timeout: 3) { child.errors.contains("receivers.reopened=demo") }, "\(child.errors)")
            #expect(child.errors.contains("receivers.unchanged=extra"))

            // 3. Invalid: an unknown key in a drop-in. Logged with file:line: key; the old config stays.
            dir.write("conf.d/90-broken.conf", "[daemon]\n; a comment\nno-such-key = 1\n")
            child.kill(SIGHUP)
            #expect(await notify.receive(until: "READY=1", timeout: 5).found)
            let expected = "\(dir.path)/conf.d/90-broken.conf:3: no-such-key: unknown key in [daemon]"
            #expect(await eventually(timeout: 3) { child.errors.contains(expected) }, "log:\n\(child.errors)")
            #expect(child.errors.contains("configuration not reloaded"))
            let streaming2 = await client.count("TPV", during: 3)
            #expect(streaming2.open && streaming2.count > 0, "the client stopped streaming after a rejected reload")
            #expect(ListeningSocket.isLive(socketPath))

            child.kill(SIGTERM)
            #expect(await child.wait(timeout: 2).map(exitStatus) == 0)
        }
    }
}
