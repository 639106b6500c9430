#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationWire
import Synchronization
import Testing
@testable import LocationClient

/// PolicyClientTests, continued: agents, and the administrator's grants, revokes and audit.
extension PolicyClientTests {
    @Test("registerAgent: AGENT acknowledged, ASK and ANSWERED as events; answer() waits for the ANSWERED of its id")
    func agent() async throws {
        try await withFakeDaemon({ peer in
            peer.greet()
            guard peer.readLine() == #"{"class":"AGENT"}"# else { return }
            peer.send(#"{"class":"AGENT"}"#)
            peer.send(PolicyLines.ask)
            peer.send(PolicyLines.askPurpose)
            guard peer.readLine() != nil else { return }
            // Another question timed out just before; then this answer is confirmed.
            peer.send(#"{"class":"ANSWERED","id":3,"answer":"timeout","by":"nobody"}"#)
            peer.send(#"{"class":"ANSWERED","id":7,"answer":"allowOnce","by":"root (uid 0)"}"#)
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"ERROR","request":"ANSWER","message":"no question 8 is waiting (answered, withdrawn or timed out)"}"#)
            peer.waitForClose()
        }) { client, server in
            let events = try await client.registerAgent()
            var iterator = events.makeAsyncIterator()
            guard case .ask(let ask)? = try await iterator.next() else {
                Issue.record("expected an ASK")
                return
            }
            #expect(ask.id == 7)
            #expect(ask.client == ClientDescription(pid: 4242, uid: 1000, user: "alice", executable: "/usr/bin/navit",
                                                    unit: "navit.service", name: "My Navigator"))
            #expect(ask.request == "once")
            #expect(ask.accuracy == .fullAccuracy)
            #expect(ask.timeout == 30)
            #expect(ask.purpose == nil)
            #expect(ask.json == PolicyLines.ask)
            guard case .ask(let purpose)? = try await iterator.next() else {
                Issue.record("expected a second ASK")
                return
            }
            #expect(purpose.request == "temporaryFullAccuracy")
            #expect(purpose.purposeKey == "Navigation")
            #expect(purpose.purpose == "Turn-by-turn directions need your exact position.")
            #expect(purpose.client.unit == nil)

            let outcome = try await client.answer(id: 7, answer: .allowOnce, accuracy: .reducedAccuracy)
            #expect(outcome == AnsweredNotice(id: 7, answer: "allowOnce", by: "root (uid 0)"))
            #expect(try await iterator.next() == .answered(AnsweredNotice(id: 3, answer: "timeout", by: "nobody")))
            #expect(try await iterator.next() == .answered(AnsweredNotice(id: 7, answer: "allowOnce", by: "root (uid 0)")))

            await #expect(throws: LocationClientError.server(request: "ANSWER", message: "no question 8 is waiting (answered, withdrawn or timed out)")) {
                try await client.answer(id: 8, answer: .deny)
            }
            #expect(server.requests == [
                #"{"class":"AGENT"}"#,
                #"{"class":"ANSWER","id":7,"answer":"allowOnce","accuracy":"reduced"}"#,
                #"{"class":"ANSWER","id":8,"answer":"deny"}"#,
            ])
            // close() ends the events normally.
            client.close()
            #expect(try await iterator.next() == nil)
        }
    }

    @Test("an answer overtaken by the timeout returns that outcome; the daemon's ERROR about it fails no other answer")
    func answerOvertaken() async throws {
        try await withFakeDaemon({ peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"AGENT"}"#)
            guard peer.readLine() != nil, peer.readLine() != nil else { return }
            peer.send(#"{"class":"ANSWERED","id":7,"answer":"timeout","by":"nobody"}"#)
            peer.send(#"{"class":"ERROR","request":"ANSWER","message":"no question 7 is waiting (answered, withdrawn or timed out)"}"#)
            peer.send(#"{"class":"ANSWERED","id":9,"answer":"deny","by":"root (uid 0)"}"#)
            peer.waitForClose()
        }) { client, server in
            let events = try await client.registerAgent()
            async let first = client.answer(id: 7, answer: .allowOnce)
            for _ in 0..<2000 where server.requests.count < 2 { try await Task.sleep(for: .milliseconds(5)) }
            async let second = client.answer(id: 9, answer: .deny)
            let (seven, nine) = try await (first, second)
            #expect(seven == AnsweredNotice(id: 7, answer: "timeout", by: "nobody"))
            #expect(nine == AnsweredNotice(id: 9, answer: "deny", by: "root (uid 0)"))
            _ = events
        }
    }

    @Test("registerAgent by a user who may not: a permission error that meansNotAuthorized")
    func agentRefused() async throws {
        try await withFakeDaemon({ peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"ERROR","request":"AGENT","message":"permission denied: needs root or group locationd-admin"}"#)
            peer.waitForClose()
        }) { client, _ in
            do {
                _ = try await client.registerAgent()
                Issue.record("expected an error")
            } catch let error as LocationClientError {
                #expect(error == .server(request: "AGENT", message: "permission denied: needs root or group locationd-admin"))
                #expect(error.meansNotAuthorized)
            }
        }
    }

    @Test("the agent events end with disconnected when the daemon goes away")
    func agentDisconnected() async throws {
        try await withFakeDaemon({ peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"AGENT"}"#)
            peer.send(PolicyLines.ask)
        }) { client, _ in
            var count = 0
            await #expect(throws: LocationClientError.disconnected) {
                for try await _ in try await client.registerAgent() { count += 1 }
            }
            #expect(count == 1)
        }
    }

    @Test("grants(), grant() and revoke(): the requests, GRANTS decoded, replies in order, a permission error")
    func administration() async throws {
        try await withFakeDaemon({ peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.grants)
            // GRANT and REVOKE sent together: answered in order, both with GRANTS.
            guard peer.readLine() != nil, peer.readLine() != nil else { return }
            peer.send(PolicyLines.grants)
            peer.send(PolicyLines.emptyGrants)
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.permissionDenied)
            peer.waitForClose()
        }) { client, server in
            let list = try await client.grants()
            #expect(list.json == PolicyLines.grants)
            #expect(list.persistent == [
                GrantList.Persistent(subject: .executable("/usr/bin/navit"), allowed: true, accuracy: .reducedAccuracy,
                                     created: UTCTime(iso8601: "2026-11-30T05:00:00.000Z"),
                                     expires: UTCTime(iso8601: "2026-12-07T05:00:00.000Z"), decidedBy: "agent root (uid 0)"),
                GrantList.Persistent(subject: .unit("spy.service"), allowed: false, accuracy: .reducedAccuracy,
                                     created: UTCTime(iso8601: "2026-11-30T05:01:00.000Z"), decidedBy: "agent root (uid 0)"),
            ])
            #expect(list.preapproved == [GrantList.Preapproval(subject: .user("kiosk"), accuracy: .fullAccuracy,
                                                               created: UTCTime(iso8601: "2026-11-30T05:02:00.000Z"))])
            #expect(list.once == [GrantList.OneTime(pid: 4242, uid: 1000, executable: "/usr/bin/navit", accuracy: .fullAccuracy,
                                                    granted: UTCTime(iso8601: "2026-11-30T05:03:00.000Z"),
                                                    expires: UTCTime(iso8601: "2026-11-30T06:03:00.000Z"))])

            async let granted = client.grant(subject: .executable("/usr/bin/navit"), kind: .persistent,
                                             accuracy: .reducedAccuracy, expires: 604_800)
            try await Task.sleep(for: .milliseconds(50))
            async let revoked = client.revoke(subject: .user("kiosk"))
            let (afterGrant, afterRevoke) = try await (granted, revoked)
            #expect(afterGrant.persistent.count == 2)
            #expect(afterRevoke.persistent.isEmpty && afterRevoke.preapproved.isEmpty && afterRevoke.once.isEmpty)

            do {
                try await client.grant(subject: .unit("navit.service"), kind: .once)
                Issue.record("expected an error")
            } catch let error as LocationClientError {
                #expect(error == .server(request: "GRANT", message: "permission denied: needs root or group locationd-admin"))
                #expect(error.meansNotAuthorized)
            }
            #expect(server.requests == [
                #"{"class":"GRANTS"}"#,
                #"{"class":"GRANT","executable":"/usr/bin/navit","kind":"persistent","accuracy":"reduced","expires":604800}"#,
                #"{"class":"REVOKE","user":"kiosk"}"#,
                #"{"class":"GRANT","unit":"navit.service","kind":"once","accuracy":"full"}"#,
            ])
        }
    }

    @Test("audit(since:) sends AUDIT and decodes each event, keeping its JSON")
    func audit() async throws {
        try await withFakeDaemon({ peer in
            peer.greet()
            guard peer.readLine() != nil else { return }
            peer.send(PolicyLines.audit)
            guard peer.readLine() != nil else { return }
            peer.send(#"{"class":"AUDIT","events":[]}"#)
            peer.waitForClose()
        }) { client, server in
            let events = try await client.audit(since: 1_796_014_800)
            #expect(events.count == 2)
            let first = try #require(events.first)
            #expect(first.event == "decision")
            #expect(first.time?.iso8601 == "2026-11-30T05:00:00.500Z")
            #expect(first.unixTime == 1_796_014_800.5)
            #expect(first.client?.executable == "/usr/bin/navit")
            #expect(first.client?.name == "My Navigator")
            #expect(first.request == "AUTHORIZE")
            #expect(first.status == "authorizedOnce")
            #expect(first.accuracy == .fullAccuracy)
            #expect(first.reason == "agent root (uid 0) answered allowOnce")
            #expect(first.json == PolicyLines.auditEvent1)
            #expect(events.last?.event == "revoke")
            #expect(events.last?.status == nil)
            #expect(events.last?.json == PolicyLines.auditEvent2)
            #expect(try await client.audit().isEmpty)
            #expect(server.requests == [#"{"class":"AUDIT","since":1796014800}"#, #"{"class":"AUDIT"}"#])
        }
    }
}
