#if canImport(Glibc)
import Glibc
#endif

/// Where SwiftPM put the package's built executables: the running test bundle's directory or the first
/// parent of it that holds them (.build/<triple>/<configuration>).
public enum BuiltProducts {
    /// The directory of the running test bundle, or its first parent holding an entry named `name`
    /// (e.g. "locationd").
    public static func directory(containing name: String) -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        var path = String(decoding: buffer.prefix(max(n, 0)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        while !path.isEmpty && access(path + "/" + name, F_OK) != 0 {
            guard let slash = path.lastIndex(of: "/") else { break }
            path = String(path[..<slash])
        }
        return path
    }
}
