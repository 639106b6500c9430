import LocationCore
import LocationPolicy
import Testing
@testable import LocationServer

/// A one-time grant's lifetime is a duration: the wall clock stepped by hours under it (NTP at boot, an
/// administrator, `date -s`) neither ends it early nor stretches it. Found by `Scripts/faults clock`: the
/// lifetime ran on the wall clock, so a step forward of 3 h ended a 20 s grant at once, and a step back
/// would have kept one alive for hours.
@Suite("Wall clock steps")
struct WallClockStepTests {
    static let stranger = ClientIdentity(pid: 300, uid: 1001, gid: 1001, user: "mallory", executable: "/usr/bin/curl")

    /// `seconds` after the grant on the monotonic clock, the wall clock reading `stepped` hours off.
    static func moment(_ seconds: Double, stepped hours: Double) -> Moment {
        let start = PublisherTests.moment(0)
        return Moment(monotonic: start.monotonic + .milliseconds(Int64(seconds * 1000)), wall: start.wall + seconds + hours * 3600)
    }

    @Test("Policy: a 20 s one-time grant holds across steps of +3 h and -3 h, and ends 20 s after it was made",
          arguments: [3.0, -3.0, 24.0 * 365])
    func policy(hours: Double) {
        let session = SessionAuthorization(once: SessionGrant(accuracy: .full, at: Self.moment(0, stepped: 0), lifetime: 20))
        func status(_ seconds: Double, _ hours: Double) -> AuthorizationStatus {
            Policy.state(Self.stranger, session: session, rules: PolicyRules(), grants: GrantSet(), now: Self.moment(seconds, stepped: hours)).status
        }
        #expect(status(1, hours) == .authorizedOnce)
        #expect(status(19.9, hours) == .authorizedOnce)
        #expect(status(20, hours) == .notDetermined)
        #expect(status(20, 0) == .notDetermined)
    }

    @Test("Publisher: a streaming client keeps its one-time grant through a step of +3 h, loses it at 20 s after one of -3 h")
    func publisher() {
        var defaults = PolicyDefaults()
        defaults.access = .once
        defaults.accuracy = .full
        var p = PublisherTests.publisher(PolicyRules(defaults: defaults, clients: []))
        p.connect(1, identity: Self.stranger)
        p.changeSession(of: 1) { $0.once = SessionGrant(accuracy: .full, at: Self.moment(0, stepped: 0), lifetime: 20) }
        let state = p.authorization(of: 1, at: Self.moment(0, stepped: 0))
        #expect(state.status == .authorizedOnce)
        _ = p.startWatching(1, minInterval: .zero, distanceFilter: 0, state: state, at: Self.moment(0, stepped: 0))
        var reported: [Double] = []
        var ended: Double?
        // A fix a second; the wall clock jumps 3 h ahead at 5 s, then 3 h behind the truth at 10 s.
        for (i, fix) in PublisherTests.positioned.prefix(30).enumerated() {
            let second = Double(i + 1)
            let now = Self.moment(second, stepped: second < 5 ? 0 : second < 10 ? 3 : -3)
            var out: [Delivery] = []
            p.publish(fix, at: now, into: &out)
            if !PublisherTests.reports(out).isEmpty { reported.append(second) }
            if ended == nil, out.contains(where: { if case .watchEnded = $0 { return true } else { return false } }) { ended = second }
        }
        #expect(reported == (1...19).map(Double.init))
        #expect(ended == 20)
    }
}
