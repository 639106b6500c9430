import LocationPosix
import LocationWire

/// Reading from clients: what a readable socket brought, bounded per connection and per user, framed into
/// requests (or handed to the gpsd conversation).
extension ServerState {
    /// Client `id`'s socket is readable: frames what arrived into requests and answers them.
    mutating func readable(_ id: Int, at now: Moment) {
        guard let fd = connections[id]?.fd, let identity = connections[id]?.identity else { return }
        let result = readBuffer.withUnsafeMutableBytes { PeerProcess.receive(fd, into: $0) }
        switch result {
        case .success((0, _)):
            close(id, why: "client disconnected")
        case .failure(.wouldBlock):
            return
        case .failure(let e):
            close(id, why: "read failed: \(e)")
        case .success((_, let sender?)) where sender != identity.pid:
            // Its identity is the process that connected (SO_PEERCRED); another one wrote this — a child
            // it left the socket to before exec'ing a trusted program, or the holder of a socket whose
            // connecting process exited and whose pid went to another program.
            refuse(id, "requests must come from the process that connected (pid \(identity.pid)), not pid \(sender)")
        case .success((let n, _)):
            connections[id]?.meter.tick(now.monotonic)
            connections[id]?.meter.bytes += n
            // Every front: gpsd's requests are a few bytes, and what the NMEA socket ignores still costs a
            // read (without this, 64 gpsd connections kept a CPU busy reading 8 GB in 15 s).
            let floodBytes = 64 * ProtocolVersion.maximumRequestLength
            if let bytes = connections[id]?.meter.bytes, bytes > floodBytes {
                refuse(id, "flooding: more than \(floodBytes) bytes in a second")
                return
            }
            guard userReads.spend(n, uid: identity.uid, now: now.monotonic.sinceOrigin) else {
                refuse(id, "flooding: this user's connections together sent more than \(UserReadBudget.bytesPerSecond) bytes in a second")
                return
            }
            if connections[id]?.gpsd != nil {
                gpsdRead(Array(readBuffer[0..<n]), from: id, at: now)
                return
            }
            var events: [LineFramer.Event] = []
            connections[id]?.framer.feed(readBuffer[0..<n]) { events.append($0) }
            for event in events {
                guard connections[id] != nil else { return }
                switch event {
                case .line(let line):
                    handleLine(line, from: id, at: now)
                case .tooLong:
                    bad(id, RequestError(request: "?", message: "request longer than \(ProtocolVersion.maximumRequestLength) bytes"))
                }
            }
        }
    }
}
