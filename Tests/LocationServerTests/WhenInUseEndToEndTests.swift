#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LocationPosix
import TestSupport
import Testing

/// When In Use with the real daemon (issue 14): a When-In-Use client receives nothing while its user
/// has no active login session and resumes when one is active, told by AUTHORIZATION.
///
/// The session state is injected at the libsystemd call funnel: the daemon runs with `LD_PRELOAD` of a
/// small library (`LoginShim.source`, built here) that defines libsystemd's own `sd_uid_get_state` and
/// `sd_login_monitor_*` over a directory of files — `DIR/UID` holds logind's word for that user — with
/// an inotify descriptor as the monitor, as libsystemd's is. Nothing of the daemon's is replaced.
@Suite("When In Use, end to end", .serialized)
struct WhenInUseEndToEndTests {
    enum LoginShim {
        static let source = #"""
            #include <stdint.h>
            #include <stdio.h>
            #include <stdlib.h>
            #include <string.h>
            #include <sys/inotify.h>
            #include <sys/types.h>
            #include <unistd.h>

            typedef struct sd_login_monitor sd_login_monitor;

            static const char *directory(void) {
                const char *d = getenv("LOCATIOND_TEST_LOGIN_DIR");
                return d ? d : "/nonexistent";
            }

            int sd_uid_get_state(uid_t uid, char **state) {
                char path[4096], word[64] = {0};
                snprintf(path, sizeof path, "%s/%u", directory(), (unsigned)uid);
                FILE *f = fopen(path, "r");
                if (f) {
                    if (!fgets(word, sizeof word, f)) word[0] = 0;
                    fclose(f);
                } else {
                    strcpy(word, "offline");
                }
                word[strcspn(word, "\n")] = 0;
                *state = strdup(word);
                return *state ? 0 : -12;
            }

            int sd_login_monitor_new(const char *category, sd_login_monitor **ret) {
                (void)category;
                int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
                if (fd < 0) return -1;
                if (inotify_add_watch(fd, directory(), IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE) < 0) { close(fd); return -1; }
                *ret = (sd_login_monitor *)(intptr_t)(fd + 1);
                return 0;
            }

            int sd_login_monitor_get_fd(sd_login_monitor *m) { return (int)(intptr_t)m - 1; }

            int sd_login_monitor_flush(sd_login_monitor *m) {
                char buffer[4096];
                while (read((int)(intptr_t)m - 1, buffer, sizeof buffer) > 0) {}
                return 0;
            }

