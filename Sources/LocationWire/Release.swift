/// locationd's release, one string for the daemon (`VERSION.release`, `locationd --version`) and
/// locationctl (`locationctl --version`): both are built from the same tree (debian/changelog's version).
public enum Release {
    public static let version = "0.1.0"
}
