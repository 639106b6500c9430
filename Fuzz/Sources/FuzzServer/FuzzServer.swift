#if canImport(Glibc)
import Glibc
#endif
import FuzzMain
import FuzzSupport
import LocationCore
import LocationPolicy
@testable import LocationServer
import LocationWire

/// The policy the fuzzed clients meet: ask by default, one program always allowed at reduced accuracy with a
/// purpose key, one user allowed once at full accuracy (Config/locationd.conf's forms).
private let configText = """
    [daemon]
    admin-group = 0
    [policy]
    access = ask
    accuracy = reduced
    once-lifetime = 1h
    ask-timeout = 30s
    [client navigation]
    executable = /usr/bin/navit
    access = always
    accuracy = reduced
    purpose.TurnByTurn = Turn-by-turn directions need your exact position.
    [client alice]
    user = 1000
    access = once
    accuracy = full

    """

/// Who may connect: root (an administrator and agent), alice, navit run by bob, and a stranger.
private let identities = [
    ClientIdentity(pid: 100, uid: 0, gid: 0, user: "root", groups: ["root"], executable: "/usr/bin/locationctl"),
    ClientIdentity(pid: 101, uid: 1000, gid: 1000, user: "alice", groups: ["alice"], executable: "/usr/bin/python3"),
    ClientIdentity(pid: 102, uid: 1001, gid: 1001, user: "bob", groups: ["bob"], executable: "/usr/bin/navit"),
    ClientIdentity(pid: 103, uid: 1002, gid: 1002, user: "eve", groups: ["eve"], executable: "/home/eve/a.out"),
]

private struct NoReceivers: ReceiverStatusProvider {
    func receiverReports() -> [ReceiverReport] { [] }
}

/// One grant store, audit and fudger secret for the whole run: in `$LOCATIOND_FUZZ_STATE` (Scripts/fuzz empties
/// it before each run), else in a fresh temporary directory.
private let world: (context: ServerContext, rules: PolicyRules, store: PolicyStore) = {
    var template = Array((getenv("LOCATIOND_FUZZ_STATE").map { String(cString: $0) + "/state-XXXXXX" } ?? "/tmp/locationd-fuzz-XXXXXX").utf8CString)
    let directory = template.withUnsafeMutableBufferPointer { buffer -> String? in
        guard let base = buffer.baseAddress, let made = mkdtemp(base) else { return nil }
        return String(cString: made)
    } ?? "/tmp"
    let log = Log(level: .error)
    let store = PolicyStore(stateDirectory: directory, log: log)
    let rules: PolicyRules
    do {
        rules = try DaemonConfiguration(entries: ConfigFile.read(contentsOf: Array(configText.utf8), name: "fuzz.conf")).rules
    } catch {
        fatalError("the fuzz target's own config does not load: \(error)")
    }
    let context = ServerContext(limits: ServerLimits(), log: log, store: store, receivers: NoReceivers(), release: "fuzz")
    return (context, rules, store)
}()

/// Brisbane, moving north-east: a fix every step so that watchers and polls get deliveries.
private func fix(_ step: Int) -> Fix {
    Fix(device: "gnss0", time: UTCTime(date: CivilDate(year: 2026, month: 12, day: 1), millisecondsOfDay: 43_200_000 + step * 1000),
        mode: step % 7 == 6 ? .noFix : .threeDimensional, quality: .gps,
        latitude: step % 7 == 6 ? nil : -27.2109 + Double(step) * 1e-4, longitude: step % 7 == 6 ? nil : 153.0522 + Double(step) * 1e-4,
        altitudeMSL: 12, speed: 5, track: 45)
}

/// libFuzzer entry point: the native protocol's requests from several clients at once, answered by the server's
/// own state (`ServerState`: request handling, the `Publisher`, the agent broker, the admin service) without a
/// listening socket or threads — each client is one end of a socketpair, drained after every step.
///
/// Each line goes to the client its first byte picks (root, alice, navit, a stranger); a fix is published
/// after each line, and each timer the state asks for fires at once. Checks, beyond "no crash, no hang, no
/// leak": the stranger never receives a coordinate (docs/PROTOCOL.md: unauthorized clients get no position byte).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzServer(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let policy = PolicyState(rules: world.rules, grants: world.store.initialGrants, adminGroup: "root")
    var state = ServerState(context: world.context,
                            publisher: Publisher(policy: policy, fudger: world.store.fudger(gridMeters: world.rules.defaults.reducedGrid)))
    let start = ContinuousClock.now
    var now = Moment(monotonic: start, wall: 1_796_126_400)
    var clients: [(id: Int, peer: Int32)] = []
    for identity in identities {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { fatalError("socketpair: \(errno)") }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        guard let id = state.admit(fds[0], identity: identity, at: now) else { fatalError("client refused") }
        clients.append((id, fds[1]))
    }
    var received = [[UInt8]](repeating: [], count: clients.count)
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        for (i, client) in clients.enumerated() {
            while true {
                let n = buffer.withUnsafeMutableBytes { read(client.peer, $0.baseAddress, $0.count) }
                guard n > 0 else { break }
                if i == 3 { received[i] += buffer[0..<n] }
            }
        }
    }
    func runEffects() {
        var rounds = 0
        while !state.effects.isEmpty && rounds < 8 {
            let effects = state.effects
            state.effects.removeAll()
            for effect in effects {
                switch effect {
                case .schedule(let event, _): state.handle(event, at: now)
                case let .saveGrants(reply, request, extra):
                    state.handle(.grantsSaved(admin: reply, request: request, error: nil, extra: extra), at: now)
                case .readAudit: break
                // logind is not asked here: no user is in use, as without logind.
                case .watchLoginSessions: break
                // No /proc pass here: the holders are taken to be as they were (the fuzzed peers are socketpairs).
                case .recheckHolders: state.handle(.holdersChecked([]), at: now)
                // No uplinks and no sharing file here: the reply is sent as once the file is written.
                case .uplinks(let work): work.forEach { $0.run() }
                case .saveSharing(_, _, let reply): state.handle(.sharingSaved(reply: reply), at: now)
                }
            }
            rounds += 1
        }
        state.effects.removeAll()
        // No poller here: each client's socket is taken to have room after every turn (what its epoll
        // watch for room to write would report once the fuzzer drained it).
        for client in clients { state.writable(client.id) }
    }

    var framer = LineFramer(maximumLineLength: ProtocolVersion.maximumRequestLength)
    var lines: [[UInt8]] = []
    framer.feed(bytes) { if case .line(let line) = $0 { lines.append(line) } }
    for (step, line) in lines.prefix(64).enumerated() {
        let target = clients[Int(line.first ?? 0) % clients.count]
        state.handleLine(Array(line.dropFirst()), from: target.id, at: now)
        runEffects()
        now = Moment(monotonic: start + .seconds(step + 1), wall: now.wall + 1)
        state.publish(fix(step), at: now)
        runEffects()
        drain()
    }
    for client in clients {
        state.close(client.id, why: "fuzz input done")
        close(client.peer)
    }
    drain()
    // The stranger (ask, no agent answering) never sees a position.
    let text = String(decoding: received[3], as: UTF8.self)
    require(!text.contains("\"lat\""), "the stranger received a position: \(text)")
    return 0
}
