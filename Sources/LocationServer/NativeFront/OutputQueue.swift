import LocationPosix

/// A client's outbound bytes: what the kernel did not take yet, oldest first, bounded by the caller.
/// A location report nothing of which was written yet is replaced by a newer one (only the newest
/// matters), so a slow reader costs one report, not a backlog; a tagged message nothing of which was
/// written yet can be withdrawn (an agent's question that is no longer asked).
struct OutputQueue: Sendable {
    private struct Message: Sendable {
        var bytes: [UInt8]
        var tag: Int?
    }

    private var messages: [Message] = []
    /// Bytes of the first message already written.
    private var sentOfFirst = 0
    /// Bytes still to write.
    private(set) var byteCount = 0
    /// Index in `messages` of a location report nothing of which was written yet.
    private var replaceableLocation: Int?
    /// Location reports replaced by newer ones before the client read them.
    private(set) var coalesced = 0
    /// Bytes handed to the kernel in all (for the stuck-reader sweep).
    private(set) var totalSent = 0

    var isEmpty: Bool { messages.isEmpty }

    /// Sends `bytes` on `fd`: straight from the caller's buffer when nothing is queued, queueing what the
    /// kernel does not take; a location report replaces a queued one still wholly unsent.
    /// - Returns: true when bytes are left queued (the caller watches for writability).
    /// - Throws: the socket's error (the client is to be closed).
    mutating func send(_ bytes: [UInt8], isLocation: Bool, tag: Int? = nil, on fd: Int32) throws(Errno) -> Bool {
        guard messages.isEmpty else {
            enqueue(bytes, isLocation: isLocation, tag: tag)
            return true
        }
        switch bytes.withUnsafeBytes({ sendNoSignal(fd, $0) }) {
        case .success(let n):
            totalSent += n
            if n == bytes.count { return false }
            // A message begun can no longer be replaced or withdrawn.
            enqueue(bytes, isLocation: false, tag: nil)
            sentOfFirst = n
            byteCount -= n
        case .failure(.wouldBlock):
            enqueue(bytes, isLocation: isLocation, tag: tag)
        case .failure(let e):
            throw e
        }
        return try flush(fd)
    }

    /// Writes as much as the socket takes.
    /// - Returns: true when bytes are left queued.
    /// - Throws: the socket's error.
    mutating func flush(_ fd: Int32) throws(Errno) -> Bool {
        while let first = messages.first {
            let result = first.bytes.withUnsafeBytes { raw in
                sendNoSignal(fd, UnsafeRawBufferPointer(rebasing: raw[sentOfFirst...]))
            }
            switch result {
            case .success(let n):
                totalSent += n
                sentOfFirst += n
                byteCount -= n
                if sentOfFirst == first.bytes.count {
                    messages.removeFirst()
                    sentOfFirst = 0
                    if let i = replaceableLocation { replaceableLocation = i > 0 ? i - 1 : nil }
                }
            case .failure(.wouldBlock):
                return true
            case .failure(let e):
                throw e
            }
        }
        return false
    }

    /// Removes the message tagged `tag` if nothing of it was written yet; true when it did.
    mutating func withdraw(tag: Int) -> Bool {
        guard let index = messages.firstIndex(where: { $0.tag == tag }), !(index == 0 && sentOfFirst > 0) else { return false }
        byteCount -= messages[index].bytes.count
        messages.remove(at: index)
        if let i = replaceableLocation, i > index { replaceableLocation = i - 1 }
        return true
    }

    private mutating func enqueue(_ bytes: [UInt8], isLocation: Bool, tag: Int?) {
        if isLocation, let index = replaceableLocation, index < messages.count, !(index == 0 && sentOfFirst > 0) {
            byteCount += bytes.count - messages[index].bytes.count
            messages[index].bytes = bytes
            coalesced += 1
            return
        }
        messages.append(Message(bytes: bytes, tag: tag))
        byteCount += bytes.count
        if isLocation { replaceableLocation = messages.count - 1 }
    }
}
