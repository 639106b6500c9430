#if canImport(Glibc)
import Glibc
#endif
@testable import LocationPosix
import LocationPolicy
@testable import LocationServer
import Testing
import TestSupport

/// Issue 32, sandboxed apps: the parsing of AppArmor labels and `/.flatpak-info` files, recorded from the
/// formats snapd and flatpak write (this machine has neither a snap nor a Flatpak, nor an LSM that labels
/// sockets), rules and config keys for `app-id`.
@Suite("Sandboxed apps: labels, .flatpak-info, rules")
struct SandboxIdentityTests {
    @Test("an enforcing snap label names its snap", arguments: [
        ("snap.firefox.firefox (enforce)", "firefox"),
        ("snap.firefox.geckodriver (enforce)", "firefox"),
        ("snap.firefox.hook.configure (enforce)", "firefox"),
        ("snap.firefox.hook.post-refresh (enforce)", "firefox"),
        ("snap.firefox_beta.firefox (enforce)", "firefox_beta"),
        ("snap.gnome-calculator.gnome-calculator (enforce)", "gnome-calculator"),
        ("snap.mosquitto.mosquitto (enforce)", "mosquitto"),
    ])
    func snapLabels(label: String, snap: String) {
        #expect(ClientIdentity.snapApp(fromAppArmorLabel: label) == snap)
    }

    @Test("anything else is not a snap", arguments: [
        "unconfined",
        "/usr/bin/man (enforce)",
        "/usr/sbin/cupsd (enforce)",
        "snap.x.y (complain)",              // complain mode: logged, not confined
        "snap.firefox.firefox (complain)",
        "snap.firefox.firefox (unconfined)", // AppArmor 4's unconfined profile mode
        "snap.firefox.firefox (mixed)",
        "snap.firefox.firefox",              // no mode
        "snap-update-ns.firefox (enforce)",  // snapd's mount helper, not the app
        "snap.firefox (enforce)",
        "snap.firefox.hook.Configure (enforce)",
        "snap..firefox (enforce)",
        "snap.Firefox.firefox (enforce)",
        "snap.fire--fox.firefox (enforce)",
        "snap.firefox_.firefox (enforce)",
        "snap.firefox.firefox//&lxd-c1_</var/snap/lxd/common/lxd> (enforce)", // a stack
        "snap.firefox.firefox//null-/usr/bin/evil (enforce)",                // a child profile
        ":lxd-c1_<var-snap-lxd-common-lxd>:snap.firefox.firefox (enforce)",   // another policy namespace
        "snap.firefox.fire fox (enforce)",
        "",
    ])
    func notSnapLabels(label: String) {
        #expect(ClientIdentity.snapApp(fromAppArmorLabel: label) == nil)
    }

    @Test("a label as the kernel hands it: NUL and line end cut, empty is none")
    func rawLabels() {
        #expect(PeerProcess.label(Array("snap.firefox.firefox (enforce)\0".utf8)) == "snap.firefox.firefox (enforce)")
        #expect(PeerProcess.label(Array("unconfined\n".utf8)) == "unconfined")
        #expect(PeerProcess.label([0]) == nil)
        #expect(PeerProcess.label([0xFF, 0xFE]) == nil)
    }

    /// A `/.flatpak-info` as flatpak 1.14 writes it (flatpak-metadata(5); `flatpak run org.gnome.Maps`).
    static let mapsInfo = """
        [Application]
        name=org.gnome.Maps
        runtime=runtime/org.gnome.Platform/x86_64/45

        [Instance]
        instance-id=2583061378
        app-path=/var/lib/flatpak/app/org.gnome.Maps/x86_64/stable/6b1c1a4e0d/files
        app-commit=6b1c1a4e0d
        app-extensions=
        branch=stable
        arch=x86_64
        flatpak-version=1.14.4
        runtime-path=/var/lib/flatpak/runtime/org.gnome.Platform/x86_64/45/d1f4a8/files
        runtime-commit=d1f4a8
        runtime-extensions=org.freedesktop.Platform.GL.default=7c2e1;
        session-bus-proxy=true
        system-bus-proxy=true
        devel=false

        [Context]
        shared=network;ipc;
        sockets=x11;wayland;pulseaudio;
        devices=dri;

        [Session Bus Policy]
        org.freedesktop.portal.Location=talk

        """

    @Test("a .flatpak-info names its app", arguments: [
        (mapsInfo, "org.gnome.Maps"),
        ("[Application]\nname=org.gnome.Maps\nruntime=runtime/org.gnome.Platform/x86_64/45\n\n[Instance]\ninstance-id=1\n", "org.gnome.Maps"),
        ("# written by flatpak\n[Application]\nname = org.gnome.Maps\n[Instance]\ninstance-id = 7\n", "org.gnome.Maps"),
        ("[Application]\r\nname=org.gnome.Maps\r\n[Instance]\r\ninstance-id=7\r\n", "org.gnome.Maps"),
        ("[Instance]\ninstance-id=7\n[Application]\nname=com.example.App-beta\n", "com.example.App-beta"),
        ("[Application]\nname=org.gnome.Maps\nname=org.gnome.Maps\n[Instance]\ninstance-id=7\n", "org.gnome.Maps"),
    ])
    func flatpakInfos(text: String, app: String) {
        #expect(ClientIdentity.flatpakApp(fromFlatpakInfo: Array(text.utf8)) == app)
    }

