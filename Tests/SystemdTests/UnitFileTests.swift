#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Testing

extension SystemdIntegration {
    /// The shipped units and their companions (systemd/), checked with systemd's own tools.
    @Suite("systemd unit files")
    struct UnitFileTests {
        static let service = Repository.root + "/systemd/locationd.service"
        static let socket = Repository.root + "/systemd/locationd.socket"
        static let gpsdSocket = Repository.root + "/systemd/locationd-gpsd.socket"

        /// `KEY=value` lines of a unit, in order (comments and section headers skipped).
        static func settings(_ path: String) -> [(key: String, value: String)] {
            let text = FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) } ?? ""
            return text.split(separator: "\n").compactMap { line in
                guard !line.hasPrefix("#"), !line.hasPrefix("["), let eq = line.firstIndex(of: "=") else { return nil }
                return (String(line[..<eq]), String(line[line.index(after: eq)...]))
            }
        }

        @Test("systemd-analyze verify passes on locationd.service, locationd.socket and locationd-gpsd.socket")
        func verify() async throws {
            let analyze = try requireTool("systemd-analyze", package: "systemd")
            // verify checks that ExecStart= exists and that Documentation= man pages are found: point the
            // copies at the built binary and the repository's man pages, the rest unchanged.
            let scratch = try TemporaryDirectory()
            let unit = FileManager.default.contents(atPath: Self.service).map { String(decoding: $0, as: UTF8.self) } ?? ""
            #expect(unit.contains("\nExecStart=/usr/bin/locationd --config /etc/locationd/locationd.conf\n"))
            scratch.write("units/locationd.service", unit.replacing("/usr/bin/locationd", with: Repository.locationd))
            scratch.write("units/locationd.socket", FileManager.default.contents(atPath: Self.socket).map { String(decoding: $0, as: UTF8.self) } ?? "")
            scratch.write("units/locationd-gpsd.socket", FileManager.default.contents(atPath: Self.gpsdSocket).map { String(decoding: $0, as: UTF8.self) } ?? "")
            for (page, section) in [("locationd.8", "8"), ("locationd.conf.5", "5"), ("locationctl.1", "1")] {
                let text = FileManager.default.contents(atPath: Repository.root + "/man/" + page).map { String(decoding: $0, as: UTF8.self) } ?? ""
                scratch.write("man/man\(section)/\(page)", text)
            }
            let result = try await runCommand([analyze, "verify", scratch.path + "/units/locationd.service", scratch.path + "/units/locationd.socket",
                                               scratch.path + "/units/locationd-gpsd.socket"],
                                              environment: ["MANPATH": scratch.path + "/man", "SYSTEMD_LOG_COLOR": "0"])
            #expect(result.succeeded, "systemd-analyze verify: \(result.errors)\(result.output)")
            #expect(result.errors.isEmpty, "systemd-analyze verify complained: \(result.errors)")
        }

        @Test("systemd-analyze security rates locationd.service at most 2.5 (OK)")
        func security() async throws {
            let analyze = try requireTool("systemd-analyze", package: "systemd")
            let result = try await runCommand([analyze, "security", "--offline=true", "--no-pager", Self.service],
                                              environment: ["SYSTEMD_LOG_COLOR": "0", "SYSTEMD_COLORS": "0"])
            let line = result.output.split(separator: "\n").first { $0.contains("Overall exposure level for locationd.service") }
            let summary = try #require(line, "no exposure level in: \(result.output)\(result.errors)")
            // "→ Overall exposure level for locationd.service: 1.7 OK 🙂"
            let words = summary.split(separator: ":").last!.split(separator: " ")
            let score = try #require(Double(words.first ?? ""), "cannot read the score in '\(summary)'")
            print("systemd-analyze security --offline=true systemd/locationd.service: exposure \(score) \(words.dropFirst().first ?? "")")
            #expect(score <= 2.5, "\(result.output)")
            let failing = result.output.split(separator: "\n").filter { $0.hasPrefix("✗") }.map { String($0.prefix(110)) }
            print("remaining exposure items:\n" + failing.joined(separator: "\n"))
        }

        @Test("the service is Type=notify with watchdog, reload, a dedicated user and the expected hardening")
        func serviceSettings() {
            let settings = Self.settings(Self.service)
            func values(_ key: String) -> [String] { settings.filter { $0.key == key }.map(\.value) }
            let expected: [String: String] = [
                "Type": "notify", "Restart": "on-failure", "User": "locationd", "SupplementaryGroups": "dialout",
                "StateDirectory": "locationd", "RuntimeDirectory": "locationd", "ConfigurationDirectory": "locationd",
                "WatchdogSec": "30", "ExecReload": "/bin/kill -HUP $MAINPID", "NoNewPrivileges": "yes",
                "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes", "DevicePolicy": "closed",
                "SystemCallArchitectures": "native", "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes",
                "ProtectKernelLogs": "yes", "ProtectControlGroups": "yes", "ProtectClock": "yes", "ProtectHostname": "yes",
                "RestrictNamespaces": "yes", "RestrictRealtime": "yes", "RestrictSUIDSGID": "yes", "LockPersonality": "yes",
                "MemoryDenyWriteExecute": "yes", "UMask": "0077", "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6 AF_NETLINK",
                "IPAddressDeny": "any", "IPAddressAllow": "localhost", "RuntimeDirectoryPreserve": "yes",
            ]
            for (key, value) in expected.sorted(by: { $0.key < $1.key }) {
                #expect(values(key).contains(value), "\(key)=\(value) expected, found \(values(key))")
            }
            #expect(values("SystemCallFilter").contains("@system-service"))
            #expect(Set(values("DeviceAllow")).isSuperset(of: ["char-ttyUSB rw", "char-ttyACM rw", "char-ttyS rw"]))
            // The one capability kept, for reading clients' /proc/PID/exe (locationd(8), CLIENT IDENTITY).
            #expect(values("CapabilityBoundingSet") == ["CAP_SYS_PTRACE"])
            #expect(values("AmbientCapabilities") == ["CAP_SYS_PTRACE"])
            #expect(values("PrivateNetwork").isEmpty, "gpsd receivers need TCP to localhost")
        }

        @Test("the socket unit listens on the configured path, mode 0666")
        func socketSettings() async throws {
            let settings = Self.settings(Self.socket)
            #expect(settings.contains { $0 == ("ListenStream", "/run/locationd/locationd.sock") })
            #expect(settings.contains { $0 == ("SocketMode", "0666") })
            let config = FileManager.default.contents(atPath: Repository.root + "/Config/locationd.conf").map { String(decoding: $0, as: UTF8.self) } ?? ""
            #expect(config.contains("\nsocket = /run/locationd/locationd.sock\n"), "the shipped config and the socket unit disagree")
        }

        @Test("the gpsd socket unit listens on gpsd's port on loopback, names its sockets gpsd for locationd.service, and conflicts with gpsd.socket")
        func gpsdSocketSettings() async throws {
            let settings = Self.settings(Self.gpsdSocket)
            let listen = settings.filter { $0.key == "ListenStream" }.map(\.value)
            #expect(listen == ["127.0.0.1:2947", "[::1]:2947"])
            #expect(settings.contains { $0 == ("FileDescriptorName", "gpsd") })
            #expect(settings.contains { $0 == ("Service", "locationd.service") })
            #expect(settings.contains { $0 == ("Conflicts", "gpsd.socket") })
            #expect(settings.contains { $0 == ("BindIPv6Only", "ipv6-only") })
        }

        @Test("sysusers.d and tmpfiles.d make the user, the admin group and the directories in a scratch root")
        func sysusersAndTmpfiles() async throws {
            let sysusers = try requireTool("systemd-sysusers", package: "systemd")
            let tmpfiles = try requireTool("systemd-tmpfiles", package: "systemd")
            let root = try TemporaryDirectory("locationd-root")
            mkdir(root.path + "/etc", 0o755)  // systemd-sysusers locks ROOT/etc/passwd
            let users = try await runCommand([sysusers, "--root=" + root.path, Repository.root + "/systemd/sysusers.d/locationd.conf"])
            #expect(users.succeeded, "systemd-sysusers: \(users.errors)")
            let passwd = root.read("etc/passwd"), group = root.read("etc/group")
            let entry = try #require(passwd.split(separator: "\n").first { $0.hasPrefix("locationd:") }, "no locationd user: \(passwd)")
            #expect(group.split(separator: "\n").contains { $0.hasPrefix("locationd-admin:") }, "no locationd-admin group: \(group)")
            let uid = UInt32(entry.split(separator: ":")[2])!
            #expect(uid != 0 && uid < 1000, "a system user")
            let dirs = try await runCommand([tmpfiles, "--root=" + root.path, "--create", Repository.root + "/systemd/tmpfiles.d/locationd.conf"])
            #expect(dirs.succeeded, "systemd-tmpfiles: \(dirs.errors)")
            for (path, mode, owner) in [("var/lib/locationd", 0o700, uid), ("run/locationd", 0o755, uid), ("etc/locationd/conf.d", 0o755, 0)] {
                var st = stat()
                #expect(stat(root.path + "/" + path, &st) == 0, "\(path) missing")
                #expect(st.st_mode & 0o7777 == mode, "\(path) mode \(String(st.st_mode & 0o7777, radix: 8))")
                #expect(st.st_uid == owner, "\(path) owner \(st.st_uid)")
            }
        }

        @Test("the udev rule only adds properties and tags, for tty devices, with balanced labels")
        func udevRule() async throws {
            let text = FileManager.default.contents(atPath: Repository.root + "/systemd/udev/60-locationd.rules").map { String(decoding: $0, as: UTF8.self) } ?? ""
            let rules = text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.allSatisfy { $0 == " " || $0 == "\t" } }
            #expect(rules.first == "SUBSYSTEM!=\"tty\", GOTO=\"locationd_end\"")
            var labels = Set<String>(), gotos = Set<String>()
            for rule in rules {
                for clause in rule.split(separator: ",").map({ $0.drop(while: { $0 == " " }) }) {
                    if clause.hasPrefix("LABEL=") { labels.insert(String(clause.dropFirst(6))) }
                    if clause.hasPrefix("GOTO=") { gotos.insert(String(clause.dropFirst(5))) }
                    // Never a change of owner, group or mode, never a program run.
                    for forbidden in ["OWNER", "GROUP", "MODE", "RUN", "PROGRAM"] { #expect(!clause.hasPrefix(forbidden), "\(rule)") }
                }
            }
            #expect(gotos == labels, "GOTO targets \(gotos) vs labels \(labels)")
            // u-blox receivers by product, never vendor 1546 as a whole (u-blox also makes cellular modems).
            #expect(text.contains("ATTRS{idVendor}==\"1546\", ATTRS{idProduct}==\"01a8\""))
            #expect(!rules.contains { $0.contains("\"1546\"") && !$0.contains("idProduct") })
            #expect(text.contains("ATTRS{idVendor}==\"067b\", ATTRS{idProduct}==\"2303\""))
            #expect(text.contains("ENV{ID_MM_DEVICE_IGNORE}=\"1\""))
        }
    }
}
