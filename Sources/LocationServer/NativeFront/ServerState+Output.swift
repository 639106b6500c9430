import LocationPosix

/// Writing to clients: one connection reached in place, its output queued and bounded.
extension ServerState {
    // MARK: - Writing

    /// Sends `bytes` to client `id`; a location report replaces one still unsent. A client whose socket
    /// failed, or that lets more than `maxQueuedBytes` pile up, is closed.
    /// - Parameters:
    ///   - tag: marks a message that may be withdrawn while still wholly unsent (`OutputQueue`).
    ///   - gpsd: the bytes are gpsd's protocol; anything else is never sent to a gpsd client.
    mutating func send(_ id: Int, _ bytes: [UInt8], isLocation: Bool = false, tag: Int? = nil, gpsd: Bool = false) {
        guard let index = connections.index(forKey: id) else { return }
        send(at: index, id, bytes, isLocation: isLocation, tag: tag, gpsd: gpsd)
    }

    /// `send` to the connection at `index` (client `id`), found already.
    mutating func send(at index: [Int: Connection].Index, _ id: Int, _ bytes: [UInt8], isLocation: Bool = false,
                       tag: Int? = nil, gpsd: Bool = false) {
        // The connection is reached in place (`inout`): a dictionary's getter would copy the whole
        // connection for every client and fix.
        switch Self.send(bytes, isLocation: isLocation, tag: tag, gpsd: gpsd, on: &connections.values[index], limits: limits) {
        case .done:
            break
        case .watchWritable:
            connections.values[index].watchingWritable = true
            do {
                try poller?.watchWritable(connections.values[index].fd, tag: UInt64(id), true)
            } catch {
                close(id, why: "cannot watch the socket: \(error)")
            }
        case .close(let why):
            close(id, why: why)
        }
    }

    /// Whether a connection speaks gpsd's protocol, read in place (see `send`).
    static func speaksGpsd(_ connection: inout Connection) -> Bool { connection.speaksGpsd }
    /// Whether a native connection's `WATCH` asked for `SKY`, read in place.
    static func wantsSatellites(_ connection: inout Connection) -> Bool { connection.wantsSatellites }

    private enum SendOutcome {
        case done, watchWritable, close(String)
    }

    private static func send(_ bytes: [UInt8], isLocation: Bool, tag: Int?, gpsd: Bool, on connection: inout Connection,
                             limits: ServerLimits) -> SendOutcome {
        guard connection.speaksGpsd == gpsd else { return .done }
        do {
            guard try connection.output.send(bytes, isLocation: isLocation, tag: tag, on: connection.fd) else { return .done }
            if connection.output.byteCount > limits.maxQueuedBytes { return .close("more than \(limits.maxQueuedBytes) bytes queued") }
            return connection.watchingWritable ? .done : .watchWritable
        } catch {
            return .close("write failed: \(error)")
        }
    }

    /// Client `id`'s socket has room: writes what is queued; stops watching once it is all out.
    mutating func writable(_ id: Int) {
        guard let index = connections.index(forKey: id) else { return }
        do {
            guard try !connections.values[index].output.flush(connections.values[index].fd) else { return }
            guard connections.values[index].watchingWritable else { return }
            connections.values[index].watchingWritable = false
            try poller?.watchWritable(connections.values[index].fd, tag: UInt64(id), false)
        } catch {
            close(id, why: "write failed: \(error)")
        }
    }
}
