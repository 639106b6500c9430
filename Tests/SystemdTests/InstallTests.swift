#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Testing

extension SystemdIntegration {
    /// `make install` into a temporary DESTDIR, and the man pages it installs.
    @Suite("make install and man pages")
    struct InstallTests {
        /// Runs `make -o build install` (the binaries of this build, no release build) into a new DESTDIR.
        static func install(prefix: String, into destdir: String) async throws -> CommandResult {
            let make = try requireTool("make", package: "make")
            return try await runCommand([make, "-C", Repository.root, "-o", "build", "install", "PREFIX=\(prefix)", "DESTDIR=\(destdir)",
                                        "BUILD_BIN=\(Repository.binaryDirectory)"])
        }

        static func mode(_ path: String) -> mode_t? {
            var st = stat()
            guard stat(path, &st) == 0 else { return nil }
            return st.st_mode & 0o7777
        }

        @Test("PREFIX=/usr: binaries, units, sysusers/tmpfiles, udev rule, config, demo capture and man pages land where distributions put them")
        func installTree() async throws {
            let dest = try TemporaryDirectory("locationd-destdir")
            let result = try await Self.install(prefix: "/usr", into: dest.path)
            try #require(result.succeeded, "make install: \(result.errors)\(result.output)")
            let expected: [(String, mode_t)] = [
                ("usr/bin/locationd", 0o755), ("usr/bin/locationctl", 0o755),
                ("usr/lib/systemd/system/locationd.service", 0o644), ("usr/lib/systemd/system/locationd.socket", 0o644),
                ("usr/lib/systemd/system/locationd-gpsd.socket", 0o644),
                ("usr/lib/sysusers.d/locationd.conf", 0o644), ("usr/lib/tmpfiles.d/locationd.conf", 0o644),
                ("usr/lib/udev/rules.d/60-locationd.rules", 0o644),
                ("etc/locationd/locationd.conf", 0o644), ("etc/locationd/conf.d", 0o755),
                ("usr/share/locationd/demo.nmea", 0o644), ("usr/share/locationd/COPYING-gpsd", 0o644),
                ("usr/share/man/man8/locationd.8", 0o644), ("usr/share/man/man1/locationctl.1", 0o644),
                ("usr/share/man/man5/locationd.conf.5", 0o644),
                ("usr/share/bash-completion/completions/locationctl", 0o644),
            ]
            for (path, mode) in expected {
                let actual = Self.mode(dest.path + "/" + path)
                #expect(actual == mode, "\(path): \(actual.map { String($0, radix: 8) } ?? "missing"), expected \(String(mode, radix: 8))")
            }
            // Nothing else.
            let listing = try await runCommand(["/usr/bin/find", dest.path, "-type", "f"])
            let files = Set(listing.output.split(separator: "\n").map { String($0.dropFirst(dest.path.count + 1)) })
            #expect(files == Set(expected.map(\.0).filter { $0 != "etc/locationd/conf.d" }), "\(files.sorted())")
            #expect(dest.read("usr/lib/systemd/system/locationd.service").contains("\nExecStart=/usr/bin/locationd --config /etc/locationd/locationd.conf\n"))
            #expect(dest.read("etc/locationd/locationd.conf") == (FileManager.default.contents(atPath: Repository.root + "/Config/locationd.conf")
                .map { String(decoding: $0, as: UTF8.self) } ?? "-"))
            // The installed daemon runs and accepts the installed configuration.
            let check = try await runCommand([dest.path + "/usr/bin/locationd", "--check-config", "--config", dest.path + "/etc/locationd/locationd.conf"])
            #expect(check.succeeded, "\(check.errors)")

