import LocationServer
import Testing

/// Issue 33: what a file may say twice, and what a drop-in may say again. Within one file a section and a key
/// of a section appear once (the second would silently merge into or replace the first); a drop-in (conf.d)
/// may set a key of the main file again and add keys to its sections, as systemd's drop-ins do.
@Suite("Configuration: sections and keys given twice, users and groups")
struct ConfigurationRepeatsTests {
    @Test("the same section twice in one file is an error at the second header", arguments: [
        ("[receiver a]\ntype = replay\nfile = /x.log\n\n[receiver a]\ntype = replay\nfile = /y.log\n", 5, "[receiver a] again (first at line 1)"),
        // Different keys: no key is repeated, the sections would merge without a word.
        ("[policy]\naccess = deny\n[daemon]\nlog-level = info\n[policy]\naccuracy = full\n", 5, "[policy] again (first at line 1)"),
        // A header with no keys counts too.
        ("[client a]\n[client a]\nuser = nobody\naccess = always\n", 2, "[client a] again"),
    ])
    func sectionTwice(text: String, line: Int, mentions: String) {
        do {
            _ = try ConfigurationTests.load(text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.file.hasSuffix("/locationd.conf") && error.line == line && error.key == nil, "\(error)")
            #expect(error.description.hasPrefix(error.file + ":\(line): ") && error.description.contains(mentions), "\(error)")
        }
    }

    @Test("a drop-in sets a key of the main file again and adds keys to its sections")
    func dropInOverrides() throws {
        let c = try ConfigurationTests.load("[policy]\naccess = deny\n\n[receiver a]\ntype = replay\nfile = /x.log\n",
                                            dropIns: ["10-local.conf": "[policy]\naccess = always\n\n[receiver a]\nloop = yes\nfile = /y.log\n"])
        #expect(c.policy.access == .always)
        #expect(c.receivers.count == 1)
        #expect(c.receivers.first?.source == .replay(file: "/y.log", rate: 1, loop: true), "\(String(describing: c.receivers.first?.source))")
    }

    @Test("a drop-in is held to the same rule within itself, and named in the error")
    func dropInRepeats() {
        do {
            _ = try ConfigurationTests.load("[policy]\naccess = deny\n", dropIns: ["10-local.conf": "[policy]\naccess = ask\naccess = always\n"])
            Issue.record("accepted")
        } catch {
            #expect(error.file.hasSuffix("/conf.d/10-local.conf") && error.line == 3 && error.key == "access", "\(error)")
        }
    }

    @Test("users and groups: a name of this system, or a number with or without an entry")
    func usersAndGroups() throws {
        let c = try ConfigurationTests.load("""
            [daemon]
            admin-group = 0
            share-group = 4000000001
            [client by-name]
            user = nobody
            group = root
            access = always
            [client by-number]
            user = 4000000000
            group = 4000000001
            access = deny
            """)
        // A gid with a name is kept by its name: a client's groups are matched by name.
        #expect(c.adminGroup == "root" && c.shareGroup == "4000000001")
        #expect(c.clients.map(\.user) == ["nobody", "4000000000"])
        #expect(c.clients.map(\.group) == ["root", "4000000001"])
    }

    @Test("a value continued on an indented line is not a key given twice")
    func continuation() throws {
        let c = try ConfigurationTests.load("[client a]\nuser = nobody\naccess = always\npurpose.Maps = Show where\n  you are.\n")
        #expect(c.clients.first?.purposes["Maps"] != nil)
    }
}
