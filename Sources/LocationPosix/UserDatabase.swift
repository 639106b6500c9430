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

    /// The gid of the group `name` (getgrnam_r(3)); nil when there is no such group.
    public static func groupID(named name: String) -> UInt32? {
        lookUpGroup { getgrnam_r(name, &$0, $1, $2, &$3) }?.gid
    }

    /// The name of group `gid` (getgrgid_r(3)); nil when it has none.
    public static func name(ofGroup gid: UInt32) -> String? {
        lookUpGroup { getgrgid_r(gid, &$0, $1, $2, &$3) }?.name
    }

    /// One group lookup, its buffer grown while the call says ERANGE (a group of many members; up to 1 MiB).
    private static func lookUpGroup(
        _ call: (inout group, UnsafeMutablePointer<CChar>, Int, inout UnsafeMutablePointer<group>?) -> Int32
    ) -> (gid: UInt32, name: String)? {
        var size = 16384
        while size <= 1 << 20 {
            var grp = group()
            var result: UnsafeMutablePointer<group>?
            var buffer = [CChar](repeating: 0, count: size)
            let status = buffer.withUnsafeMutableBufferPointer { call(&grp, $0.baseAddress!, size, &result) }
            if status == ERANGE { size *= 2; continue }
            guard status == 0, result != nil, let name = grp.gr_name else { return nil }
            return (grp.gr_gid, String(cString: name))
        }
        return nil
    }
}
