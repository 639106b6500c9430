import LocationCore
import LocationWire

// The server's lines as this library reads them: LocationWire's decoder (`ServerMessage.decode`), then
// the public values. Members the daemon may leave out are optional there; where this library's values
// need one, an absent member reads as "?" (names, states) or 0 (counts), as it always did.

/// One line from the server: its bytes (without the newline) and what LocationWire read in them.
struct ServerLine: Sendable {
    let bytes: [UInt8]
    /// The message, or why it could not be read.
    let result: Result<ServerMessage, ServerMessageError>

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        result = Result { () throws(ServerMessageError) in try ServerMessage.decode(bytes) }
    }

    /// The message; nil when the line could not be read.
    var message: ServerMessage? { try? result.get() }

    /// The line's class: the message's, or the one named by a line that could not be read otherwise
    /// (nil for a line that is not a JSON object with a string `class`).
    var className: String? {
        switch result {
        case .success(let message): return message.className
        case .failure(let error): return error.className
        }
    }

    /// The line as text, as the server sent it.
    var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The first `count` bytes as text, for messages.
    func excerpt(_ count: Int) -> String { String(decoding: bytes.prefix(count), as: UTF8.self) }
}

extension ServerMessage.TPV {
    /// The location, when the TPV has a 2D/3D mode and a position; nil otherwise.
    func location(json: String?) -> Location? {
        guard mode.hasPosition, let latitude, let longitude, latitude.isFinite, longitude.isFinite else { return nil }
        return Location(latitude: latitude, longitude: longitude, altitude: altitudeMSL, ellipsoidalAltitude: altitudeHAE,
                        horizontalAccuracy: eph, verticalAccuracy: epv, course: track, speed: speed,
                        heading: heading, climb: climb, timestamp: time, accuracyAuthorization: accuracy,
                        device: device, mode: mode, json: json)
    }
}

extension ServerMessage.Status {
    /// The public value; receivers without a name are reported as `"?"`.
    func status(json: String?) -> DaemonStatus {
        let list = receivers.map { r in
            DaemonStatus.Receiver(name: r.name ?? "?", type: r.type ?? "?", path: r.path, state: r.state ?? "?",
                                  reason: r.reason, speed: r.speed, connectedSince: r.connectedSince,
                                  sentences: r.sentences ?? 0, fixes: r.fixes, errors: r.errors ?? 0,
                                  lastFixTime: r.lastFixTime, priority: r.priority ?? 0)
        }
        return DaemonStatus(mode: mode, clients: clients ?? 0, receivers: list, json: json)
    }
}

extension ServerMessage.Authorization {
    func authorization(json: String?) -> Authorization {
        Authorization(status: status, accuracy: accuracy, reason: reason, json: json)
    }
}

extension ServerMessage.Ask {
    func question(json: String?) -> AgentQuestion {
        AgentQuestion(id: id, client: client ?? ClientDescription(), request: request ?? "?",
                      accuracy: accuracy, purposeKey: purposeKey, purpose: purpose, timeout: timeout, json: json)
    }
}

extension ServerMessage.Answered {
    var notice: AnsweredNotice { AnsweredNotice(id: id, answer: answer ?? "?", by: by) }
}

extension ServerMessage.Grants {
    /// The public value; stored entries without a subject are left out.
    func list(json: String?) -> GrantList {
        GrantList(
            persistent: persistent.compactMap { e in
                e.subject.map {
                    GrantList.Persistent(subject: $0, allowed: e.allowed ?? false, accuracy: e.accuracy,
                                         created: e.created, expires: e.expires, decidedBy: e.decidedBy)
                }
            },
            preapproved: preapproved.compactMap { e in
                e.subject.map {
                    GrantList.Preapproval(subject: $0, accuracy: e.accuracy, created: e.created,
                                          expires: e.expires)
                }
            },
            once: once.map { e in
                GrantList.OneTime(pid: e.pid, uid: e.uid, executable: e.executable, unit: e.unit, accuracy: e.accuracy,
                                  granted: e.granted, expires: e.expires)
            },
            effective: effective, revoked: revoked,
            json: json)
    }
}

extension AuditRecord {
    func event(json: String?) -> AuditEvent {
        AuditEvent(time: time, unixTime: unixTime, event: event ?? "?", client: client, request: request,
                   status: status, accuracy: accuracy, reason: reason, json: json)
    }
}
