import LocationPolicy

/// Sandboxed apps' ids, as their sandboxes' own records give them: a snap's AppArmor label and a Flatpak
/// app's `/.flatpak-info`. Pure parsing and validation here; reading them for a peer is in
/// `SandboxIdentity+Reading.swift`. An app id reads `snap:NAME` or `flatpak:ID` (`ClientIdentity.appID`,
/// a rule's `app-id`).
extension ClientIdentity {
    /// The snap instance an AppArmor label confines, from the label SO_PEERSEC or /proc/PID/attr gives:
    /// `snap.NAME.APP (enforce)` (an app) or `snap.NAME.hook.HOOK (enforce)` (one of its hooks) → `NAME`
    /// (with its instance key for a parallel install: `snap.firefox_beta.firefox` → `firefox_beta`).
    ///
    /// Only a label in `enforce` mode counts: in `complain` (or `kill`'s sibling `unconfined`, or a stack
    /// of modes, `mixed`) the kernel does not confine the process, it only logs (apparmor(7) "Profile
    /// modes"). A stacked label (`A//&B`), a child profile or hat (`A//B`) and a label of another policy
    /// namespace (`:ns:A`) are refused too: snapd loads plain `snap.*` profiles (snapd's security tags,
    /// `snap.<instance>.<app>` and `snap.<instance>.hook.<hook>`), and anything else is not its.
    /// - Returns: The snap's instance name, or nil when `label` is not an enforcing snap label.
    public static func snapApp(fromAppArmorLabel label: String) -> String? {
        let suffix = " (enforce)"
        guard label.hasSuffix(suffix) else { return nil }
        let profile = label.dropLast(suffix.count)
        guard !profile.contains("//"), !profile.hasPrefix(":"), !profile.contains(" ") else { return nil }
        let parts = profile.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.first == "snap" else { return nil }
        let instance = parts.count > 1 ? parts[1] : ""
        guard isValidSnapInstance(instance) else { return nil }
        switch parts.count {
        case 3 where isValidSnapAppName(parts[2]): return String(instance)
        case 4 where parts[2] == "hook" && isValidSnapHookName(parts[3]): return String(instance)
        default: return nil
        }
    }

