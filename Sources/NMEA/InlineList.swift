/// A short list stored inside its owner: up to `inlineCapacity` elements need no heap allocation.
///
/// Sentences hold their repeated groups in it — GSV satellites (4 per page), GSA PRNs (12), GNS mode
/// characters (one per constellation) — so decoding a sentence allocates nothing and a `DecodedSentence`
/// copies as plain bytes plus one empty array. Elements beyond the inline capacity (a malformed GSV page with
/// more than four satellites, say) go to a heap array, so nothing is ever dropped.
/// (The small-vector idea: LLVM's `SmallVector`, swift-collections' fixed-capacity storage.)
struct InlineList<let inlineCapacity: Int, Element: Hashable & Sendable>: Sendable {
    private var inline: InlineArray<inlineCapacity, Element>
    /// Elements after the first `inlineCapacity`; empty (no allocation) in well-formed input.
    private var spill: [Element] = []
    /// Number of elements.
    private(set) var count = 0

    /// - Parameter filler: any value; it fills the unused inline slots and is never read.
    init(filler: Element) {
        inline = InlineArray(repeating: filler)
    }

    @inline(__always) var isEmpty: Bool { count == 0 }

    @inline(__always)
    mutating func append(_ element: Element) {
        if count < inlineCapacity { inline[count] = element } else { spill.append(element) }
        count += 1
    }

    @inline(__always)
    subscript(index: Int) -> Element {
        get { index < inlineCapacity ? inline[index] : spill[index - inlineCapacity] }
        set { if index < inlineCapacity { inline[index] = newValue } else { spill[index - inlineCapacity] = newValue } }
    }

    /// The elements as an array (allocates; for public accessors and tests, not the decoding path).
    var array: [Element] {
        var result: [Element] = []
        result.reserveCapacity(count)
        for i in 0..<count { result.append(self[i]) }
        return result
    }
}

extension InlineList: Hashable {
    static func == (a: Self, b: Self) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count where a[i] != b[i] { return false }
        return true
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for i in 0..<count { hasher.combine(self[i]) }
    }
}
