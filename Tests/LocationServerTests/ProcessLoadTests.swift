#if canImport(Glibc)
import Glibc
#endif
import CPosixShims
import FoundationEssentials
@testable import LocationServer
import LocationPolicy
import LocationPosix
import Testing
import TestSupport

/// What makes a process count as its executable (ARCHITECTURE.md "Identity strength"), on real /proc text and
/// real processes.
@Suite("Identity: a clean load")
struct ProcessLoadTests {
    /// Lines of a real /proc/PID/maps (a Debian 12 bash, trimmed), with a path holding a space, a deleted file,
    /// anonymous JIT memory and the vDSO.
    static let maps = """
        55d0c4a3b000-55d0c4a6a000 r--p 00000000 fe:00 262401                     /usr/bin/bash
        55d0c4a6a000-55d0c4b49000 r-xp 0002f000 fe:00 262401                     /usr/bin/bash
        7f1a2b400000-7f1a2b426000 r--p 00000000 fe:00 333151                     /usr/lib/x86_64-linux-gnu/libc.so.6
        7f1a2b426000-7f1a2b57c000 r-xp 00026000 fe:00 333151                     /usr/lib/x86_64-linux-gnu/libc.so.6
        7f1a2b700000-7f1a2b701000 r-xp 00001000 fe:01 1234                       /home/alice/my lib/x.so
        7f1a2b800000-7f1a2b801000 r-xp 00001000 fe:00 999                        /tmp/gone.so (deleted)
        7f1a2b900000-7f1a2b910000 rwxp 00000000 00:00 0 
        7ffc3f1fe000-7ffc3f200000 r-xp 00000000 00:00 0                          [vdso]
        7f1a2ba00000-7f1a2ba26000 r-xp 00026000 fe:00 333151                     /usr/lib/x86_64-linux-gnu/libc.so.6
        """

    @Test("the files mapped executable, each once, with their device and inode; anonymous code left out")
    func executableFiles() {
        let files = ProcessLoad.executableFiles(inMaps: Array(Self.maps.utf8))
        #expect(files.map(\.path) == ["/usr/bin/bash", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/home/alice/my lib/x.so", "/tmp/gone.so (deleted)"])
        #expect(files.map(\.inode) == [262401, 333151, 1234, 999])
        // fe:00 is the device stat(2) reports as 65024 (0xfe00); fe:01 as 65025.
        #expect(files.map(\.device) == [65024, 65024, 65025, 65024])
    }

    @Test("a mapped file counts only as root's, not writable by group or others, and the very file at its path here")
    func untrustedFiles() throws {
        guard case .success(let libc) = FileDescriptorOps.status(ofFileAt: "/usr/lib/x86_64-linux-gnu/libc.so.6") else { return }
        let real = ProcessLoad.MappedFile(path: "/usr/lib/x86_64-linux-gnu/libc.so.6", device: libc.device, inode: libc.inode)
        #expect(ProcessLoad.untrusted(real) == nil)
        var other = real
        other.inode += 1
        #expect(ProcessLoad.untrusted(other)?.contains("not the file at that path here") == true)
        let deleted = ProcessLoad.MappedFile(path: "/tmp/gone.so (deleted)", device: 1, inode: 2)
        #expect(ProcessLoad.untrusted(deleted)?.contains("deleted or replaced") == true)
        // A file of another user, and one others may write.
        let directory = try TemporaryDirectories.make("processload")
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/x.so"
        FileManager.default.createFile(atPath: path, contents: Data([0]))
        chown(path, 1, 1)
        guard case .success(let file) = FileDescriptorOps.status(ofFileAt: path) else { Issue.record("no stat"); return }
        let mapped = ProcessLoad.MappedFile(path: path, device: file.device, inode: file.inode)
        #expect(ProcessLoad.untrusted(mapped) == (getuid() == 0 ? "it runs code from \(path), owned by uid 1, not root" : ProcessLoad.untrusted(mapped)))
        // The daemon's own user's files are trusted: a daemon a user runs for itself trusts that user's build.
        #expect(ProcessLoad.trustedOwners == [0, geteuid()])
        if getuid() == 0 {
            chown(path, 0, 0)
            chmod(path, 0o775)
            #expect(ProcessLoad.untrusted(mapped) == "it runs code from \(path), which group or others may write")
            chmod(path, 0o755)
            #expect(ProcessLoad.untrusted(mapped) == nil)
        }
    }

    /// A directory of uid 1's, for variables that name it.
    static let userDirectory: String = {
        let directory = (try? TemporaryDirectories.make("processload-env")) ?? "/tmp"
        chown(directory, 1, 1)
        return directory
    }()

