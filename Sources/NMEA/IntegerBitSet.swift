/// A set of integers: a bitmap for `0..<bitmapSize`, a small sorted array for any other value.
///
/// SkyView's sets of satellite numbers (PRNs used by the fix; constellation × PRN pairs already listed) hold
/// small integers, so membership is one bit test instead of a hash; PRNs outside the bitmap (a garbled
/// sentence can carry any number) still work, only slower. Equality is set equality.
struct IntegerBitSet: Hashable, Sendable {
    /// Integers stored as bits: `0..<bitmapSize`.
    static let bitmapSize = 8192
    private static let wordCount = bitmapSize / 64

    private var words: [UInt64]
    /// Members outside the bitmap, sorted, without duplicates (empty in well-formed input).
    private var others: [Int] = []
    /// Number of members.
    private(set) var count = 0
    /// The words that may hold members: `removeAll` clears only these (a few PRNs set a few words).
    private var dirtyWords = 0..<0

    init() { words = Array(repeating: 0, count: Self.wordCount) }

    @inline(__always) var isEmpty: Bool { count == 0 }

    @inline(__always)
    func contains(_ value: Int) -> Bool {
        if UInt(bitPattern: value) < UInt(Self.bitmapSize) {
            return words[value >> 6] & (1 << UInt64(value & 63)) != 0
        }
        return others.contains(value)
    }

    /// Inserts `value`; returns true when it was not a member yet.
    @inline(__always) @discardableResult
    mutating func insert(_ value: Int) -> Bool {
        if UInt(bitPattern: value) < UInt(Self.bitmapSize) {
            let bit: UInt64 = 1 << UInt64(value & 63)
            if words[value >> 6] & bit != 0 { return false }
            let word = value >> 6
            words[word] |= bit
            count += 1
            if !dirtyWords.contains(word) {
                dirtyWords = dirtyWords.isEmpty ? word..<word + 1
                    : min(dirtyWords.lowerBound, word)..<max(dirtyWords.upperBound, word + 1)
            }
            return true
        }
        return insertOther(value)
    }

    /// Removes `value` if it is a member.
    @inline(__always)
    mutating func remove(_ value: Int) {
        if UInt(bitPattern: value) < UInt(Self.bitmapSize) {
            let bit: UInt64 = 1 << UInt64(value & 63)
            if words[value >> 6] & bit != 0 { words[value >> 6] &= ~bit; count -= 1 }
        } else if let i = others.firstIndex(of: value) {
            others.remove(at: i)
            count -= 1
        }
    }

    /// Removes every member, keeping the storage.
    mutating func removeAll() {
        guard count > 0 else { return }
        for i in dirtyWords { words[i] = 0 }
        dirtyWords = 0..<0
        others.removeAll(keepingCapacity: true)
        count = 0
    }

    /// Set equality (`dirtyWords` is bookkeeping, not content).
    static func == (a: Self, b: Self) -> Bool {
        a.count == b.count && a.others == b.others && a.words == b.words
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words)
        hasher.combine(others)
    }

    private mutating func insertOther(_ value: Int) -> Bool {
        var i = 0
        while i < others.count && others[i] < value { i += 1 }
        if i < others.count && others[i] == value { return false }
        others.insert(value, at: i)
        count += 1
        return true
    }
}
