import LocationPolicy
@testable import LocationServer
import Testing

/// How a client's systemd unit is read from its cgroup path (cgroup v2, `/proc/PID/cgroup`).
@Suite("Client identity: systemd unit")
struct ClientIdentityTests {
    @Test("the innermost service or scope names the unit", arguments: [
        ("/system.slice/navit.service", "navit.service"),
        ("/system.slice/locationd.service", "locationd.service"),
        ("/user.slice/user-1000.slice/session-2.scope", "session-2.scope"),
        ("/system.slice/docker-0123abcd.scope", "docker-0123abcd.scope"),
    ])
    func systemUnits(path: String, unit: String) {
        #expect(ClientIdentity.unit(ofCgroup: Substring(path)) == unit)
    }

    @Test("a unit of a user's own service manager is named with its manager, never as a system unit", arguments: [
        // What `systemd-run --user --unit=navit.service` gives on a systemd host (the subtree below
        // user@UID.service is delegated to the user, who can name units anything).
        ("/user.slice/user-1002.slice/user@1002.service/app.slice/navit.service", "user@1002.service/navit.service"),
        ("/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-org.gnome.Maps-4242.scope",
         "user@1000.service/app-gnome-org.gnome.Maps-4242.scope"),
        // The manager's own processes too.
        ("/user.slice/user-1000.slice/user@1000.service/init.scope", "user@1000.service/init.scope"),
        ("/user.slice/user-1000.slice/user@1000.service", "user@1000.service"),
    ])
    func userManagerUnits(path: String, unit: String) {
        #expect(ClientIdentity.unit(ofCgroup: Substring(path)) == unit)
    }

    @Test("no unit outside systemd's tree")
    func noUnit() {
        #expect(ClientIdentity.unit(ofCgroup: "/") == nil)
        #expect(ClientIdentity.unit(ofCgroup: "/lxc/container1") == nil)
    }
}
