#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import TestSupport
import Testing

/// Issue 12, hole 1, end to end: an unprivileged user floods requests that are audited, with names made
/// of combining and zero-width characters; the administrator's and other users' earlier records stay,
/// the files stay within their caps, and `locationctl audit` reads a log larger than a client's line limit.
@Suite("Audit under a flood, end to end", .serialized)
struct AuditFloodTests {
    typealias E2E = PolicyEndToEndTests

    static var locationctl: String { BuiltProducts.directory(containing: "locationctl") + "/locationctl" }

    /// argv[1] socket, argv[2] seconds: 8 threads, each on its own connection (again when closed), send
    /// AUTHORIZE with kilobyte names and FULLACCURACY with kilobyte purpose keys, ~100 a second each (under
    /// the per-connection flood limits); prints how many requests were sent.
    static let flood = """
        import json, socket, sys, threading, time
        path, seconds = sys.argv[1], float(sys.argv[2])
        names = ["a" + "\\u0301" * 4000, "\\u200b" * 2500, "x" + "\\u200d\\u0300" * 1500, "\\u202e" * 2500]
        reqs = [json.dumps({"class": "AUTHORIZE", "authorization": "once", "name": n}, ensure_ascii=False).encode() + b"\\n" for n in names]
        reqs.append(json.dumps({"class": "FULLACCURACY", "purposeKey": "\\u200b" * 4000}, ensure_ascii=False).encode() + b"\\n")
        sent = [0]
        lock = threading.Lock()
        end = time.time() + seconds
        def drain(s):
            try:
                while s.recv(65536): pass
            except OSError: pass
        def worker():
            while time.time() < end:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect(path)
                    threading.Thread(target=drain, args=(s,), daemon=True).start()
                    n = 0
                    while time.time() < end:
                        s.sendall(reqs[n % len(reqs)])
                        n += 1
                        with lock: sent[0] += 1
                        if n % 10 == 0: time.sleep(0.1)
                except OSError:
                    time.sleep(0.05)
                finally:
                    s.close()
        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        print(sent[0])
        """

    /// Bytes of the file at `path` (0 when missing).
    static func size(_ path: String) -> Int {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : 0
    }

    @Test("a flood with kilobyte names keeps the admin's and other users' records within the caps; AUDIT pages through it all")
    func floodKeepsOthersRecords() throws {
        let daemon = try DaemonProcess(config: E2E.config(policy: "access = ask"))
        let socket = ["--socket", daemon.socketPath]
        let state = daemon.directory + "/state"

        // Before the flood: the administrator's grant, and another user's decision.
        let grant = try E2E.run([Self.locationctl, "grant", "--executable", "/usr/bin/true", "--persistent"] + socket, in: daemon.directory)
        #expect(grant.status == 0, "\(grant)")
        let other = try E2E.asNobody(daemon.socketPath, lines: [#"{"class":"AUTHORIZE","authorization":"once","name":"Nobody's Map"}"#],
                                     seconds: 0.5)
        #expect(other.contains("no agent is running"), "\(other)")
        // Users 3…10 each kept 200 KiB from earlier (4096 records, 1.6 MB in all): more than a client
        // reads in one line (1 MiB), so AUDIT must come in pages.
        let earlier = wallClockSeconds() - 3600
        for uid in 3...10 {
            var text = ""
            for i in 0..<512 {
                let record = #"{"unix":\#(earlier + Double(uid * 1000 + i) / 1000),"event":"decision","client":{"pid":\#(i),"uid":\#(uid)},"request":"WATCH","status":"denied","reason":"kept from earlier \#(i) "#
                text += record + String(repeating: "x", count: 399 - record.utf8.count) + "\"}\n"
            }
            FileManager.default.createFile(atPath: state + "/audit-uid-\(uid).jsonl.1", contents: Data(text.utf8))
        }

        // The attacker, uid 1, for 3 seconds.
        let flood = try E2E.start(["setpriv", "--reuid=1", "--regid=1", "--clear-groups", "/usr/bin/python3", "-c", Self.flood,
                                   daemon.socketPath, "3"], in: daemon.directory)
        let result = E2E.finish(flood)
        let sent = Int(result.stdout.filter(\.isNumber)) ?? 0
        // A flood: far more than the user's audit budget (AddressSanitizer's daemon answers 2–3× slower:
        // 257 requests in 3 s there, still 12× the budget).
        #expect(sent > (Sanitizers.any ? 200 : 1000), "\(result)")
        usleep(300_000)

        let audit = try E2E.run([Self.locationctl, "audit", "--json"] + socket, in: daemon.directory)
        #expect(audit.status == 0, "\(audit.stderr)")
        let lines = audit.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.contains(#""event":"grant""#) && $0.contains("GRANT persistent") && $0.contains("/usr/bin/true") })
        #expect(lines.contains { $0.contains(#""uid":65534"#) && $0.contains(#""name":"Nobody's Map""#) && $0.contains("no agent is running") })
        #expect(lines.filter { $0.contains("kept from earlier") }.count == 8 * 512)
        // The attacker's records: its budget (20 decisions a minute), each a few hundred bytes.
        let attacker = lines.filter { $0.contains(#""uid":1,"#) }
        #expect(attacker.count == 20, "\(attacker.prefix(3))")
        let longest = attacker.map(\.utf8.count).max() ?? 0
        #expect(longest < 3000, "longest attacker record: \(longest) bytes")
        // Oldest first, across the buckets.
        let times = lines.compactMap { line -> Double? in
            guard let r = line.firstRange(of: #""unix":"#) else { return nil }
            return Double(line[r.upperBound...].prefix { $0.isNumber || $0 == "." })
        }
        #expect(times == times.sorted())

        // Every file within its cap: 1 MiB for the administrators, 256 KiB for each user.
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: state)) ?? []).filter { $0.hasPrefix("audit") }.sorted()
        for name in files {
            #expect(Self.size(state + "/" + name) <= (name.hasPrefix("audit.jsonl") ? 1 << 20 : 256 << 10), "\(name)")
        }
        let attackerBytes = Self.size(state + "/audit-uid-1.jsonl") + Self.size(state + "/audit-uid-1.jsonl.1")
        let total = files.reduce(0) { $0 + Self.size(state + "/" + $1) }
        print("audit after the flood: \(total) bytes in \(files.count) files (the attacker's: \(attackerBytes) bytes); "
              + "uid 1 sent \(sent) requests, \(attacker.count) of its records kept, the longest \(longest) bytes; "
              + "locationctl audit returned \(lines.count) events")
    }
}
