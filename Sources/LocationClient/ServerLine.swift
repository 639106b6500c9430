import LocationCore
import LocationWire

// The server's lines as this library reads them: LocationWire's decoder (`ServerMessage.decode`), then
// the public values, which are LocationWire's messages with the line they came in.

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
                        horizontalAccuracy: ConfidenceLevel.horizontalAccuracy(eph: eph, accuracy: accuracy),
                        verticalAccuracy: ConfidenceLevel.verticalAccuracy(epv: epv), course: track, speed: speed,
                        heading: heading, climb: climb, timestamp: time, accuracyAuthorization: accuracy,
                        device: device, mode: mode, json: json)
    }
}

extension ServerMessage.Status {
    func status(json: String?) -> DaemonStatus { DaemonStatus(self, json: json) }
}

extension ServerMessage.Authorization {
    func authorization(json: String?) -> Authorization { Authorization(self, json: json) }
}

extension ServerMessage.Ask {
    func question(json: String?) -> AgentQuestion { AgentQuestion(self, json: json) }
}

extension ServerMessage.Grants {
    /// The public value; entries without a subject (which a grant always has) are left out.
    func list(json: String?) -> GrantList {
        var named = self
        named.persistent.removeAll { $0.subject == nil }
        named.preapproved.removeAll { $0.subject == nil }
        return GrantList(named, json: json)
    }
}

extension AuditRecord {
    func event(json: String?) -> AuditEvent { AuditEvent(self, json: json) }
}
