#if canImport(Glibc)
import Glibc
#endif
import LocationWire
import Testing

/// The `locationctl` binary against a fake daemon: the requests it sends, what it prints, and its exit
/// codes (sysexits(3): 0, 64 usage, 69 unavailable, 77 no permission).
@Suite("locationctl policy commands against a fake daemon")
struct CommandExitCodeTests {
    /// A POLL reply with the first 3D fix of haicom-305N.log.
    static var pollReply: [UInt8] {
        Array((#"{"class":"POLL","tpv":["# + CannedLines.first3D + "]}\n").utf8)
    }

    @Test("get: AUTHORIZE with the options given, then POLL; exit 0 with the location")
    func getAuthorized() async throws {
        let server = try FakeServer { peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.reduced)
            guard peer.readLine() != nil else { return }
            peer.send(bytes: Self.pollReply)
            peer.waitForClose()
        }
        let result = await runLocationctl(["get", "--socket", server.path, "--authorization", "persistent",
                                           "--accuracy", "reduced", "--timeout", "5"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "2007-04-08 09:53:05.802Z  -27.2109117  153.0522500  ±247.2 m  3.6 km/h  track 133.96°  [gnss0]\n")
        #expect(await server.finished())
        #expect(server.requests == [
            #"{"class":"AUTHORIZE","authorization":"persistent","accuracy":"reduced","name":"locationctl get"}"#,
            #"{"class":"POLL","timeout":5}"#,
        ])
    }