            // Installing again keeps an edited configuration.
            dest.write("etc/locationd/locationd.conf", "[daemon]\nlog-level = debug\n")
            let again = try await Self.install(prefix: "/usr", into: dest.path)
            #expect(again.succeeded)
            #expect(dest.read("etc/locationd/locationd.conf") == "[daemon]\nlog-level = debug\n")
        }

        @Test("the default PREFIX is /usr/local, and the unit's ExecStart= follows it; install builds a release first")
        func defaultPrefix() async throws {
            let dest = try TemporaryDirectory("locationd-destdir")
            let make = try requireTool("make", package: "make")
            let result = try await runCommand([make, "-C", Repository.root, "-o", "build", "install", "DESTDIR=\(dest.path)",
                                              "BUILD_BIN=\(Repository.binaryDirectory)"])
            try #require(result.succeeded, "make install: \(result.errors)")
            #expect(dest.read("usr/local/lib/systemd/system/locationd.service").contains("\nExecStart=/usr/local/bin/locationd --config /etc/locationd/locationd.conf\n"))
            #expect(Self.mode(dest.path + "/usr/local/bin/locationd") == 0o755)
            #expect(Self.mode(dest.path + "/usr/local/share/man/man8/locationd.8") == 0o644)
            let dry = try await runCommand([make, "-C", Repository.root, "-n", "install", "DESTDIR=\(dest.path)", "BUILD_BIN=/nonexistent"])
            #expect(dry.output.contains("swift build -c release"), "\(dry.output)")
            // uninstall removes what install put there, keeping the configuration.
            let removed = try await runCommand([make, "-C", Repository.root, "uninstall", "DESTDIR=\(dest.path)"])
            #expect(removed.succeeded, "\(removed.errors)")
            #expect(Self.mode(dest.path + "/usr/local/bin/locationd") == nil)
            #expect(Self.mode(dest.path + "/etc/locationd/locationd.conf") != nil)
        }

        @Test("man -l renders each page without warnings at 80 columns", arguments: ["locationd.8", "locationctl.1", "locationd.conf.5"])
        func manPageRenders(page: String) async throws {
            let man = try requireTool("man", package: "man-db")
            let groff = try requireTool("groff", package: "groff-base")
            let path = Repository.root + "/man/" + page
            let rendered = try await runCommand([man, "--warnings", "-l", path], environment: ["MANWIDTH": "80", "MAN_KEEP_FORMATTING": ""])
            #expect(rendered.succeeded)
            #expect(rendered.errors.isEmpty, "man -l \(page): \(rendered.errors)")
            let name = String(page[..<page.lastIndex(of: ".")!])
            #expect(rendered.output.contains("NAME"))
            #expect(rendered.output.contains(name))
            let lines = rendered.output.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count > 40, "\(page) renders to \(lines.count) lines")
            let strict = try await runCommand([groff, "-man", "-Tutf8", "-ww", "-z", path])
            #expect(strict.succeeded && strict.errors.isEmpty, "groff -ww \(page): \(strict.errors)")
        }

        @Test("locationd.conf(5) documents every key of the shipped Config/locationd.conf, with its default")
        func configKeysDocumented() async throws {
            let man = try requireTool("man", package: "man-db")
            let rendered = try await runCommand([man, "-l", Repository.root + "/man/locationd.conf.5"], environment: ["MANWIDTH": "200"]).output
            let config = FileManager.default.contents(atPath: Repository.root + "/Config/locationd.conf").map { String(decoding: $0, as: UTF8.self) } ?? ""
            var section = ""
            var keys: [(section: String, key: String)] = []
            for raw in config.split(separator: "\n") {
                var line = Substring(raw)
                if line.hasPrefix(";") { line = line.dropFirst().drop(while: { $0 == " " }) }
                if line.hasPrefix("[") , let end = line.firstIndex(of: "]") {
                    section = String(line[line.index(after: line.startIndex)..<end]).split(separator: " ").first.map(String.init) ?? ""
                    continue
                }
                guard let eq = line.firstIndex(of: "="), !section.isEmpty else { continue }
                let key = line[..<eq].trimmingSuffix(while: { $0 == " " })
                guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." }) else { continue }
                keys.append((section, key.hasPrefix("purpose.") ? "purpose.KEY" : String(key)))
            }
            #expect(keys.count >= 27, "parsed \(keys.count) keys from Config/locationd.conf")
            for (section, key) in keys {
                #expect(rendered.contains("       \(key) = "), "[\(section)] \(key) is not documented in locationd.conf(5)")
            }
            // Each documented key says its default or that it is required (client rules' matching keys aside).
            let entries = rendered.split(separator: "\n", omittingEmptySubsequences: false)
            for (section, key) in keys where section != "client" {
                guard let start = entries.firstIndex(where: { $0.hasPrefix("       \(key) = ") }) else { continue }
                let body = entries[(start + 1)...].prefix { !$0.hasPrefix("       ") || $0.hasPrefix("              ") }.joined(separator: " ")
                #expect(body.contains("Default") || body.contains("Required"), "[\(section)] \(key): no default given")
            }
        }

        /// A man page's source with `\-` as `-` and font escapes removed, for "is this documented" checks
        /// that line filling and hyphenation cannot break.
        static func manSource(_ page: String) -> String {
            let text = FileManager.default.contents(atPath: Repository.root + "/man/" + page).map { String(decoding: $0, as: UTF8.self) } ?? ""
            return text.replacing("\\-", with: "-").replacing("\\fR", with: "").replacing("\\fP", with: "")
                .replacing("\\fB", with: "").replacing("\\fI", with: "")
        }

        /// The `--options` a help text mentions.
        static func options(in help: String) -> Set<String> {
            Set(help.split(whereSeparator: { " \n,[]()|'=".contains($0) }).filter { $0.hasPrefix("--") && $0.count > 2 }.map(String.init))
        }

        @Test("locationd(8) documents every option of --help, the signals and the systemd integration")
        func daemonPageComplete() async throws {
            let source = Self.manSource("locationd.8")
            let help = try await runCommand([Repository.locationd, "--help"]).output
            let options = Self.options(in: help)
            #expect(options.count >= 3)
            for option in options.sorted() { #expect(source.contains(option), "\(option) missing from locationd(8)") }
            for word in ["SIGHUP", "SIGTERM", "READY=1", "WATCHDOG=1", "STOPPING=1", "RELOADING=1", "LISTEN_FDS", "NOTIFY_SOCKET",
                         "EXIT STATUS", "78", "64", "locationd.socket"] {
                #expect(source.contains(word), "\(word) missing from locationd(8)")
            }
        }

        @Test("bash completion: commands, each command's options (from its --help) and the words of --authorization, --accuracy, share",
              arguments: [(["loc", "wa"], "watch"), (["loc", "watch", "--auth"], "--authorization"),
                          (["loc", "--socket", "/tmp/x", "get", "--accuracy", "r"], "reduced"),
                          (["loc", "watch", "--authorization", "w"], "when-in-use"), (["loc", "share", "of"], "off"),
                          (["loc", "agent", "--answer", "st"], "standing"), (["loc", "grant", "--when"], "--when-in-use")])
        func bashCompletion(words: [String], expected: String) async throws {
            let locationctl = Repository.binaryDirectory + "/locationctl"
            let typed = ([locationctl] + words.dropFirst()).map { "'\($0)'" }.joined(separator: " ")
            let script = "source '\(Repository.root)/Config/locationctl.bash-completion'; COMP_WORDS=(\(typed)); "
                + "COMP_CWORD=\(words.count - 1); _locationctl; printf '%s\\n' \"${COMPREPLY[@]}\""
            let result = try await runCommand(["/bin/bash", "-c", script])
            #expect(result.output == expected + "\n", "\(words): \(result.output)\(result.errors)")
        }

        @Test("locationctl(1) documents every command of locationctl and every option of each command's --help")
        func clientPageComplete() async throws {
            let locationctl = Repository.binaryDirectory + "/locationctl"
            let source = Self.manSource("locationctl.1")
            let help = try await runCommand([locationctl, "--help"]).output
            // Command lines: two spaces, a lower-case word, then spaces and a description.
            let commands = help.split(separator: "\n").compactMap { line -> String? in
                guard line.hasPrefix("  "), !line.hasPrefix("   "), let word = line.dropFirst(2).split(separator: " ").first,
                      word.allSatisfy({ $0.isLowercase }) else { return nil }
                return String(word)
            }
            #expect(commands.count >= 4, "\(commands)")
            for option in Self.options(in: help).sorted() { #expect(source.contains(option), "\(option) missing from locationctl(1)") }
            for command in commands {
                #expect(source.contains(".SS \(command)\n"), "command \(command) has no section in locationctl(1)")
                let commandHelp = try await runCommand([locationctl, command, "--help"]).output
                for option in Self.options(in: commandHelp).sorted() {
                    #expect(source.contains(option), "locationctl \(command) \(option) missing from locationctl(1)")
                }
            }
        }
    }
}

extension Substring {
    func trimmingSuffix(while predicate: (Character) -> Bool) -> Substring {
        var s = self
        while let last = s.last, predicate(last) { s = s.dropLast() }
        return s
    }
}
