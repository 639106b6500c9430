import LocationCore
import LocationWire

/// The daemon's state, the reply to `STATUS` (docs/PROTOCOL.md "STATUS"): LocationWire's
/// `ServerMessage.Status`, whose members (`mode`, `clients`, `receivers`) read through this value, with
/// the line it came in.
@dynamicMemberLookup
public struct DaemonStatus: Hashable, Sendable {
    /// One configured receiver (a `receivers[]` element).
    public typealias Receiver = ServerMessage.Status.Receiver
    /// One fleet uplink (an `uplinks[]` element; root and the admin group only).
    public typealias Uplink = ServerMessage.Status.Uplink

    /// The status as LocationWire decoded it.
    public var message: ServerMessage.Status
    /// The `STATUS` object as the server sent it, one line without the newline; nil for values made in
    /// code.
    public var json: String?

    /// Makes a status value from the message.
    public init(_ message: ServerMessage.Status, json: String? = nil) {
        self.message = message
        self.json = json
    }

    /// Makes a status value.
    /// - Parameters:
    ///   - mode: the current fix mode; at most 2D for a client with reduced accuracy, nil for a client
    ///     that may not see the location at all.
    ///   - clients: connected clients this one may count (all for an admin, its own user's otherwise), this one included.
    ///   - receivers: the configured receivers, in the daemon's order.
    ///   - json: the line it came in, without the newline.
    public init(mode: FixMode?, clients: Int, receivers: [Receiver], json: String? = nil) {
        self.init(ServerMessage.Status(mode: mode, clients: clients, receivers: receivers), json: json)
    }

    /// A member of the status (`ServerMessage.Status`), e.g. `status.receivers`.
    public subscript<Value>(dynamicMember member: WritableKeyPath<ServerMessage.Status, Value>) -> Value {
        get { message[keyPath: member] }
        set { message[keyPath: member] = newValue }
    }
}