    /// The app id a `/.flatpak-info` names: its `[Application]` group's `name`, when it is a valid Flatpak
    /// app id (`isValidFlatpakID`), the file has an `[Instance]` group with an `instance-id` (flatpak
    /// writes one for every sandbox it starts; xdg-desktop-portal requires it) and no `[Runtime]` group (a
    /// runtime run by itself, `flatpak run org.gnome.Sdk`, where xdg-desktop-portal takes the runtime's
    /// name: not an app).
    ///
    /// The file is a GLib key file (flatpak-metadata(5): `[Application] name=org.gnome.Maps
    /// runtime=...`, `[Instance] instance-id=...`): `[Group]` lines, `key=value` lines (spaces around `=`
    /// ignored), `#` comments and blank lines. Anything else — a key before any group, a line that is
    /// neither, bytes that are not UTF-8, two differing `name`s — makes the file unreadable (nil): a
    /// reader that guessed could disagree with GLib's about which name counts.
    /// - Returns: `org.gnome.Maps`, or nil.
    public static func flatpakApp(fromFlatpakInfo bytes: [UInt8]) -> String? {
        guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
        var group: Substring?
        var groups: Set<Substring> = []
        var name: Substring?
        var instanceID: Substring?
        // "\r\n" is one Character in Swift: split on it as on "\n".
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            var line = rawLine.drop { $0 == " " || $0 == "\t" }
            while let last = line.last, last == "\r" || last == " " || last == "\t" { line = line.dropLast() }
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]"), line.count > 2 else { return nil }
                group = line.dropFirst().dropLast()
                groups.insert(group!)
                continue
            }
            guard let group, let equals = line.firstIndex(of: "=") else { return nil }
            var key = line[..<equals]
            while let last = key.last, last == " " || last == "\t" { key = key.dropLast() }
            let value = line[line.index(after: equals)...].drop { $0 == " " || $0 == "\t" }
            guard !key.isEmpty else { return nil }
            if group == "Application" && key == "name" {
                if let name, name != value { return nil }
                name = value
            }
            if group == "Instance" && key == "instance-id" { instanceID = value }
        }
        guard !groups.contains("Runtime"), let name, let instanceID, !instanceID.isEmpty else { return nil }
        let id = String(name)
        return isValidFlatpakID(id) ? id : nil
    }

    /// Whether `id` is a valid Flatpak app id (flatpak's `flatpak_is_valid_name`, which
    /// xdg-desktop-portal's xdp-app-info-flatpak.c keeps): at most 255 bytes; three or more elements
    /// separated by `.`, none empty; each of ASCII letters, digits and `_`, not starting with a digit;
    /// `-` allowed in the last element only.
    public static func isValidFlatpakID(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard !bytes.isEmpty, bytes.count <= 255 else { return false }
        let elements = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard elements.count >= 3 else { return false }
        for (index, element) in elements.enumerated() {
            let isLast = index == elements.count - 1
            guard let first = element.first, !isDigit(first) else { return false }
            for byte in element {
                guard isLetter(byte) || isDigit(byte) || byte == UInt8(ascii: "_") || (isLast && byte == UInt8(ascii: "-")) else {
                    return false
                }
            }
        }
        return true
    }

    /// Whether `name` is a valid snap instance name (snapd's naming rules): a snap name — 1 to 40 of
    /// lowercase letters, digits and `-`, with at least one letter, not starting or ending with `-`, no
    /// `--` — optionally followed by `_` and an instance key of 1 to 10 lowercase letters and digits.
    public static func isValidSnapInstance<S: StringProtocol>(_ name: S) -> Bool {
        let parts = name.split(separator: "_", maxSplits: 1, omittingEmptySubsequences: false)
        if parts.count == 2 {
            let key = parts[1].utf8
            guard (1...10).contains(key.count), key.allSatisfy({ isLowercase($0) || isDigit($0) }) else { return false }
        }
        let snap = Array(parts[0].utf8)
        guard (1...40).contains(snap.count), snap.contains(where: isLowercase),
              snap.allSatisfy({ isLowercase($0) || isDigit($0) || $0 == UInt8(ascii: "-") }),
              snap.first != UInt8(ascii: "-"), snap.last != UInt8(ascii: "-") else { return false }
        return !zip(snap, snap.dropFirst()).contains { $0 == UInt8(ascii: "-") && $1 == UInt8(ascii: "-") }
    }

    /// A snap app's name (snapd: letters, digits and single `-` between them).
    static func isValidSnapAppName(_ name: Substring) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, let last = bytes.last, first != UInt8(ascii: "-"), last != UInt8(ascii: "-") else { return false }
        guard bytes.allSatisfy({ isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "-") }) else { return false }
        return !zip(bytes, bytes.dropFirst()).contains { $0 == UInt8(ascii: "-") && $1 == UInt8(ascii: "-") }
    }

    /// A snap hook's name (snapd: a lowercase letter, then lowercase letters, digits and single `-`).
    static func isValidSnapHookName(_ name: Substring) -> Bool {
        guard let first = name.utf8.first, isLowercase(first) else { return false }
        return isValidSnapAppName(name) && !name.utf8.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
    }

    /// Why `value` cannot be a rule's `app-id`, or nil when it can: `flatpak:` and a valid Flatpak app id,
    /// or `snap:` and a valid snap instance name.
    public static func appIDProblem(_ value: String) -> String? {
        if value.hasPrefix("flatpak:") {
            let id = String(value.dropFirst("flatpak:".count))
            return isValidFlatpakID(id) ? nil
                : "'\(id)' is not a Flatpak app id (three or more dot-separated elements of letters, digits and _, as org.gnome.Maps)"
        }
        if value.hasPrefix("snap:") {
            let name = value.dropFirst("snap:".count)
            return isValidSnapInstance(name) ? nil
                : "'\(name)' is not a snap name (lowercase letters, digits and -, as firefox; a parallel install as firefox_beta)"
        }
        return "'\(value)' is not flatpak:ID or snap:NAME"
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
    private static func isLowercase(_ b: UInt8) -> Bool { b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z") }
    private static func isLetter(_ b: UInt8) -> Bool { isLowercase(b) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z")) }
}
