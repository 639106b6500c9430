#if canImport(Glibc)
import Glibc
#endif
import LocationPosix
@testable import LocationServer
import TestSupport
import Testing

/// How fast one user may open connections (`UserConnectionRate`). Found by a helper attacking the daemon as
/// uid 65534: connecting and closing at once, about 270 times a second over the three fronts, kept the
/// daemon at one core — each connection was identified, which lists the user's processes in /proc.
@Suite("New connections per user and second", .serialized)
struct ConnectionRateTests {
    @Test("a burst of `burst`, then `perSecond` a second; other users, root and unknown peers apart")
    func bucket() {
        var rate = UserConnectionRate(perSecond: 16, burst: 64)
        let t0 = Duration.seconds(100)
        var burst: [Bool] = []
        for _ in 0..<70 { burst.append(rate.admit(1000, now: t0)) }
        #expect(burst.prefix(64).allSatisfy { $0 } && !burst.suffix(6).contains(true))
        // Another user, root and connections whose uid the kernel did not tell have buckets of their own.
        let other = rate.admit(1001, now: t0), unknown = rate.admit(nil, now: t0)
        #expect(other && unknown)
        var root = 0
        for _ in 0..<1000 where rate.admit(0, now: t0) { root += 1 }
        #expect(root == 1000)
        // 1/16 s later, one more of 1000's; 0.5 s later, 8.
        let early = rate.admit(1000, now: t0 + .milliseconds(62))
        let due = rate.admit(1000, now: t0 + .milliseconds(63))
        let again = rate.admit(1000, now: t0 + .milliseconds(63))
        #expect(!early && due && !again)
        var half: [Bool] = []
        for _ in 0..<9 { half.append(rate.admit(1000, now: t0 + .milliseconds(563))) }
        #expect(half == Array(repeating: true, count: 8) + [false])
        // Time that comes in slices shorter than a thousandth of a connection is not lost.
        var sliced = UserConnectionRate(perSecond: 16, burst: 1)
        let first = sliced.admit(7, now: t0)
        #expect(first)
        var admitted = 0
        for step in 1...100 where sliced.admit(7, now: t0 + .microseconds(step * 999)) { admitted += 1 }
        #expect(admitted == 1, "one token in 100 ms at 16 a second")
    }

    @Test("users who stopped connecting are forgotten once their bucket is full again")
    func forgetting() {
        var rate = UserConnectionRate(perSecond: 16, burst: 64)
        for uid in 1...100 as ClosedRange<UInt32> { _ = rate.admit(uid, now: .seconds(10)) }
        #expect(rate.trackedUsers == 100)
        // 64 / 16 = 4 s to refill; the table is swept at most once a second, when it holds over 64 users.
        _ = rate.admit(500, now: .seconds(15))
        #expect(rate.trackedUsers == 1)
    }

    @Test("a peer that closed and left nothing unread has left; one that is there, sent a request, or only shut its writing side has not")
    func peerHasLeft() throws {
        func pair() throws -> (ours: Int32, theirs: Int32) {
            var fds: [Int32] = [-1, -1]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            return (fds[0], fds[1])
        }
        let open = try pair()
        #expect(!PeerProcess.hasLeft(open.ours))
        close(open.ours); close(open.theirs)

        let gone = try pair()
        close(gone.theirs)
        #expect(PeerProcess.hasLeft(gone.ours))
        close(gone.ours)

        // `printf '{"class":"REVOKE",...}\n' | socat - UNIX-CONNECT:...` may close before its turn: its
        // request is still read and answered as far as it can be.
        let sentAndGone = try pair()
        #expect(write(sentAndGone.theirs, "{}\n", 3) == 3)
        close(sentAndGone.theirs)
        #expect(!PeerProcess.hasLeft(sentAndGone.ours))
        close(sentAndGone.ours)

        let halfClosed = try pair()
        shutdown(halfClosed.theirs, Int32(SHUT_WR))
        #expect(!PeerProcess.hasLeft(halfClosed.ours))
        close(halfClosed.ours); close(halfClosed.theirs)
    }

    /// Connects to argv[1] in groups of four connections opened at once, reads each one's first line and
    /// closes them, again and again, for up to argv[2] connections or until three were refused; prints
    /// `greeted refused` and the refusal's message. Groups, not one connection at a time: the daemon
    /// identifies the connections that arrive together in one pass, so a group costs it about what one
    /// connection does, and the user outruns 16 a second however slow the daemon's build is (one at a
    /// time, a sanitized daemon identified about 13 a second and never refused one).
    static let churn = """
        import socket, sys
        greeted = refused = 0
        message = ""
        while greeted + refused < int(sys.argv[2]) and refused < 3:
            group = []
            for _ in range(4):
                s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect(sys.argv[1]); group.append(s)
            for s in group:
                line = s.makefile("rb").readline()
                if b'"VERSION"' in line: greeted += 1
                else:
                    refused += 1
                    message = line.decode().split('"message":"')[-1].split('"')[0]
            for s in group: s.close()
        print(greeted, refused, message)
        """

    static func churn(_ socket: String, uid: Int, connections: Int) throws -> (greeted: Int, refused: Int, message: String) {
        let directory = String(socket[..<socket.lastIndex(of: "/")!])
        chmod(directory, 0o755)
        let out = try PolicyEndToEndTests.run(["setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/python3", "-c",
                                               Self.churn, socket, String(connections)], in: directory).stdout
        let words = out.split(separator: " ", maxSplits: 2)
        let greeted = try #require(words.first.flatMap { Int($0) }, "\(out)")
        let refused = try #require(words.dropFirst().first.flatMap { Int($0) }, "\(out)")
        return (greeted, refused, words.count > 2 ? String(words[2]).trimmingSuffixNewline() : "")
    }

    @Test("a user who reconnects without pause is refused after the burst; another user is not; the user is let in again a moment later")
    func endToEnd() throws {
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = ask", clients: ""),
                                       daemonKeys: "max-clients-per-user = 8")
        defer { daemon.stop() }
        // 8 at once, then 16 a second: more than 8 get in, as many as were identified while the bucket
        // refilled, and then a group of four finds at most one token.
        let first = try Self.churn(daemon.socketPath, uid: 1, connections: 2000)
        #expect(first.greeted >= 8 && first.refused >= 3, "\(first)")
        #expect(first.message == "too many new connections of this user (16 a second); try again later", "\(first)")
        let other = try Self.churn(daemon.socketPath, uid: 2, connections: 4)
        #expect(other.greeted == 4 && other.refused == 0, "\(other)")
        // The bucket refills at 16 a second: 4 connections' worth in 0.25 s, 9 in 0.6 s.
        usleep(600_000)
        let again = try Self.churn(daemon.socketPath, uid: 1, connections: 4)
        #expect(again.greeted == 4, "9 connections' worth refilled in 0.6 s: \(again)")
        #expect(daemon.log.contains("too many new connections of this user"))
    }
}

private extension String {
    func trimmingSuffixNewline() -> String { hasSuffix("\n") ? String(dropLast()) : self }
}