    @Test("get: a refusal exits 77 with the status and the reason, and no POLL is sent")
    func getRefused() async throws {
        let server = try FakeServer { peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.noAgent)
            peer.waitForClose()
        }
        let result = await runLocationctl(["get", "--socket", server.path])
        #expect(result.status == 77, "\(result)")
        #expect(result.stderr.contains("denied"))
        #expect(result.stderr.contains("no agent is running to ask"))
        #expect(result.stdout.isEmpty)
        #expect(await server.finished())
        #expect(server.requests == [#"{"class":"AUTHORIZE","authorization":"once","accuracy":"full","name":"locationctl get"}"#])
    }

    @Test("get: a POLL refused as not authorized exits 77")
    func getPollRefused() async throws {
        let server = try FakeServer { peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.once)
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.notDetermined)
            peer.send(#"{"class":"ERROR","request":"POLL","message":"not authorized (notDetermined): the one-time grant expired"}"#)
            peer.waitForClose()
        }
        let result = await runLocationctl(["get", "--socket", server.path])
        #expect(result.status == 77, "\(result)")
        #expect(result.stderr.contains("the one-time grant expired"))
        #expect(await server.finished())
    }

    @Test("get --purpose: FULLACCURACY after a reduced authorization; an undeclared key exits 77")
    func getPurpose() async throws {
        let served = try FakeServer(connections: 2) { peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.reduced)
            guard let request = peer.readLine(), request.contains("FULLACCURACY") else { return }
            if request.contains("Navigation") {
                peer.send(#"{"class":"AUTHORIZATION","status":"authorizedPersistent","accuracy":"full","reason":"persistent grant by agent root (uid 0)"}"#)
                guard peer.readLine() != nil else { return }
                peer.send(bytes: Self.pollReply)
            } else {
                peer.send(#"{"class":"ERROR","request":"FULLACCURACY","message":"purpose key \"Ads\" is not declared for this client ([policy])"}"#)
            }
            peer.waitForClose()
        }
        let granted = await runLocationctl(["get", "--socket", served.path, "--purpose", "Navigation"])
        #expect(granted.status == 0, "\(granted)")
        let undeclared = await runLocationctl(["get", "--socket", served.path, "--purpose", "Ads"])
        #expect(undeclared.status == 77, "\(undeclared)")
        #expect(undeclared.stderr.contains("not declared"))
        #expect(await served.finished())
        #expect(served.requests.contains(#"{"class":"FULLACCURACY","purposeKey":"Navigation"}"#))
    }

    @Test("get --authorization always: When In Use kept (the upgrade refused) is said, and the location still printed")
    func alwaysNotGranted() async throws {
        let server = try FakeServer { peer in
            peer.greet()
            guard let request = peer.readLine(), request.contains(#""authorization":"persistent""#) else { return }
            // What the daemon says when the agent refuses the upgrade (docs/PROTOCOL.md "When In Use and Always").
            peer.send(#"{"class":"AUTHORIZATION","status":"authorizedWhenInUse","accuracy":"full","reason":"When-In-Use grant by agent root (uid 0); the user has an active login session"}"#)
            guard peer.readLine() != nil else { return }
            peer.send(bytes: Self.pollReply)
            peer.waitForClose()
        }
        let result = await runLocationctl(["get", "--socket", server.path, "--authorization", "always"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr == "locationctl get: Always was not granted; continuing with When In Use "
                + "(When-In-Use grant by agent root (uid 0); the user has an active login session)\n", "\(result)")
        #expect(await server.finished())
    }

    @Test("watch: prints the authorization change, and exits 77 when the authorization is lost")
    func watchLosesAuthorization() async throws {
        let server = try FakeServer { peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.once)
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"WATCH","enable":true,"minInterval":0,"distanceFilter":0}"#)
            peer.send(CannedLines.first3D)
            peer.send(#"{"class":"AUTHORIZATION","status":"notDetermined","reason":"revoked by administrator root (uid 0)"}"#)
            peer.send(#"{"class":"ERROR","request":"WATCH","message":"not authorized: revoked by administrator root (uid 0)"}"#)
            peer.waitForClose()
        }
        let result = await runLocationctl(["watch", "--socket", server.path, "--accuracy", "reduced"])
        #expect(result.status == 77, "\(result)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines == ["2007-04-08 09:53:05.802Z  -27.2109117  153.0522500  ±247.2 m  3.6 km/h  track 133.96°  [gnss0]",
                          "authorization: not determined (revoked by administrator root (uid 0))"])
        // Plain words, not the wire's notDetermined (issue 33).
        #expect(result.stderr.contains("not determined") && !result.stderr.contains("notDetermined"), "\(result.stderr)")
        #expect(await server.finished())
        #expect(server.requests.first == #"{"class":"AUTHORIZE","authorization":"once","accuracy":"reduced","name":"locationctl watch"}"#)
    }

    @Test("watch: refused at the start exits 77; bad option values exit 64")
    func watchRefusedAndUsage() async throws {
        let server = try FakeServer { peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"AUTHORIZATION","status":"restricted","reason":"[client kiosk] denies access"}"#)
            peer.waitForClose()
        }
        let refused = await runLocationctl(["watch", "--socket", server.path])
        #expect(refused.status == 77, "\(refused)")
        #expect(refused.stderr.contains("restricted") && refused.stderr.contains("[client kiosk] denies access"))
        #expect(await server.finished())

        #expect(await runLocationctl(["watch", "--authorization", "sometimes"]).status == 64)
        #expect(await runLocationctl(["get", "--accuracy", "approximate"]).status == 64)
    }

    @Test("administration by a non-administrator: the daemon's permission error, exit 77")
    func permissionDenied() async throws {
        let commands: [[String]] = [["grants"], ["grant", "--user", "alice", "--persistent"], ["revoke", "--unit", "navit.service"],
                                    ["audit"], ["agent", "--answer", "deny"]]
        let server = try FakeServer(connections: commands.count) { peer in
            peer.greet()
            guard let request = peer.readLine() else { return }
            let name = request.split(separator: "\"")[3]
            peer.send(#"{"class":"ERROR","request":"\#(name)","message":"permission denied: needs root or group locationd-admin"}"#)
            peer.waitForClose()
        }
        for command in commands {
            let result = await runLocationctl(command + ["--socket", server.path])
            #expect(result.status == 77, "\(command): \(result)")
            #expect(result.stderr.contains("permission denied: needs root or group locationd-admin"), "\(command): \(result)")
        }
        #expect(await server.finished())
    }

    @Test("grant and revoke: the requests sent; a subject and a kind are required")
    func grantAndRevoke() async throws {
        let server = try FakeServer(connections: 4) { peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.grants)
            peer.waitForClose()
        }
        let once = await runLocationctl(["grant", "--user", "kiosk", "--once", "--accuracy", "reduced", "--expires", "1h 30min",
                                         "--socket", server.path])
        #expect(once.status == 0, "\(once)")
        #expect(once.stdout.contains("user kiosk"))
        let persistent = await runLocationctl(["grant", "--unit", "navit.service", "--persistent", "--expires", "7d",
                                               "--socket", server.path])
        #expect(persistent.status == 0, "\(persistent)")
        // A program of one user: the unit and the user together, in one request.
        let ofUser = await runLocationctl(["grant", "--unit", "navit.service", "--user", "alice", "--persistent",
                                           "--socket", server.path])
        #expect(ofUser.status == 0, "\(ofUser)")
        #expect(ofUser.stdout.contains("unit navit.service of user alice"))
        let revoke = await runLocationctl(["revoke", "--unit", "navit.service", "--socket", server.path])
        #expect(revoke.status == 0, "\(revoke)")
        #expect(await server.finished())
        #expect(server.requests == [
            #"{"class":"GRANT","user":"kiosk","kind":"once","accuracy":"reduced","expires":5400}"#,
            #"{"class":"GRANT","unit":"navit.service","kind":"persistent","accuracy":"full","expires":604800}"#,
            #"{"class":"GRANT","unit":"navit.service","user":"alice","kind":"persistent","accuracy":"full"}"#,
            #"{"class":"REVOKE","unit":"navit.service"}"#,
        ])

        #expect(await runLocationctl(["grant", "--user", "kiosk"]).status == 64)
        #expect(await runLocationctl(["grant", "--once"]).status == 64)
        #expect(await runLocationctl(["grant", "--executable", "/a", "--unit", "b", "--once"]).status == 64)
        #expect(await runLocationctl(["grant", "--user", "a", "--user", "b", "--once"]).status == 64)
        #expect(await runLocationctl(["grant", "--user", "a", "--once", "--expires", "soon"]).status == 64)
        #expect(await runLocationctl(["revoke"]).status == 64)
        // Two actions: a usage error (the `where` of `case "on", "off", "status" where …` held for "status" alone).
        #expect(await runLocationctl(["share", "on", "off"]).status == 64)
        #expect(await runLocationctl(["share", "off", "status"]).status == 64)
        // Longer than the protocol's 366 days (docs/PROTOCOL.md "SHARE"): a usage error here, before any
        // connection (it was sent, and refused by the daemon, exit 69). 366d itself is a pause.
        let tooLong = await runLocationctl(["share", "off", "--for", "367d", "--socket", "/nonexistent/locationd.sock"])
        #expect(tooLong.status == 64 && tooLong.stderr.contains("at most 366 days"), "\(tooLong)")
        #expect(await runLocationctl(["share", "off", "--for", "366d", "--socket", "/nonexistent/locationd.sock"]).status == 69)
    }

    @Test("grants: a table of stored, pre-approved and live one-time grants; --json as received")
    func grantsTable() async throws {
        let server = try FakeServer(connections: 2) { peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.grants)
            peer.waitForClose()
        }
        let table = await runLocationctl(["grants", "--socket", server.path])
        #expect(table.status == 0, "\(table)")
        let lines = table.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 5)
        #expect(lines.first?.hasPrefix("GRANT") == true)
        #expect(lines.contains { $0.hasPrefix("always") && $0.contains("executable /usr/bin/navit") && $0.contains("reduced")
                                 && $0.contains("2026-12-07 05:00:00.000Z") && $0.contains("agent root (uid 0)") })
        #expect(lines.contains { $0.hasPrefix("denied") && $0.contains("unit spy.service") && $0.contains("never") })
        #expect(lines.contains { $0.hasPrefix("once, pre-approved") && $0.contains("user kiosk") })
        #expect(lines.contains { $0.hasPrefix("once, live") && $0.contains("/usr/bin/navit (pid 4242, uid 1000)") })
        let json = await runLocationctl(["grants", "--json", "--socket", server.path])
        #expect(json.stdout == PolicyLines.grants + "\n")
        #expect(await server.finished())
    }

    @Test("audit: --since as a time or a duration ago; a table or JSON lines")
    func audit() async throws {
        let server = try FakeServer(connections: 3) { peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.audit)
            peer.waitForClose()
        }
        let table = await runLocationctl(["audit", "--since", "2026-11-30T05:00:00Z", "--socket", server.path])
        #expect(table.status == 0, "\(table)")
        let lines = table.stdout.split(separator: "\n").map(String.init)
        // Each event's reason on a line of its own below it, in plain words; no line wider than 100 columns (issue 33).
        #expect(lines.count == 5, "\(lines)")
        #expect(lines.first?.hasPrefix("TIME") == true)
        #expect(lines.dropFirst().first.map {
            $0.hasPrefix("2026-11-30 05:00:00Z  decision") && $0.contains("/usr/bin/navit (alice)")
                && $0.contains("AUTHORIZE") && $0.hasSuffix("allowed once, full")
        } == true, "\(lines)")
        #expect(lines.dropFirst(2).first == "  └ agent root (uid 0) answered allow once", "\(lines)")
        // A long request goes on the note line, its first word in the row.
        #expect(lines.dropFirst(3).first.map { $0.contains("revoke") && $0.contains(" REVOKE ") && !$0.contains("/usr/bin/navit") } == true,
                "\(lines)")
        #expect(lines.last == "  └ REVOKE executable /usr/bin/navit: by administrator root (uid 0)", "\(lines)")
        #expect(lines.allSatisfy { $0.count <= 100 }, "\(lines)")

        let json = await runLocationctl(["audit", "--json", "--since", "1h", "--socket", server.path])
        #expect(json.stdout == PolicyLines.auditEvent1 + "\n" + PolicyLines.auditEvent2 + "\n")
        let whenever = await runLocationctl(["audit", "--socket", server.path])
        #expect(whenever.status == 0)
        #expect(await server.finished())
        let requests = server.requests
        #expect(requests.first == #"{"class":"AUDIT","since":1796014800}"#)
        // An hour ago, by the wall clock.
        let since = requests.dropFirst().first.flatMap { $0.split(separator: ":").last?.dropLast() }.flatMap { Double($0) }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        #expect(since.map { abs(Double(now.tv_sec) - 3600 - $0) < 60 } == true, "\(requests)")
        #expect(requests.last == #"{"class":"AUDIT"}"#)

        #expect(await runLocationctl(["audit", "--since", "yesterday-ish"]).status == 64)
    }

    @Test("agent: prints the question with the client's identity, reads answers from standard input, exits after --count")
    func agentPrompts() async throws {
        let server = try FakeServer { peer in
            peer.greet()
            guard peer.readLine() == #"{"class":"AGENT"}"# else { return }
            peer.send(#"{"class":"AGENT"}"#)
            peer.send(PolicyLines.ask)
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"ANSWERED","id":7,"answer":"allowAlways","by":"root (uid 0)"}"#)
            peer.send(PolicyLines.askPurpose)
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"ANSWERED","id":8,"answer":"deny","by":"root (uid 0)"}"#)
            peer.waitForClose()
        }
        // "x" is not an answer: asked again. "R": allow always at reduced accuracy; "d": deny.
        let result = await runLocationctl(["agent", "--count", "2", "--socket", server.path], stdin: "x\nR\nd\n")
        #expect(result.status == 0, "\(result)")
        #expect(await server.finished())
        #expect(server.requests == [
            #"{"class":"AGENT"}"#,
            #"{"class":"ANSWER","id":7,"answer":"allowAlways","accuracy":"reduced"}"#,
            #"{"class":"ANSWER","id":8,"answer":"deny"}"#,
        ])
        let out = result.stdout
        for text in ["/usr/bin/navit", "My Navigator", "alice (uid 1000)", "pid 4242", "navit.service", "one-time access at full accuracy",
                     "temporary full accuracy", "Navigation: Turn-by-turn directions need your exact position.",
                     "[o]nce, [s]tanding once, [a]lways, [d]eny, [r]educed once, [R]educed always?", "please answer",
                     "ANSWERED 7: allow always by root (uid 0)", "ANSWERED 8: deny by root (uid 0)",
                     // What each answer does, in plain words (issue 33): navit.service, a system service, is in use
                     // whenever it runs; temporary full accuracy stores nothing.
                     "    o       this connection only\n",
                     "    a       remembered: whenever it runs (When In Use; it runs outside every login session)\n",
                     "    d       refused, and remembered: not asked again\n",
                     "    o s a   full accuracy for this connection\n"] {
            #expect(out.contains(text), "missing \(text) in \(out)")
        }
    }

    @Test("agent --answer once: answers without asking; a timeout notice is printed; the end of input ends an interactive agent")
    func agentAutomatic() async throws {
        let server = try FakeServer(connections: 2) { peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"AGENT"}"#)
            peer.send(#"{"class":"ANSWERED","id":3,"answer":"timeout","by":"nobody"}"#)
            peer.send(PolicyLines.ask)
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"ANSWERED","id":7,"answer":"allowOnce","by":"root (uid 0)"}"#)
            peer.waitForClose()
        }
        let automatic = await runLocationctl(["agent", "--answer", "once", "--count", "1", "--socket", server.path])
        #expect(automatic.status == 0, "\(automatic)")
        #expect(automatic.stdout.contains("ANSWERED 3: timeout"))
        #expect(automatic.stdout.contains("ANSWERED 7: allow once"))
        #expect(!automatic.stdout.contains("[o]nce"))
        // No answers on standard input: the agent leaves instead of letting questions time out.
        let mute = await runLocationctl(["agent", "--socket", server.path], stdin: "")
        #expect(mute.status == 0, "\(mute)")
        #expect(mute.stderr.contains("end of standard input"))
        #expect(await server.finished())
        #expect(server.requests.filter { $0.contains("ANSWER") } == [#"{"class":"ANSWER","id":7,"answer":"allowOnce"}"#])
    }
}
