#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPolicy
import LocationPosix
@testable import LocationServer
import Testing
import TestSupport

/// The grant store's file across the move off Foundation: stores written by the old code load, stores
/// written now load in the old code (Foundation's `JSONDecoder`, used here only as that reference),
/// corrupt ones are moved aside. Also the fudger secret and the audit file, which read through
/// `FileDescriptorOps.readFile` now.
@Suite("Grant store")
struct GrantStoreTests {
    /// `grants.json` as the daemon wrote it before: produced once with the then-current code (Foundation's
    /// `JSONEncoder`, `.prettyPrinted` and `.sortedKeys`, over `GrantSet`'s synthesized `Codable`) from
    /// `oldStoreGrants` below, and pasted here unchanged. Note the `_0` payloads and the escaped slashes.
    static let oldStore = #"""
        {
          "persistent" : [
            {
              "accuracy" : "full",
              "allowed" : true,
              "created" : 1700000000,
              "decidedBy" : "agent",
              "subject" : {
                "executable" : {
                  "_0" : "\/usr\/bin\/navit"
                }
              }
            },
            {
              "accuracy" : "reduced",
              "allowed" : false,
              "created" : 1700000123.25,
              "decidedBy" : "admin uid 0",
              "expires" : 1800000000.5,
              "subject" : {
                "unit" : {
                  "_0" : "weather.service"
                }
              }
            },
            {
              "accuracy" : "reduced",
              "allowed" : true,
              "created" : 1e+16,
              "decidedBy" : "agent",
              "expires" : 0.1,
              "subject" : {
                "user" : {
                  "_0" : "alice \"ally\" \\ ü\/\u0001"
                }
              }
            }
          ],
          "preapprovals" : [
            {
              "accuracy" : "full",
              "created" : 1700000200,
              "expires" : 1700003800,
              "subject" : {
                "executable" : {
                  "_0" : "\/opt\/map\/bin\/map"
                }
              }
            },
            {
              "accuracy" : "reduced",
              "created" : 1700000300.125,
              "subject" : {
                "user" : {
                  "_0" : "1000"
                }
              }
            }
          ]
        }
        """#

    static let oldStoreGrants = GrantSet(
        persistent: [
            PersistentGrant(subject: .executable("/usr/bin/navit"), allowed: true, accuracy: .full, created: 1_700_000_000, decidedBy: "agent"),
            PersistentGrant(subject: .unit("weather.service"), allowed: false, accuracy: .reduced, created: 1_700_000_123.25,
                            expires: 1_800_000_000.5, decidedBy: "admin uid 0"),
            PersistentGrant(subject: .user("alice \"ally\" \\ ü/\u{1}"), allowed: true, accuracy: .reduced, created: 1e16, expires: 0.1,
                            decidedBy: "agent"),
        ],
        preapprovals: [
            Preapproval(subject: .executable("/opt/map/bin/map"), accuracy: .full, created: 1_700_000_200, expires: 1_700_003_800),
            Preapproval(subject: .user("1000"), accuracy: .reduced, created: 1_700_000_300.125),
        ])

    static let log = Log(level: .error)

    /// A fresh state directory, optionally holding `grants.json` with `text`.
    static func directory(grants text: String? = nil) -> String {
        var template = Array("/tmp/locationd-grants-XXXXXX".utf8CString)
        let dir = String(cString: TemporaryDirectories.mkdtemp(&template)!)
        if let text { _ = GrantStore.writeAtomicallyForTests(path: dir + "/grants.json", text) }
        return dir
    }

    static func files(in dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let entry = readdir(d) {
            let name = FileDescriptorOps.entryName(entry)
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    static func contents(_ path: String) throws -> [UInt8] {
        try FileDescriptorOps.readFile(atPath: path).get()
    }

    @Test("a store written by the old code loads into the same grants")
    func oldStoreLoads() throws {
        let dir = Self.directory(grants: Self.oldStore)
        let store = GrantStore(directory: dir, log: Self.log)
        #expect(store.grants == Self.oldStoreGrants)
        #expect(Self.files(in: dir) == ["grants.json"])
        // And the literal is what Foundation's JSONDecoder reads it as (the literal is the old format).
        #expect(try JSONDecoder().decode(GrantSet.self, from: Data(Self.oldStore.utf8)) == Self.oldStoreGrants)
    }

    @Test("what the store writes loads back equal, and loads in the old code (JSONDecoder) equal too")
    func roundTrip() throws {
        let dir = Self.directory()
        let store = GrantStore(directory: dir, log: Self.log)
        #expect(store.grants == GrantSet())
        try store.update { $0 = Self.oldStoreGrants }
        let written = try Self.contents(dir + "/grants.json")
        #expect(GrantStore(directory: dir, log: Self.log).grants == Self.oldStoreGrants)
        #expect(try JSONDecoder().decode(GrantSet.self, from: Data(written)) == Self.oldStoreGrants)
        try store.update { $0 = GrantSet() }
        let empty = try Self.contents(dir + "/grants.json")
        #expect(String(decoding: empty, as: UTF8.self) == "{\n  \"persistent\" : [],\n  \"preapprovals\" : []\n}\n")
        #expect(try JSONDecoder().decode(GrantSet.self, from: Data(empty)) == GrantSet())
        var st = stat()
        #expect(stat(dir + "/grants.json", &st) == 0 && st.st_mode & 0o777 == 0o600)
        #expect(Self.files(in: dir) == ["grants.json"])
    }

    @Test("the file is pretty-printed with sorted names, as JSONEncoder wrote it; expires is left out when nil")
    func writtenText() throws {
        let dir = Self.directory()
        let store = GrantStore(directory: dir, log: Self.log)
        try store.update {
            $0.persistent = [PersistentGrant(subject: .executable("/usr/bin/navit"), allowed: true, accuracy: .full,
                                             created: 1_700_000_000, decidedBy: "agent")]
            $0.preapprovals = [Preapproval(subject: .unit("a.service"), accuracy: .reduced, created: 1_700_000_000.5, expires: 1_700_003_600)]
        }
        #expect(String(decoding: try Self.contents(dir + "/grants.json"), as: UTF8.self) == """
            {
              "persistent" : [
                {
                  "accuracy" : "full",
                  "allowed" : true,
                  "created" : 1700000000,
                  "decidedBy" : "agent",
                  "subject" : {
                    "executable" : {
                      "_0" : "/usr/bin/navit"
                    }
                  }
                }
              ],
              "preapprovals" : [
                {
                  "accuracy" : "reduced",
                  "created" : 1700000000.5,
                  "expires" : 1700003600,
                  "subject" : {
                    "unit" : {
                      "_0" : "a.service"
                    }
                  }
                }
              ]
            }

