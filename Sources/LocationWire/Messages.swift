import LocationCore

// The server's messages as the daemon builds them: byte-returning shorthands over the typed values
// in ServerMessages.swift, so that every line has one encoder.
extension ServerMessage {
    /// `VERSION`, sent on connect, with this build's `ProtocolVersion`.
    public static func version(release: String) -> [UInt8] {
        ServerMessage.version(Version(release: release)).encoded()
    }

    /// `ERROR` naming the request class (or `"?"`) and the problem.
    public static func error(request: String, message: String) -> [UInt8] {
        ServerMessage.error(Failure(request: request, message: message)).encoded()
    }

    /// The `WATCH` acknowledgement: the effective subscription (`minInterval` seconds,
    /// `distanceFilter` metres).
    public static func watch(enable: Bool, minInterval: Double, distanceFilter: Double, satellites: Bool = false) -> [UInt8] {
        ServerMessage.watch(Watch(enable: enable, minInterval: minInterval, distanceFilter: distanceFilter,
                                  satellites: satellites ? true : nil)).encoded()
    }

    /// `STATE`: the fix was lost (with the reason) or came back; with `waiting`, why nothing comes for now
    /// (`State.accuracyLimited`, `State.insufficientlyInUse`); `nextReportIn` in seconds (docs/PROTOCOL.md "STATE").
    public static func state(fix: Bool, reason: String?, waiting: String? = nil, nextReportIn: Double? = nil) -> [UInt8] {
        ServerMessage.state(State(fix: fix, reason: reason, waiting: waiting, nextReportIn: nextReportIn)).encoded()
    }
}

/// One receiver's line in a `STATUS` reply, as the daemon builds it: the message's own receiver value.
public typealias ReceiverReport = ServerMessage.Status.Receiver

extension ServerMessage {
    /// `STATUS` reply.
    /// - Parameters:
    ///   - mode: the current fix mode as this client may know it; nil leaves `mode` out (a client that
    ///     may not see the location learns nothing about the fix from STATUS).
    ///   - fixDetails: whether to give each receiver's `fixes` count and `lastFixTime` (the timing of
    ///     fixes, for clients that may see them at full accuracy).
    public static func status(mode: FixMode?, clients: Int, receivers: [ReceiverReport], fixDetails: Bool = true,
                              uplinks: [ServerMessage.Status.Uplink] = [], you: ClientDescription? = nil) -> [UInt8] {
        // A client without full accuracy sees which receivers there are, not how they are doing: fix
        // counts and times are location data, and the sentence count and state tell the cadence, the
        // satellites in view (from the GSV count) and when the fix is lost; the line speed, once found
        // (`speed = auto`), when the receiver was opened.
        let list = fixDetails ? receivers : receivers.map { r in
            ReceiverReport(name: r.name, type: r.type, path: r.path, state: nil, speed: nil, sentences: nil, fixes: nil,
                           errors: nil, priority: r.priority)
        }
        return ServerMessage.status(Status(mode: mode, clients: clients, receivers: list, uplinks: uplinks, you: you)).encoded()
    }
}

extension ServerMessage {
    /// `AUTHORIZATION` from the shared vocabulary: `accuracy` only when authorized.
    /// - Parameters:
    ///   - standing: true for a one-time grant a standing approval gave.
    ///   - inUse: false for a When-In-Use client whose user has no active login session.
    public static func authorization(status: AuthorizationStatus, accuracy: AccuracyAuthorization?, reason: String,
                                     standing: Bool = false, inUse: Bool = true) -> [UInt8] {
        ServerMessage.authorization(Authorization(status: status, accuracy: accuracy, reason: reason, standing: standing,
                                                  inUse: inUse)).encoded()
    }
}
