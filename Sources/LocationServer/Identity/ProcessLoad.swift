#if canImport(Glibc)
import Glibc
#endif
import CPosixShims
import LocationPosix

/// Whether a process was loaded cleanly, so that the program it runs is what speaks (ARCHITECTURE.md
/// "Identity strength"): only files owned by root (or the daemon's own user) that group and others cannot
/// write are mapped executable in it (/proc/PID/maps), and its environment names no other place to load
/// code from (/proc/PID/environ).
/// A user can make any program run their code — `LD_PRELOAD=./x.so /usr/bin/sleep` needs no ptrace — and
/// such a process must not pass for the program (found by a helper attacking the daemon as an unprivileged
/// user: an `always`/full grant for `/usr/bin/sleep`).
enum ProcessLoad {
    /// Why process `pid`'s load is not clean, or nil when it is: the first of a loader or plugin variable in
    /// its environment naming an untrusted place (`injection`), a mapped executable file that is not root's or
    /// is writable by group or others, deleted or not the file at its path here, or what could not be read
    /// (fails closed).
    static func taint(pid: Int32) -> String? {
        switch environment(of: pid) {
        case .success(let bytes):
            if let why = injection(inEnvironment: bytes) { return why }
        case .failure(.fileTooLarge):
            return "its environment is larger than \(environmentLimit / 1024) KiB"
        case .failure(let e):
            return "its environment cannot be read (\(e))"
        }
        let maps: [UInt8]
        switch FileDescriptorOps.readFile(atPath: "/proc/\(pid)/maps", maximumBytes: mapsLimit) {
        case .success(let bytes): maps = bytes
        case .failure(let e): return "its memory map cannot be read (\(e))"
        }
        if let region = anonymousCode(inMaps: maps) {
            return "it runs code from anonymous memory (\(region)): made at run time, or by a library that hid its file"
        }
        for file in executableFiles(inMaps: maps) {
            if let why = untrusted(file) { return why }
        }
        return nil
    }

    /// The environment process `pid` was started with: /proc/PID/environ, which is its owner's alone (mode
    /// 0400); for another user's process (the service has CAP_SYS_PTRACE, not CAP_DAC_READ_SEARCH) the same
    /// bytes read with process_vm_readv(2) between `env_start` and `env_end` of /proc/PID/stat (proc(5)
    /// fields 50 and 51), which is what the kernel reads for /proc/PID/environ.
    static func environment(of pid: Int32) -> Result<[UInt8], Errno> {
        let direct = FileDescriptorOps.readFile(atPath: "/proc/\(pid)/environ", maximumBytes: environmentLimit)
        guard case .failure(.permissionDenied) = direct else { return direct }
        guard case .success(let stat) = FileDescriptorOps.readFile(atPath: "/proc/\(pid)/stat", maximumBytes: 4096),
              let range = environmentRange(inStat: stat) else { return direct }
        let length = Int(range.end - range.start)
        guard length <= environmentLimit else { return .failure(.fileTooLarge) }
        var bytes = [UInt8](repeating: 0, count: length)
        let read = bytes.withUnsafeMutableBytes { locationd_read_process_memory(pid, range.start, $0.baseAddress, length) }
        guard read == length else { return .failure(read < 0 ? Errno.current : .permissionDenied) }
        return .success(bytes)
    }

    /// `env_start` and `env_end` of a /proc/PID/stat text (fields 50 and 51, counted from the pid; the command
    /// name, field 2, is in parentheses and may hold spaces and parentheses itself); nil when absent or zero
    /// (the kernel hides them from a reader without ptrace read access).
    static func environmentRange(inStat bytes: [UInt8]) -> (start: UInt64, end: UInt64)? {
        guard let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = bytes[(close + 1)...].split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
        // fields[0] is field 3 (state): field N is fields[N - 3].
        guard fields.count >= 49, let start = UInt64(fields[47]), let end = UInt64(fields[48].filter { $0 != "\n" }),
              start != 0, end > start else { return nil }
        return (start, end)
    }

    /// The most of /proc/PID/environ read: 1 MiB (the kernel lets execve(2) pass up to a quarter of the stack
    /// limit, 2 MiB by default; programs rarely carry a tenth of that).
    static let environmentLimit = 1 << 20
    /// The most of /proc/PID/maps read: 16 MiB (a browser's hundreds of thousands of mappings).
    static let mapsLimit = 16 << 20