            sd_login_monitor *sd_login_monitor_unref(sd_login_monitor *m) {
                if (m) close((int)(intptr_t)m - 1);
                return NULL;
            }
            """#

        /// Builds the library into `directory`; its path.
        static func build(in directory: String) throws -> String {
            let source = directory + "/login-shim.c", library = directory + "/login-shim.so"
            FileManager.default.createFile(atPath: source, contents: Data(Self.source.utf8))
            let built = try PolicyEndToEndTests.run(["cc", "-shared", "-fPIC", "-o", library, source], in: directory)
            guard built.status == 0 else { throw Errno(rawValue: EINVAL) }
            return library
        }
    }

    /// Sets logind's word for `uid` in `directory`, atomically (the monitor sees the rename).
    static func setState(_ word: String, uid: Int, in directory: String) {
        let temporary = directory + "/.\(uid).new"
        FileManager.default.createFile(atPath: temporary, contents: Data((word + "\n").utf8))
        rename(temporary, directory + "/\(uid)")
    }

    /// Lines from `client` until `until` matches one (included) or `timeout` passes.
    static func lines(_ client: RawClient, until: (String) -> Bool, timeout: Double) -> [String] {
        var out: [String] = []
        let end = monotonic() + timeout
        while let line = client.line(timeout: max(0, end - monotonic())) {
            out.append(line)
            if until(line) { break }
        }
        return out
    }

    @Test("a When-In-Use client streams while the session is active, gets nothing while it is not, and resumes")
    func pausesAndResumes() throws {
        var template = Array("/tmp/locationd-logins-XXXXXX".utf8CString)
        let logins = String(cString: try #require(mkdtemp(&template)))
        defer { _ = try? FileManager.default.removeItem(atPath: logins) }
        let shim = try LoginShim.build(in: logins)
        Self.setState("active", uid: 0, in: logins)
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = ask\naccuracy = full"),
                                       launcher: ["env", "LD_PRELOAD=\(shim)", "LOCATIOND_TEST_LOGIN_DIR=\(logins)"])
        let admin = try RawClient(daemon.socketPath)
        admin.send(#"{"class":"GRANT","executable":"\#(PolicyEndToEndTests.selfExecutable)","user":"0","kind":"whenInUse"}"#)
        let granted = try #require(admin.message("GRANTS"))
        guard case .array(let persistent)? = granted["persistent"] else { Issue.record("GRANTS without persistent"); return }
        #expect(persistent.first?.object?["whenInUse"]?.bool == true)

        let client = try RawClient(daemon.socketPath)
        client.send(#"{"class":"AUTHORIZE","authorization":"whenInUse"}"#)
        let authorized = try #require(client.message("AUTHORIZATION"))
        #expect(authorized["status"]?.string == "authorizedWhenInUse" && authorized["accuracy"]?.string == "full")
        #expect(authorized["inUse"] == nil)
        client.send(#"{"class":"WATCH"}"#)
        #expect(client.message("TPV") != nil, "streams while the session is active")

        // The session goes inactive (another user at the seat): told, then not one position.
        Self.setState("online", uid: 0, in: logins)
        let toPause = Self.lines(client, until: { $0.contains(#""class":"AUTHORIZATION""#) }, timeout: 5)
        let paused = try #require(toPause.last.flatMap(JSONValue.object))
        #expect(paused["status"]?.string == "authorizedWhenInUse" && paused["inUse"]?.bool == false && paused["accuracy"] == nil,
                "\(toPause.last ?? "no AUTHORIZATION")")
        let during = Self.lines(client, until: { _ in false }, timeout: 1.5)
        #expect(!during.contains { $0.contains("\"TPV\"") || $0.contains("\"lat\"") }, "\(during.prefix(3))")
        // A new connection of the same program meanwhile: authorized, watching, but nothing; POLL is refused.
        let another = try RawClient(daemon.socketPath)
        another.send(#"{"class":"AUTHORIZATION"}"#)
        #expect(another.message("AUTHORIZATION")?["inUse"]?.bool == false)
        another.send(#"{"class":"POLL","timeout":1}"#)
        #expect(another.message("ERROR")?["message"]?.string?.hasPrefix("not in use") == true)

        // Active again: told, and positions resume on the same WATCH.
        Self.setState("active", uid: 0, in: logins)
        let toResume = Self.lines(client, until: { $0.contains(#""class":"AUTHORIZATION""#) }, timeout: 5)
        #expect(!toResume.contains { $0.contains("\"TPV\"") }, "no position before the resume is announced")
        let resumed = try #require(toResume.last.flatMap(JSONValue.object))
        #expect(resumed["status"]?.string == "authorizedWhenInUse" && resumed["inUse"] == nil && resumed["accuracy"]?.string == "full")
        #expect(client.message("TPV") != nil, "streams again")
    }

    @Test("an Always grant streams whatever the session; logind's other words are not in use", arguments: ["offline", "lingering", "closing"])
    func alwaysIgnoresSession(word: String) throws {
        var template = Array("/tmp/locationd-logins-XXXXXX".utf8CString)
        let logins = String(cString: try #require(mkdtemp(&template)))
        defer { _ = try? FileManager.default.removeItem(atPath: logins) }
        let shim = try LoginShim.build(in: logins)
        Self.setState(word, uid: 0, in: logins)
        let daemon = try DaemonProcess(config: PolicyEndToEndTests.config(policy: "access = ask\naccuracy = full"),
                                       launcher: ["env", "LD_PRELOAD=\(shim)", "LOCATIOND_TEST_LOGIN_DIR=\(logins)"])
        let admin = try RawClient(daemon.socketPath)
        admin.send(#"{"class":"GRANT","executable":"\#(PolicyEndToEndTests.selfExecutable)","user":"0","kind":"whenInUse"}"#)
        #expect(admin.message("GRANTS") != nil)
        let client = try RawClient(daemon.socketPath)
        client.send(#"{"class":"AUTHORIZATION"}"#)
        #expect(client.message("AUTHORIZATION")?["inUse"]?.bool == false, "\(word) is not in use")
        admin.send(#"{"class":"GRANT","executable":"\#(PolicyEndToEndTests.selfExecutable)","user":"0","kind":"always"}"#)
        #expect(admin.message("GRANTS") != nil)
        let always = try #require(client.message("AUTHORIZATION"))
        #expect(always["status"]?.string == "authorizedPersistent" && always["inUse"] == nil)
        client.send(#"{"class":"WATCH"}"#)
        #expect(client.message("TPV") != nil)
    }
}
