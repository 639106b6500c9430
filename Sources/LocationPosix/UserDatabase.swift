#if canImport(Glibc)
import Glibc
#endif

/// The system's user database (passwd(5) through NSS).
public enum UserDatabase {
    /// The name of user `uid` (getpwuid_r(3)); nil when it has none.
    public static func name(ofUser uid: UInt32) -> String? {
        var pwd = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &pwd, &buffer, buffer.count, &result) == 0, result != nil, let name = pwd.pw_name else { return nil }
        return String(cString: name)
    }

    /// The uid of the user `name` (getpwnam_r(3)); nil when there is no such user.
    public static func userID(named name: String) -> UInt32? {
        var pwd = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwnam_r(name, &pwd, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return pwd.pw_uid
    }
}
