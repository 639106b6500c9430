import LocationWire
import Testing

/// What the real locationctl prints for its version and for usage errors (issue 33, "the first hour").
@Suite("locationctl: --version and short usage errors")
struct CommandLineTextTests {
    @Test("--version prints the release and exits 0")
    func version() async {
        let result = await runLocationctl(["--version"])
        #expect(result.status == 0 && result.stdout == "locationctl \(Release.version)\n" && result.stderr.isEmpty, "\(result)")
    }

    @Test("a usage error prints the message, the command's synopsis and a hint, not the whole help; exit 64", arguments: [
        (["watch", "--authorization", "sometimes"], "watch", "--authorization must be"),
        (["get", "--bogus"], "get", "unexpected argument '--bogus'"),
        (["decode", "--bogus"], "decode", "unexpected argument '--bogus'"),
        (["share", "on", "off"], "share", ""),
        (["audit", "--since", "yesterday-ish"], "audit", "--since"),
    ])
    func shortUsage(arguments: [String], command: String, mentions: String) async {
        let result = await runLocationctl(arguments)
        #expect(result.status == 64, "\(result)")
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first?.hasPrefix("locationctl \(command): ") == true && lines.first?.contains(mentions) == true, "\(result.stderr)")
        #expect(lines.count > 1 && lines[1].hasPrefix("usage: locationctl \(command)"), "\(result.stderr)")
        #expect(result.stderr.hasSuffix("Try 'locationctl \(command) --help' for more.\n"), "\(result.stderr)")
        // The synopsis only: no paragraph of the help (the full help is 20 lines and more).
        #expect(lines.count <= 7 && !result.stderr.contains("\n\n"), "\(result.stderr)")
    }

    @Test("an unknown command or none: a short usage and where the commands are listed")
    func unknownCommand() async {
        for arguments in [["frobnicate"], []] {
            let result = await runLocationctl(arguments)
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr.hasSuffix("usage: locationctl [--socket PATH] <command> [options]\nTry 'locationctl --help' for the commands.\n"),
                    "\(result.stderr)")
            #expect(!result.stderr.contains("administration"), "\(result.stderr)")
        }
    }
}
