/// The Publisher's subscribers, kept in one contiguous array that the fan-out walks by slot, with a map
/// from client id to slot for requests.
///
/// An array, not a dictionary of subscribers: a read through `Dictionary.Values`' subscript copies the
/// whole value — retaining its profile and its POLL list — for every client and fix (measured with
/// `perf record` at 1000 clients: 6 % of the daemon's time in those copies and their retains). The
/// fan-out reads a field as `entries[slot].field` (the optimizer loads just that field from the array's
/// buffer; a `_read` accessor that yields the element would copy it first) and writes through
/// `subscript(slot:)`, which reaches the element in place.
///
/// Removal moves the last subscriber into the freed slot, so slots are stable only between removals:
/// the fan-out removes none while it walks.
struct SubscriberTable {
    /// The subscribers, by slot; read only here (insert and remove keep `slots` in step).
    private(set) var entries: [Subscriber] = []
    /// Client id → its slot in `entries`.
    private var slots: [Int: Int] = [:]

    var count: Int { entries.count }
    /// The slots, for the fan-out's walk.
    var indices: Range<Int> { entries.indices }

    /// The client ids, in slot order.
    var ids: [Int] { entries.map(\.id) }

    /// The slot of client `id`, if it is connected.
    func slot(of id: Int) -> Int? { slots[id] }

    /// The subscriber in `slot`, written in place (read through `entries`).
    subscript(slot slot: Int) -> Subscriber {
        get { entries[slot] }
        _modify { yield &entries[slot] }
    }

    /// Client `id`'s subscriber; nil when it is not connected. Setting nil is not supported (use
    /// `remove`), and setting a value for an unknown id does nothing.
    subscript(id: Int) -> Subscriber? {
        get { slots[id].map { entries[$0] } }
        set {
            guard let slot = slots[id], let newValue else { return }
            entries[slot] = newValue
        }
    }

    /// Adds (or replaces) client `id`'s subscriber.
    mutating func insert(_ subscriber: Subscriber) {
        if let slot = slots[subscriber.id] {
            entries[slot] = subscriber
            return
        }
        slots[subscriber.id] = entries.count
        entries.append(subscriber)
    }

    /// Removes client `id`'s subscriber; the last one takes its slot.
    mutating func remove(_ id: Int) {
        guard let slot = slots.removeValue(forKey: id) else { return }
        let last = entries.count - 1
        if slot != last {
            entries.swapAt(slot, last)
            slots[entries[slot].id] = slot
        }
        entries.removeLast()
    }
}

extension SubscriberTable: Sequence {
    func makeIterator() -> IndexingIterator<[Subscriber]> { entries.makeIterator() }
}