    /// Variables that name where a program or its libraries load code from, beyond those that start with `LD_`
    /// (ld.so(8): `LD_PRELOAD`, `LD_LIBRARY_PATH`, `LD_AUDIT`, …): glibc's `GCONV_PATH` (iconv modules) and
    /// locale paths, and libraries' plugin paths (GTK, GIO, GStreamer, Qt, gdk-pixbuf, SASL, OpenSSL, PKCS#11),
    /// which may load a module after the process was identified, where the memory map could not show it yet.
    /// An interpreter's own hooks (`PYTHONPATH`, `PERL5OPT`, `BASH_ENV`, …) are not here: an interpreter is
    /// unverified whatever its environment, and a rule that accepts it (`interpreter = yes`) accepts any code
    /// of its user.
    static let pathVariables: Set<String> = [
        "GCONV_PATH", "LOCPATH", "NLSPATH", "GTK_MODULES", "GTK3_MODULES", "GTK_PATH", "GIO_EXTRA_MODULES",
        "GIO_MODULE_DIR", "GST_PLUGIN_PATH", "GST_PLUGIN_PATH_1_0", "GST_PLUGIN_SYSTEM_PATH", "GST_PLUGIN_SYSTEM_PATH_1_0",
        "QT_PLUGIN_PATH", "QT_QPA_PLATFORM_PLUGIN_PATH", "GDK_PIXBUF_MODULE_FILE", "SASL_PATH", "OPENSSL_CONF",
        "OPENSSL_MODULES", "OPENSSL_ENGINES", "PKCS11_MODULE_PATH",
    ]

    /// Why a /proc/PID/environ text (`NAME=VALUE` entries, each ended by a NUL) lets code the process's user
    /// chose be loaded, or nil: an `LD_` variable or one of `pathVariables` naming a path that is relative, or
    /// not a trusted file or directory (`untrustedPath`); for `LD_LIBRARY_PATH` an empty element, which is the
    /// current directory. Names without a slash (`GTK_MODULES=gail:atk-bridge`, `LD_BIND_NOW=1`) are looked up
    /// in the system's directories, and whatever a variable makes the loader map shows in the memory map too.
    static func injection(inEnvironment bytes: [UInt8]) -> String? {
        for entry in bytes.split(separator: 0, omittingEmptySubsequences: true) {
            guard let equals = entry.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let name = String(decoding: entry[entry.startIndex..<equals], as: UTF8.self)
            guard name.hasPrefix("LD_") || pathVariables.contains(name) else { continue }
            let value = String(decoding: entry[(equals + 1)...], as: UTF8.self)
            let elements = value.split(omittingEmptySubsequences: false, whereSeparator: { ":; ,".contains($0) })
            for element in elements {
                if element.isEmpty {
                    if name == "LD_LIBRARY_PATH" && !value.isEmpty { return "\(name) in its environment names the current directory" }
                    continue
                }
                guard element.contains("/") else { continue }
                guard element.hasPrefix("/") else { return "\(name) in its environment names \(element), a relative path" }
                if let why = untrustedPath(String(element)) { return "\(name) in its environment names \(element), \(why)" }
            }
        }
        return nil
    }

    /// The owners whose files the daemon trusts: root, and the daemon's own user (who could change the
    /// daemon itself: a daemon run by a user for that user, as the quick start does, trusts that user's build).
    static let trustedOwners: Set<UInt32> = [0, geteuid()]

    /// Why the file or directory at `path` (links followed) cannot be trusted, or nil: it, or when it does not
    /// exist the nearest directory above it that does (where it could be made later), is owned by another than
    /// `trustedOwners`, or writable by group or others.
    static func untrustedPath(_ path: String) -> String? {
        var place = path
        while true {
            if case .success(let status) = FileDescriptorOps.status(ofFileAt: place) {
                let what = place == path ? "" : " (in \(place))"
                if !trustedOwners.contains(status.owner) { return "owned by uid \(status.owner), not root\(what)" }
                if status.mode & 0o022 != 0 { return "which group or others may write\(what)" }
                return nil
            }
            guard let slash = place.lastIndex(of: "/"), place != "/" else { return nil }
            place = slash == place.startIndex ? "/" : String(place[..<slash])
        }
    }

    /// A file mapped executable in a process: its path as the process sees it, and its device and inode.
    struct MappedFile: Hashable {
        var path: String
        var device: UInt64
        var inode: UInt64
    }

