#if canImport(Glibc)
import Glibc
#endif

/// Which sanitizer the tests (and the daemon they start, built alongside) run under, if any
/// (`swift test --sanitize=address|thread`, docs/FUZZING.md).
public enum Sanitizers {
    /// True under AddressSanitizer: its runtime's entry point is linked in. Memory figures then measure
    /// ASan's allocator (freed blocks wait in a quarantine of up to 256 MB, each block has redzones) rather
    /// than the daemon, and everything runs 2–3× slower; LeakSanitizer checks leaks instead.
    public static let address = symbolExists("__asan_init")
    /// True under ThreadSanitizer (5–15× slower).
    public static let thread = symbolExists("__tsan_init")
    /// Either.
    public static var any: Bool { address || thread }

    private static func symbolExists(_ name: String) -> Bool {
        // RTLD_DEFAULT is the null handle on glibc (dlfcn.h).
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) != nil
    }
}
