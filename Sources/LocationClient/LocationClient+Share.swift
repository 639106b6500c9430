import LocationWire

/// The uplinks' sharing switch as the daemon reports it (the `SHARE` reply, docs/PROTOCOL.md "SHARE").
public struct SharingStatus: Sendable, Equatable {
    /// Whether the uplinks publish the location now.
    public var sharing: Bool
    /// When a timed pause ends (ISO 8601, UTC); nil when sharing or paused until switched on.
    public var until: String?
    /// How many uplinks are configured.
    public var uplinks: Int
}

extension LocationClient {
    /// Turns the uplinks' sharing off (for `forSeconds`, or until turned on) or on, or only asks
    /// (`SHARE`; root, the admin group or the daemon's `share-group`).
    /// - Parameters:
    ///   - sharing: false: off (the uplinks hold what their spools have); true: on (the spools' reports go
    ///     first); nil: ask only.
    ///   - forSeconds: with `sharing` false, seconds until sharing turns on by itself.
    ///   - discard: with `sharing` false, also drop every report the uplinks' spools hold (protocol 1.5).
    ///   - timeout: seconds to wait for the reply.
    /// - Returns: the switch afterwards.
    /// - Throws: `LocationClientError.server(request: "SHARE", message: "permission denied: ...")`,
    ///   `.server(request: "SHARE", message: "discard needs protocol 1.5 ...")` from an older daemon, which
    ///   would ignore it; `.timedOut`, `.disconnected`, `.invalidReply`; `CancellationError`.
    public func share(_ sharing: Bool?, forSeconds: Double? = nil, discard: Bool = false, timeout: Double = 10) async throws -> SharingStatus {
        if discard, serverProtocolMinor < 5 {
            throw LocationClientError.server(request: "SHARE", message: "discard needs protocol 1.5; the daemon speaks 1.\(serverProtocolMinor)")
        }
        let request = Request.share(sharing: sharing, forSeconds: forSeconds, discard: discard)
        let line = try await connection.roundTrip(request.encoded(), replyClass: "SHARE", timeout: timeout)
        guard let reply = try? JSONReader.read(line.bytes), case .bool(let on)? = reply["sharing"],
              case .number(let count)? = reply["uplinks"], let uplinks = Int(count) else {
            throw LocationClientError.invalidReply("unreadable SHARE reply: \(line.text)")
        }
        var until: String?
        if case .string(let text)? = reply["until"] { until = text }
        return SharingStatus(sharing: on, until: until, uplinks: uplinks)
    }
}