    @Test("loader and plugin variables naming untrusted places, and harmless ones", .enabled(if: getuid() == 0))
    func injection() {
        let user = Self.userDirectory
        let cases: [(String, String?)] = [
            ("HOME=/root\0LD_PRELOAD=\(user)/x.so\0", "LD_PRELOAD in its environment names \(user)/x.so, owned by uid 1, not root (in \(user))"),
            ("LD_LIBRARY_PATH=\(user)\0", "LD_LIBRARY_PATH in its environment names \(user), owned by uid 1, not root"),
            ("LD_LIBRARY_PATH=/usr/lib:\0", "LD_LIBRARY_PATH in its environment names the current directory"),
            ("LD_AUDIT=./a.so\0", "LD_AUDIT in its environment names ./a.so, a relative path"),
            ("GTK_MODULES=\(user)/evil.so\0", "GTK_MODULES in its environment names \(user)/evil.so, owned by uid 1, not root (in \(user))"),
            ("GIO_EXTRA_MODULES=/tmp\0", "GIO_EXTRA_MODULES in its environment names /tmp, which group or others may write"),
            // Root's places, names looked up in the system's directories, and other programs' variables: harmless.
            ("LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu:/opt\0LD_BIND_NOW=1\0", nil),
            ("GTK_MODULES=gail:atk-bridge\0QT_PLUGIN_PATH=/usr/lib/x86_64-linux-gnu/qt5/plugins\0", nil),
            ("PYTHONPATH=\(user)\0PERL5OPT=-MFoo\0BASH_FUNC_which%%=() { id; }\0CLASSPATH=.\0", nil),
            ("PYTHONUNBUFFERED=1\0LANG=C.UTF-8\0XLD_PRELOAD=./x\0", nil),
        ]
        for (environment, why) in cases {
            #expect(ProcessLoad.injection(inEnvironment: Array(environment.utf8)) == why, "\(environment)")
        }
    }

    @Test("interpreters by their Debian names, with or without a version", arguments: [
        ("/usr/bin/python3.11", true), ("/usr/bin/perl", true), ("/usr/bin/perl5.36.0", true), ("/usr/bin/dash", true),
        ("/usr/bin/bash", true), ("/usr/bin/tclsh8.6", true), ("/usr/bin/guile-3.0", true), ("/usr/bin/node", true),
        ("/usr/bin/gpspipe", false), ("/usr/bin/sleep", false), ("/usr/bin/navit", false), ("/usr/bin/ssh", false),
    ])
    func interpreters(path: String, interpreter: Bool) {
        #expect(ProcessLoad.isInterpreter(path) == interpreter)
    }

    @Test("another user's environment is read from its memory, the same bytes /proc/PID/environ shows its owner")
    func environmentFromMemory() throws {
        guard case .success(let stat) = FileDescriptorOps.readFile(atPath: "/proc/self/stat", maximumBytes: 4096),
              let range = ProcessLoad.environmentRange(inStat: stat),
              case .success(let direct) = FileDescriptorOps.readFile(atPath: "/proc/self/environ", maximumBytes: 1 << 20) else {
            Issue.record("no /proc/self")
            return
        }
        var bytes = [UInt8](repeating: 0, count: Int(range.end - range.start))
        let count = bytes.count
        let read = bytes.withUnsafeMutableBytes { locationd_read_process_memory(getpid(), range.start, $0.baseAddress, count) }
        #expect(read == count)
        #expect(bytes == direct)
    }

    @Test("a real process: clean as started, tainted by LD_LIBRARY_PATH, and run by uid 1 read by root", .enabled(if: getuid() == 0))
    func realProcesses() throws {
        for (environment, taint) in [([] as [String], nil as String?),
                                     (["LD_LIBRARY_PATH=/tmp"], "LD_LIBRARY_PATH in its environment names /tmp, which group or others may write")] {
            let started = try PolicyEndToEndTests.start(["setpriv", "--reuid=1", "--regid=1", "--clear-groups", "env", "-i"] + environment
                                                        + ["/usr/bin/sleep", "5"], in: "/tmp")
            defer { kill(started.pid, SIGKILL); _ = PolicyEndToEndTests.finish(started) }
            #expect(IdentityBorrowingTests.waitUntil(seconds: 5) { IdentityBorrowingTests.command(started.pid) == "sleep" })
            let facts = try #require(HolderFacts.read(started.pid))
            #expect(facts.executable == "/usr/bin/sleep")
            #expect(facts.taint == taint)
            #expect(facts.isOfUser(1))
        }
    }
}

/// What the holders of a connection make of it (`HeldProgram.resolve`): the least any of them would get.
@Suite("Identity: the holders of a connection")
struct HeldProgramTests {
    static func holder(_ pid: Int32, uid: UInt32 = 1000, exe: String? = "/usr/bin/navit", unit: String? = nil,
                       systemSlice: Bool = false, taint: String? = nil) -> HolderFacts {
        HolderFacts(pid: pid, uids: [uid, uid, uid, uid], gid: uid, groups: [], program: exe, executable: exe, unit: unit,
                    inSystemSlice: systemSlice, taint: taint)
    }

