#if canImport(Glibc)
import Glibc
#endif
import LocationPolicy
@testable import LocationServer
import Testing

/// Standing approvals are added to the grant store compatibly (issue 14): a store written by the code
/// before them loads unchanged and means what it meant (its pre-approvals are single ones, used up by the
/// next connection), is written back byte for byte, and a standing approval round-trips.
@Suite("Grant store: standing approvals")
struct StandingStoreTests {
    /// `grants.json` written by the code before standing approvals (commit 821c3cc): its
    /// `GrantStoreFormat.encode` and pretty-printer, built from that commit's sources and run on the
    /// grants below, output pasted unchanged. Agents' per-user decisions, an administrator's expiring
    /// grant, and two single pre-approvals.
    static let previousStore = #"""
        {
          "persistent" : [
            {
              "accuracy" : "full",
              "allowed" : true,
              "created" : 1790000000,
              "decidedBy" : "agent root (uid 0)",
              "subject" : {
                "executable" : {
                  "_0" : "/usr/bin/python3.11",
                  "user" : "1000"
                }
              }
            },
            {
              "accuracy" : "reduced",
              "allowed" : false,
              "created" : 1790000100,
              "decidedBy" : "agent root (uid 0)",
              "subject" : {
                "executable" : {
                  "_0" : "/usr/bin/curl",
                  "user" : "1001"
                }
              }
            },
            {
              "accuracy" : "reduced",
              "allowed" : true,
              "created" : 1790000200,
              "decidedBy" : "administrator root (uid 0)",
              "expires" : 1800000000,
              "subject" : {
                "unit" : {
                  "_0" : "navit.service"
                }
              }
            }
          ],
          "preapprovals" : [
            {
              "accuracy" : "full",
              "created" : 1790000300,
              "subject" : {
                "executable" : {
                  "_0" : "/usr/bin/map",
                  "user" : "1000"
                }
              }
            },
            {
              "accuracy" : "reduced",
              "created" : 1790000400,
              "expires" : 1790003600,
              "subject" : {
                "user" : {
                  "_0" : "1002"
                }
              }
            }
          ]
        }
        """#

    /// What `previousStore` meant to the code that wrote it.
    static let previousGrants = GrantSet(
        persistent: [
            PersistentGrant(subject: .executable("/usr/bin/python3.11", user: "1000"), allowed: true, accuracy: .full,
                            created: 1_790_000_000, decidedBy: "agent root (uid 0)"),
            PersistentGrant(subject: .executable("/usr/bin/curl", user: "1001"), allowed: false, accuracy: .reduced,
                            created: 1_790_000_100, decidedBy: "agent root (uid 0)"),
            PersistentGrant(subject: .unit("navit.service"), allowed: true, accuracy: .reduced, created: 1_790_000_200,
                            expires: 1_800_000_000, decidedBy: "administrator root (uid 0)"),
        ],
        preapprovals: [
            Preapproval(subject: .executable("/usr/bin/map", user: "1000"), accuracy: .full, created: 1_790_000_300),
            Preapproval(subject: .user("1002"), accuracy: .reduced, created: 1_790_000_400, expires: 1_790_003_600),
        ])

    @Test("a store written before standing approvals loads unchanged: its pre-approvals are single ones, and it writes back byte for byte")
    func previousStoreLoads() throws {
        let dir = GrantStoreTests.directory(grants: Self.previousStore + "\n")
        let store = GrantStore(directory: dir, log: GrantStoreTests.log)
        #expect(store.grants == Self.previousGrants)
        #expect(store.grants.preapprovals.allSatisfy { !$0.standing && $0.decidedBy == nil })
        // Rewritten by the new code (a change that leaves the grants as they were): the same bytes.
        try store.update { _ in }
        #expect(String(decoding: try GrantStoreTests.contents(dir + "/grants.json"), as: UTF8.self) == Self.previousStore + "\n")
    }

    @Test("a single pre-approval from the previous store is still used up; nothing in it is read as standing")
    func previousMeaning() {
        let alicesMap = ClientIdentity(pid: 1, uid: 1000, gid: 1000, user: "alice", executable: "/usr/bin/map")
        let grants = Self.previousGrants
        var rules = PolicyRules()
        rules.defaults.accuracy = .full
        let decision = Policy.decide(.authorize(.once, .full), identity: alicesMap, session: .init(), rules: rules, grants: grants,
                                     now: PolicyTime(monotonic: .now, wall: 1_790_000_500))
        #expect(decision == .grantOnce(.full, usingPreapproval: 0))
        #expect(!grants.preapprovals[0].standing)
    }

    @Test("a When-In-Use grant is written with whenInUse; the previous store's grants have none and are Always")
    func whenInUseRoundTrip() throws {
        #expect(Self.previousGrants.persistent.allSatisfy { !$0.whenInUse })
        var grants = Self.previousGrants
        grants.persistent.append(PersistentGrant(subject: .executable("/usr/bin/map", user: "1000"), allowed: true, accuracy: .full,
                                                 created: 1_790_000_600, decidedBy: "agent root (uid 0)", whenInUse: true))
        let dir = GrantStoreTests.directory()
        try GrantStore(directory: dir, log: GrantStoreTests.log).update { $0 = grants }
        let text = String(decoding: try GrantStoreTests.contents(dir + "/grants.json"), as: UTF8.self)
        #expect(text.components(separatedBy: "\"whenInUse\" : true").count == 2, "written for the When-In-Use grant only")
        #expect(GrantStore(directory: dir, log: GrantStoreTests.log).grants == grants)
    }

    @Test("a standing approval is written with standing and decidedBy, and reads back")
    func standingRoundTrip() throws {
        var grants = Self.previousGrants
        grants.preapprovals.append(Preapproval(subject: .executable("/usr/bin/map", user: "1001"), accuracy: .reduced, created: 1_790_000_500,
                                               standing: true, decidedBy: "agent root (uid 0)"))
        let dir = GrantStoreTests.directory()
        try GrantStore(directory: dir, log: GrantStoreTests.log).update { $0 = grants }
        let text = String(decoding: try GrantStoreTests.contents(dir + "/grants.json"), as: UTF8.self)
        #expect(text.contains("""
                  "created" : 1790000500,
                  "decidedBy" : "agent root (uid 0)",
                  "standing" : true,
            """))
        #expect(GrantStore(directory: dir, log: GrantStoreTests.log).grants == grants)
    }
}
