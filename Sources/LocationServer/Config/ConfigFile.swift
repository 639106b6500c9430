#if canImport(Glibc)
import Glibc
#endif
import CInih
import LocationPosix

/// One `key = value` of a config file, with where it was written.
public struct ConfigEntry: Hashable, Sendable {
    public var section: String
    public var key: String
    public var value: String
    public var file: String
    public var line: Int
}

/// A config file error, reported as `FILE:LINE: key: message` (the daemon then exits 78, EX_CONFIG).
public struct ConfigFileError: Error, Hashable, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int?
    public var key: String?
    public var message: String

    public init(file: String, line: Int?, key: String?, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
    }

    public var description: String {
        var s = file
        if let line { s += ":\(line)" }
        s += ": "
        if let key { s += "\(key): " }
        return s + message
    }
}

/// Reads INI files with inih (`ini_parse_stream`), keeping each entry's line number.
///
/// inih reads into a buffer of a fixed size (`INI_MAX_LINE`, 200 bytes as Debian builds it) and takes
/// whatever does not fit as the next line. So lines are read whole here and handed to inih one at a
/// time: a comment longer than the buffer is passed as a blank line, any other over-long line is an
/// error naming it — never a wrong line number or half a value.
public enum ConfigFile {
    private final class ParseState {
        let file: UnsafeMutablePointer<FILE>
        let path: String
        var line = 0
        var entries: [ConfigEntry] = []
        /// A line too long for inih's buffer (not a comment): its number and inih's limit.
        var tooLong: (line: Int, limit: Int)?
        /// getline(3)'s buffer, reused from line to line.
        var lineBuffer: UnsafeMutablePointer<CChar>? = nil
        var lineCapacity = 0
        /// Whether the line read last starts with a space or tab (inih takes such a line after a key as a
        /// continuation of its value, handed over under the same key: not a second setting of it).
        var lineIndented = false
        /// Whether a key was read since the last section header.
        var afterKey = false
        /// Section → the line of its header, and (section, key) → the line of its entry, in this file:
        /// each appears once in a file (a drop-in may set them again).
        var sectionLines: [String: Int] = [:]
        var keyLines: [String: [String: Int]] = [:]
        /// A section or key given twice in this file: parsing stops at it.
        var repeated: ConfigFileError?

        init(file: UnsafeMutablePointer<FILE>, path: String) {
            self.file = file
            self.path = path
        }

        deinit { free(lineBuffer) }

        /// The next whole line into `buffer` (`size` bytes), or nil at the end or on a line too long.
        func next(into buffer: UnsafeMutablePointer<CChar>, size: Int) -> UnsafeMutablePointer<CChar>? {
            let length = getline(&lineBuffer, &lineCapacity, file)
            guard length >= 0, let text = lineBuffer else { return nil }
            line += 1
            var first = 0
            while first < length && (text[first] == 32 || text[first] == 9) { first += 1 }
            lineIndented = first > 0
            // inih takes `[` as a header unless the line is indented after a key (then it continues that value).
            if first < length && text[first] == 91 && !(lineIndented && afterKey) { noteSection(text + first + 1, length: length - first - 1) }  // '['
            if repeated != nil { return nil }
            if length < size {
                memcpy(buffer, text, length + 1)
                return buffer
            }
            if first < length && (text[first] == 59 || text[first] == 35) {  // ';' or '#': a comment
                buffer[0] = 10
                buffer[1] = 0
                return buffer
            }
            tooLong = (line, size - 1)
            return nil
        }

        /// Notes a section header's name (the bytes up to `]`, as inih takes them); a second header of the same
        /// name in this file is an error: its keys would silently merge into (or replace those of) the first.
        func noteSection(_ name: UnsafeMutablePointer<CChar>, length: Int) {
            guard let end = (0..<length).first(where: { name[$0] == 93 }) else { return }  // ']'; else inih reports the line
            let section = String(decoding: UnsafeRawBufferPointer(start: name, count: end), as: UTF8.self)
            afterKey = false
            if let earlier = sectionLines[section] {
                repeated = ConfigFileError(file: path, line: line, key: nil,
                                           message: "[\(section)] again (first at line \(earlier)): give each section once in a file "
                                               + "(a drop-in in conf.d may add to it)")
            } else {
                sectionLines[section] = line
            }
        }