    @Test("one clean holder: its verified executable")
    func verified() throws {
        let held = try HeldProgram.resolve(uid: 1000, holders: [Self.holder(10), Self.holder(11)], unreadUsers: [])
        #expect(held.executable == "/usr/bin/navit" && held.strength == .verifiedExecutable)
    }

    @Test("a holder of another user refuses the connection, on every front")
    func otherUser() {
        for mixed in [false, true] {
            #expect(throws: PeerRefusal.otherUsers([1001])) {
                try HeldProgram.resolve(uid: 1000, holders: [Self.holder(10), Self.holder(11, uid: 1001)], unreadUsers: [])
            }
        }
    }

    @Test("different programs: known by the user alone")
    func differentPrograms() throws {
        let holders = [Self.holder(10, exe: "/usr/bin/sleep"), Self.holder(11, exe: "/usr/bin/python3.11")]
        let held = try HeldProgram.resolve(uid: 1000, holders: holders, unreadUsers: [])
        #expect(held.executable == nil && held.strength == .unverified(reason: "held by processes of different programs (pids 10,11)"))
    }

    @Test("a tainted load, an interpreter, unreadable users: unverified, with the reason")
    func unverified() throws {
        let tainted = try HeldProgram.resolve(uid: 1000, holders: [Self.holder(10, taint: "LD_PRELOAD in its environment")],
                                              unreadUsers: [])
        #expect(tainted.executable == nil && tainted.strength == .unverified(reason: "LD_PRELOAD in its environment"))
        let python = try HeldProgram.resolve(uid: 1000, holders: [Self.holder(10, exe: "/usr/bin/python3.11")], unreadUsers: [])
        #expect(python.executable == nil && python.interpreter == "/usr/bin/python3.11" && !python.strength.isVerified)
        // An interpreter's load is not judged: interpreter = yes accepts any code of its user already.
        let pip = try HeldProgram.resolve(uid: 1000, holders: [Self.holder(10, exe: "/usr/bin/python3.11", taint: "it runs code from /home/a/x.so")],
                                          unreadUsers: [])
        #expect(pip.interpreter == "/usr/bin/python3.11")
        let unread = try HeldProgram.resolve(uid: 1000, holders: [Self.holder(10)], unreadUsers: [1001])
        #expect(unread.executable == nil && !unread.strength.isVerified)
    }

    @Test("units: a system unit under system.slice; a user manager's unit only as user-unit")
    func units() throws {
        let system = try HeldProgram.resolve(uid: 1000, holders: [Self.holder(10, unit: "navit.service", systemSlice: true)],
                                             unreadUsers: [])
        #expect(system.unit == "navit.service" && system.strength == .systemUnit)
        let user = try HeldProgram.resolve(uid: 1000, holders: [Self.holder(10, unit: "user@1000.service/navit.service")],
                                           unreadUsers: [])
        #expect(user.unit == nil && user.userUnit == "navit.service" && user.strength == .verifiedExecutable)
    }

    @Test("a re-check backs the first look while it names the same program; a weaker first look loses nothing")
    func stillBacks() throws {
        let first = try HeldProgram.resolve(uid: 1000, holders: [Self.holder(10)], unreadUsers: [])
        let forked = try HeldProgram.resolve(uid: 1000, holders: [Self.holder(10), Self.holder(12)], unreadUsers: [])
        let joined = try HeldProgram.resolve(uid: 1000, holders: [Self.holder(10), Self.holder(12, exe: "/usr/bin/python3.11")],
                                             unreadUsers: [])
        #expect(forked.stillBacks(first))
        #expect(!joined.stillBacks(first))
        #expect(first.stillBacks(joined))
        // Held outside every login session at first (a service, a job), then also by a process in a session: no
        // longer backed — a When-In-Use grant made for it applies while it runs only outside sessions (issue 33).
        var service = Self.holder(10)
        service.outsideLoginSessions = true
        var alsoService = Self.holder(12)
        alsoService.outsideLoginSessions = true
        let outside = try HeldProgram.resolve(uid: 1000, holders: [service], unreadUsers: [])
        #expect(outside.outsideLoginSessions)
        #expect(try HeldProgram.resolve(uid: 1000, holders: [service, alsoService], unreadUsers: []).stillBacks(outside))
        let inSession = try HeldProgram.resolve(uid: 1000, holders: [service, Self.holder(12)], unreadUsers: [])
        #expect(!inSession.outsideLoginSessions && !inSession.stillBacks(outside))
    }
}