    /// The distinct files mapped executable in a /proc/PID/maps text (proc(5): `ADDRESS PERMS OFFSET
    /// MAJOR:MINOR INODE PATH`, permissions with `x` third); anonymous mappings (inode 0: JIT code, the vDSO)
    /// are left out — only code already running can make them.
    static func executableFiles(inMaps bytes: [UInt8]) -> [MappedFile] {
        var seen = Set<MappedFile>(), files: [MappedFile] = []
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            var fields: [Substring] = []
            var rest = Substring(String(decoding: line, as: UTF8.self))
            while fields.count < 5 {
                rest = rest.drop { $0 == " " }
                guard let end = rest.firstIndex(of: " ") else { fields.append(rest); rest = ""; break }
                fields.append(rest[..<end])
                rest = rest[end...]
            }
            guard fields.count == 5, fields[1].count >= 3, fields[1].dropFirst(2).first == "x",
                  let inode = UInt64(fields[4]), inode != 0 else { continue }
            let numbers = fields[3].split(separator: ":")
            guard numbers.count == 2, let major = UInt64(numbers[0], radix: 16), let minor = UInt64(numbers[1], radix: 16) else { continue }
            let file = MappedFile(path: String(rest.drop { $0 == " " }), device: makeDevice(major: major, minor: minor), inode: inode)
            if seen.insert(file).inserted { files.append(file) }
        }
        return files
    }

    /// The first executable mapping of a /proc/PID/maps text backed by no file (inode 0) other than the
    /// kernel's own (`[vdso]`, `[vsyscall]`, `[uprobes]`), as `START-END`; nil when none. A library preloaded
    /// by the user can copy itself there, unmap its file and blank its variable before the daemon looks
    /// (found by a helper attacking the daemon as uid 1: "verified executable" `/usr/bin/sleep` at full
    /// accuracy on every front); code generated at run time (a JIT) cannot be told from it.
    static func anonymousCode(inMaps bytes: [UInt8]) -> String? {
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
            guard fields.count >= 5, fields[1].count >= 3, fields[1][fields[1].startIndex + 2] == UInt8(ascii: "x"),
                  fields[4].elementsEqual("0".utf8) else { continue }
            let name = fields.count > 5 ? String(decoding: fields[5], as: UTF8.self) : ""
            if ["[vdso]", "[vsyscall]", "[uprobes]"].contains(name) { continue }
            return String(decoding: fields[0], as: UTF8.self)
        }
        return nil
    }

    /// glibc's makedev(3) encoding of a device number, as stat(2)'s `st_dev` holds it.
    static func makeDevice(major: UInt64, minor: UInt64) -> UInt64 {
        ((major & 0xffff_f000) << 32) | ((major & 0xfff) << 8) | ((minor & 0xffff_ff00) << 12) | (minor & 0xff)
    }

    /// Why a mapped file cannot be trusted, or nil: it must be the file at its path here (same device and inode
    /// — a path seen in another mount namespace, or a file replaced since, proves nothing), owned by root, and
    /// not writable by group or others.
    static func untrusted(_ file: MappedFile) -> String? {
        if file.path.hasSuffix(" (deleted)") || !file.path.hasPrefix("/") {
            return "it runs code from a file deleted or replaced since it was loaded (\(file.path))"
        }
        guard case .success(let status) = FileDescriptorOps.status(ofFileAt: file.path),
              status.device == file.device, status.inode == file.inode else {
            return "it runs code from \(file.path), which is not the file at that path here"
        }
        if !trustedOwners.contains(status.owner) { return "it runs code from \(file.path), owned by uid \(status.owner), not root" }
        if status.mode & 0o022 != 0 { return "it runs code from \(file.path), which group or others may write" }
        return nil
    }

    /// Whether `executable` is an interpreter: a program whose behaviour is the script it is given (python,
    /// perl, ruby, node, the shells, ...), named as Debian installs them, with or without a version
    /// (`python3.11`, `perl5.36.0`, `tclsh8.6`, `guile-3.0`).
    static func isInterpreter(_ executable: String) -> Bool {
        let name = executable.split(separator: "/").last.map(String.init) ?? executable
        let stem = String(name.reversed().drop { "0123456789.-".contains($0) }.reversed())
        return interpreters.contains(stem)
    }

    /// Interpreter names without their version.
    static let interpreters: Set<String> = [
        "python", "pypy", "perl", "ruby", "irb", "node", "nodejs", "deno", "bun", "sh", "bash", "dash", "zsh", "ksh",
        "mksh", "yash", "fish", "csh", "tcsh", "busybox", "tclsh", "wish", "expect", "lua", "luajit", "php", "gjs", "cjs",
        "java", "jshell", "R", "Rscript", "guile", "awk", "gawk", "mawk", "nawk", "gdb", "julia", "erl", "escript",
        "elixir", "qjs", "swift", "osascript", "pwsh", "racket", "sbcl", "ocaml", "ghci", "runghc", "scala",
    ]
}