    @Test("a .flatpak-info that names no app, or names one ambiguously, gives none", arguments: [
        "",
        // A runtime run by itself (`flatpak run org.gnome.Sdk`), and a runtime group beside an app.
        "[Runtime]\nname=org.gnome.Sdk\nruntime=runtime/org.gnome.Sdk/x86_64/45\n\n[Instance]\ninstance-id=7\n",
        "[Application]\nname=org.gnome.Maps\n[Runtime]\nname=org.gnome.Sdk\n[Instance]\ninstance-id=7\n",
        "[Application]\nname=org.gnome.Maps\n",                                  // no instance
        "[Application]\nname=org.gnome.Maps\n[Instance]\ninstance-id=\n",
        "[Application]\nname=org.gnome\n[Instance]\ninstance-id=7\n",               // two elements
        "[Application]\nname=org.gnome-x.Maps\n[Instance]\ninstance-id=7\n",        // - before the last element
        "[Application]\nname=org.1gnome.Maps\n[Instance]\ninstance-id=7\n",
        "[Application]\nname=org..Maps\n[Instance]\ninstance-id=7\n",
        "[Application]\nname=org.gnome.Maps\\s\n[Instance]\ninstance-id=7\n",
        "[Application]\nname=org.gnome.Maps\u{0}x\n[Instance]\ninstance-id=7\n",
        "[Instance]\nname=org.gnome.Maps\ninstance-id=7\n",                         // not in [Application]
        "name=org.gnome.Maps\n[Application]\nname=org.gnome.Maps\n[Instance]\ninstance-id=7\n", // a key before any group
        "[Application]\nname=org.gnome.Maps\nthis is not a key file\n[Instance]\ninstance-id=7\n",
        "[Application]\nname=org.gnome.Maps\nname=org.evil.App\n[Instance]\ninstance-id=7\n",
        "[Application\nname=org.gnome.Maps\n[Instance]\ninstance-id=7\n",
    ])
    func badFlatpakInfos(text: String) {
        #expect(ClientIdentity.flatpakApp(fromFlatpakInfo: Array(text.utf8)) == nil)
    }

    @Test("bytes that are not UTF-8 give none")
    func notUTF8() {
        let bytes = Array("[Application]\nname=org.gnome.Maps\n[Instance]\ninstance-id=7\n".utf8) + [0xC3, 0x28]
        #expect(ClientIdentity.flatpakApp(fromFlatpakInfo: bytes) == nil)
    }

    @Test("no_new_privs and a seccomp filter, as /proc/PID/status prints them")
    func filtered() {
        let sealed = "Name:\tgnome-maps\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n"
        #expect(ClientIdentity.isFiltered(status: Array(sealed.utf8)))
        #expect(!ClientIdentity.isFiltered(status: Array("NoNewPrivs:\t0\nSeccomp:\t2\n".utf8)))
        #expect(!ClientIdentity.isFiltered(status: Array("NoNewPrivs:\t1\nSeccomp:\t1\n".utf8)))
        #expect(!ClientIdentity.isFiltered(status: Array("Name:\tx\n".utf8)))
    }

    @Test("a rule's app-id matches that app exactly, and counts as a key")
    func ruleMatching() {
        let maps = ClientIdentity(pid: 1, uid: 1000, gid: 1000, user: "alice", appID: "flatpak:org.gnome.Maps")
        let host = ClientIdentity(pid: 2, uid: 1000, gid: 1000, user: "alice")
        let rule = ClientRule(name: "maps", access: .always, accuracy: .full, appID: "flatpak:org.gnome.Maps")
        #expect(rule.specificity(for: maps) == 1)
        #expect(rule.specificity(for: host) == nil)
        #expect(rule.specificity(for: ClientIdentity(pid: 3, uid: 1000, gid: 1000, appID: "flatpak:org.gnome.Maps.Devel")) == nil)
        #expect(rule.specificity(for: ClientIdentity(pid: 3, uid: 1000, gid: 1000, appID: "snap:org.gnome.Maps")) == nil)
        let alice = ClientRule(name: "alice", user: "alice", access: .deny, accuracy: .reduced)
        let aliceMaps = ClientRule(name: "alice-maps", user: "alice", access: .once, accuracy: .reduced, appID: "flatpak:org.gnome.Maps")
        let rules = PolicyRules(clients: [alice, aliceMaps, rule])
        #expect(rules.rule(for: maps)?.name == "alice-maps")
        #expect(rules.rule(for: host)?.name == "alice")
    }

    @Test("app-id in the config: flatpak:ID and snap:NAME, printed back")
    func config() throws {
        let c = try ConfigurationTests.load("""
            [client maps]
            app-id = flatpak:org.gnome.Maps
            access = always
            [client firefox]
            app-id = snap:firefox
            user = nobody
            access = once
            """)
        #expect(c.clients.map(\.appID) == ["flatpak:org.gnome.Maps", "snap:firefox"])
        #expect(c.clients.map(\.user) == [nil, "nobody"])
        #expect(c.effectiveDescription.contains("app-id = flatpak:org.gnome.Maps"))
    }

    @Test("a bad app-id is a config error at its line", arguments: [
        "org.gnome.Maps", "flatpak:org.gnome", "flatpak:", "snap:", "snap:Firefox", "snap:fire fox", "Flatpak:org.gnome.Maps",
        "flatpak:org.gnome.Maps;rm", "snap:firefox.firefox",
    ])
    func badConfig(value: String) {
        do {
            _ = try ConfigurationTests.load("[client x]\naccess = always\napp-id = \(value)\n")
            Issue.record("accepted app-id = \(value)")
        } catch {
            #expect(error.line == 3)
            #expect(error.key == "app-id")
            #expect(error.file.hasSuffix("locationd.conf"))
        }
    }
}