        /// Notes a key of `section`; the same key twice in one section of this file is an error (which one was
        /// meant?). A continuation line (indented, after the same key) is not a second setting.
        func noteKey(_ key: String, section: String) {
            afterKey = true
            if lineIndented, let last = entries.last, last.section == section, last.key == key { return }
            if let earlier = keyLines[section]?[key] {
                repeated = ConfigFileError(file: path, line: line, key: key,
                                           message: "given twice in [\(section)] (first at line \(earlier)): give each key once "
                                               + "in a section of a file (a drop-in in conf.d may set it again)")
            } else {
                keyLines[section, default: [:]][key] = line
            }
        }
    }

    /// Parses one file into its entries, in order.
    /// - Throws: `ConfigFileError` when the file cannot be read or a line is not INI.
    public static func read(_ path: String) throws(ConfigFileError) -> [ConfigEntry] {
        guard let file = fopen(path, "r") else {
            throw ConfigFileError(file: path, line: nil, key: nil, message: "cannot read: \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        return try parse(file, path: path)
    }

    /// Parses config text held in memory (through fmemopen(3)) as `read` parses a file: the same entries and
    /// errors, `name` standing for the file in them. Used by the config fuzz target (Fuzz/) and tests.
    /// - Parameters:
    ///   - bytes: the file's contents.
    ///   - name: what errors and entries call the file.
    /// - Throws: `ConfigFileError` when a line is not INI, or too long.
    public static func read(contentsOf bytes: [UInt8], name: String) throws(ConfigFileError) -> [ConfigEntry] {
        guard !bytes.isEmpty else { return [] }
        var copy = bytes
        let result: Result<[ConfigEntry], ConfigFileError> = copy.withUnsafeMutableBytes { buffer in
            guard let file = fmemopen(buffer.baseAddress, buffer.count, "r") else {
                return .failure(ConfigFileError(file: name, line: nil, key: nil, message: "cannot read: \(String(cString: strerror(errno)))"))
            }
            defer { fclose(file) }
            do throws(ConfigFileError) {
                return .success(try parse(file, path: name))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Parses an open stream; `path` names it in entries and errors.
    private static func parse(_ file: UnsafeMutablePointer<FILE>, path: String) throws(ConfigFileError) -> [ConfigEntry] {
        let state = ParseState(file: file, path: path)
        let context = Unmanaged.passUnretained(state).toOpaque()
        let reader: ini_reader = { buffer, size, stream in
            let state = Unmanaged<ParseState>.fromOpaque(stream!).takeUnretainedValue()
            guard let buffer, size > 2 else { return nil }
            return state.next(into: buffer, size: Int(size))
        }
        let handler: ini_handler = { user, section, name, value in
            let state = Unmanaged<ParseState>.fromOpaque(user!).takeUnretainedValue()
            guard let name, let value else { return 1 }  // a section header alone
            let sectionName = section.map { String(cString: $0) } ?? ""
            state.noteKey(String(cString: name), section: sectionName)
            if state.repeated != nil { return 1 }
            state.entries.append(ConfigEntry(section: sectionName, key: String(cString: name),
                                             value: String(cString: value), file: state.path, line: state.line))
            return 1
        }
        let result = ini_parse_stream(reader, context, handler, context)
        if let repeated = state.repeated { throw repeated }
        if let (line, limit) = state.tooLong {
            throw ConfigFileError(file: path, line: line, key: nil, message: "line longer than \(limit) bytes")
        }
        if result > 0 {
            throw ConfigFileError(file: path, line: Int(result), key: nil, message: "not a section header or key = value line")
        }
        if result < 0 {
            throw ConfigFileError(file: path, line: nil, key: nil, message: "cannot parse (error \(result))")
        }
        return state.entries
    }

    /// The main file's entries followed by those of `DIR/*.conf` beside it (`conf.d`), in name order,
    /// so that later files override earlier ones: a drop-in may set a key of the main file (or of an earlier
    /// drop-in) again, and add keys to a section of it, as systemd's drop-ins do. Within one file each section
    /// and each key of a section is given once (`read` throws at the second).
    public static func readWithDropIns(_ path: String, dropInDirectory: String?) throws(ConfigFileError) -> [ConfigEntry] {
        var entries = try read(path)
        if let dir = dropInDirectory, let stream = opendir(dir) {
            var names: [String] = []
            while let entry = readdir(stream) {
                let name = FileDescriptorOps.entryName(entry)
                if name.hasSuffix(".conf") && !name.hasPrefix(".") { names.append(name) }
            }
            closedir(stream)
            for name in names.sorted() { entries += try read(dir + "/" + name) }
        }
        return entries
    }
}