            """)
    }

    @Test("an agent's decision is stored for the user and the program: the uid sits next to the path, and reads back")
    func perUserSubjectRoundTrip() throws {
        let grants = GrantSet(persistent: [
            PersistentGrant(subject: .executable("/usr/bin/python3.11", user: "1000"), allowed: true, accuracy: .full,
                            created: 1_700_000_000, decidedBy: "agent root (uid 0)"),
            PersistentGrant(subject: .executable("/usr/bin/python3.11", user: "1001"), allowed: false, accuracy: .reduced,
                            created: 1_700_000_100, decidedBy: "agent root (uid 0)"),
            PersistentGrant(subject: .unit("navit.service", user: "alice"), allowed: true, accuracy: .reduced,
                            created: 1_700_000_200, decidedBy: "administrator root (uid 0)"),
            PersistentGrant(subject: .executable("/usr/bin/navit"), allowed: true, accuracy: .full, created: 1_700_000_300,
                            decidedBy: "administrator root (uid 0)"),
        ], preapprovals: [Preapproval(subject: .executable("/usr/bin/curl", user: "1000"), accuracy: .reduced, created: 1_700_000_400)])
        let dir = Self.directory()
        let store = GrantStore(directory: dir, log: Self.log)
        try store.update { $0 = grants }
        let written = try Self.contents(dir + "/grants.json")
        let text = String(decoding: written, as: UTF8.self)
        #expect(text.contains("""
                  "subject" : {
                    "executable" : {
                      "_0" : "/usr/bin/python3.11",
                      "user" : "1000"
                    }
                  }
            """))
        // A subject without a user is written exactly as before: no "user" member.
        #expect(text.contains("""
                    "executable" : {
                      "_0" : "/usr/bin/navit"
                    }
            """))
        #expect(GrantStore(directory: dir, log: Self.log).grants == grants)
        // The layout is the one GrantSubject's synthesized Codable gives executable(_:user:).
        #expect(try JSONDecoder().decode(GrantSet.self, from: Data(written)) == grants)
    }

    @Test("a corrupt store is moved aside and the store starts empty", arguments: [
        // A subject's user that is not a string.
        #"{"persistent":[],"preapprovals":[{"accuracy":"full","created":1,"subject":{"executable":{"_0":"/x","user":1000}}}]}"#,
        "{\"persistent\": [",  // cut short
        "",
        "not json",
        #"{"persistent":[]}"#,  // a member missing
        #"{"persistent":{},"preapprovals":[]}"#,
        #"{"persistent":[{"accuracy":"exact","allowed":true,"created":1,"decidedBy":"a","subject":{"user":{"_0":"x"}}}],"preapprovals":[]}"#,
        #"{"persistent":[{"accuracy":"full","allowed":1,"created":1,"decidedBy":"a","subject":{"user":{"_0":"x"}}}],"preapprovals":[]}"#,
        #"{"persistent":[],"preapprovals":[{"accuracy":"full","created":"1","subject":{"user":{"_0":"x"}}}]}"#,
        #"{"persistent":[],"preapprovals":[{"accuracy":"full","created":1,"subject":{"user":{"_0":"x"},"unit":{"_0":"y"}}}]}"#,
        #"{"persistent":[],"preapprovals":[{"accuracy":"full","created":1,"subject":{"group":{"_0":"x"}}}]}"#,
        #"{"persistent":[],"preapprovals":[{"accuracy":"full","created":1,"subject":{"user":"x"}}]}"#,
        #"{"persistent":[],"preapprovals":[{"accuracy":"full","created":1e999,"subject":{"user":{"_0":"x"}}}]}"#,
    ])
    func corruptStore(text: String) throws {
        let dir = Self.directory(grants: text)
        let store = GrantStore(directory: dir, log: Self.log)
        #expect(store.grants == GrantSet())
        let files = Self.files(in: dir)
        #expect(files.count == 1 && files[0].hasPrefix("grants.json.corrupt-"))
        #expect(try Self.contents(dir + "/" + files[0]) == Array(text.utf8))
        // The old code refused each of these too.
        #expect(throws: (any Error).self) { try JSONDecoder().decode(GrantSet.self, from: Data(text.utf8)) }
    }

    @Test("a trailing comma, which JSONDecoder let through, is corrupt now (RFC 8259): moved aside, fail closed")
    func trailingComma() throws {
        let text = #"{"persistent":[],"preapprovals":[],}"#
        #expect(try JSONDecoder().decode(GrantSet.self, from: Data(text.utf8)) == GrantSet())
        let dir = Self.directory(grants: text)
        #expect(GrantStore(directory: dir, log: Self.log).grants == GrantSet())
        #expect(Self.files(in: dir).map { $0.hasPrefix("grants.json.corrupt-") } == [true])
    }

    @Test("what the old code read, the new code reads: unknown members, null expires, a subject's unknown members")
    func tolerated() throws {
        let text = #"""
            {"version":2,"persistent":[{"accuracy":"full","allowed":true,"created":5,"decidedBy":"a","expires":null,
             "subject":{"note":"x","user":{"_0":"bob","_1":"ignored"}}}],"preapprovals":[]}
            """#
        let expected = GrantSet(persistent: [PersistentGrant(subject: .user("bob"), allowed: true, accuracy: .full, created: 5, decidedBy: "a")])
        #expect(GrantStore(directory: Self.directory(grants: text), log: Self.log).grants == expected)
        #expect(try JSONDecoder().decode(GrantSet.self, from: Data(text.utf8)) == expected)
    }

    @Test("an unreadable store (here a directory) is moved aside too, so the next write cannot destroy it")
    func unreadableStore() {
        let dir = Self.directory()
        mkdir(dir + "/grants.json", 0o700)
        #expect(GrantStore(directory: dir, log: Self.log).grants == GrantSet())
        #expect(Self.files(in: dir).map { $0.hasPrefix("grants.json.corrupt-") } == [true])
    }

    @Test("no store: empty, and nothing is created until a change")
    func missingStore() {
        let dir = Self.directory()
        #expect(GrantStore(directory: dir, log: Self.log).grants == GrantSet())
        #expect(Self.files(in: dir).isEmpty)
    }

    @Test("the fudger secret is made once and read back across restarts")
    func fudgerSecret() throws {
        let dir = Self.directory()
        let first = FudgerSecret.load(directory: dir, log: Self.log)
        #expect(first.secret.count == 32)
        #expect(try Self.contents(dir + "/fudger.secret").count == 40)
        let second = FudgerSecret.load(directory: dir, log: Self.log)
        #expect(second.secret == first.secret && second.originHour == first.originHour)
        // A file of the wrong size is replaced.
        _ = GrantStore.writeAtomicallyForTests(path: dir + "/fudger.secret", String(repeating: "x", count: 41))
        let third = FudgerSecret.load(directory: dir, log: Self.log)
        #expect(third.secret != Array(repeating: UInt8(ascii: "x"), count: 32))
        #expect(try Self.contents(dir + "/fudger.secret").count == 40)
    }

    @Test("the audit file's lines are read back from the rotated and current files, filtered by time")
    func auditLines() {
        let dir = Self.directory()
        let audit = AuditLog(directory: dir, maximumBytes: 64)
        for t in 1...4 { audit.append(Array(#"{"unix":\#(t)00,"event":"e\#(t)"}"#.utf8)) }
        let all = audit.lines(since: nil)
        #expect(all.last == #"{"unix":400,"event":"e4"}"#)
        #expect(all == (1...4).map { #"{"unix":\#($0)00,"event":"e\#($0)"}"# })
        #expect(audit.lines(since: 300) == [#"{"unix":300,"event":"e3"}"#, #"{"unix":400,"event":"e4"}"#])
    }

    @Test("readFile reads whole files, and says why it cannot")
    func readFile() throws {
        let dir = Self.directory()
        let big = String(repeating: "0123456789abcdef", count: 5000)  // several read(2) chunks
        _ = GrantStore.writeAtomicallyForTests(path: dir + "/big", big)
        #expect(try Self.contents(dir + "/big") == Array(big.utf8))
        #expect(FileDescriptorOps.readFile(atPath: dir + "/big", maximumBytes: 100) == .failure(.fileTooLarge))
        #expect(FileDescriptorOps.readFile(atPath: dir + "/none") == .failure(.noSuchFileOrDirectory))
        #expect(FileDescriptorOps.readFile(atPath: dir) == .failure(.isADirectory))
    }
}

extension GrantStore {
    /// Writes `text` to `path` the way the store does (temporary file, fsync, rename).
    static func writeAtomicallyForTests(path: String, _ text: String) -> Bool {
        (try? FileDescriptorOps.writeAtomically(path: path, bytes: Array(text.utf8))) != nil
    }
}
