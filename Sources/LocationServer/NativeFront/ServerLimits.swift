/// Limits of the native front (docs/PROTOCOL.md "Errors").
public struct ServerLimits: Sendable {
    /// Most clients at once; the next gets an ERROR and is closed. The last `reservedClients` of them
    /// are kept for root and the admin group (agents, `locationctl status`).
    public var maxClients = 1024
    /// Most clients one user may have at once (root and the admin group are not counted).
    public var maxClientsPerUser = 64
    /// How long a client may leave queued messages unread before it is disconnected.
    public var clientTimeout: Duration = .seconds(30)
    /// Bad requests tolerated per connection; one more and it is closed.
    public var maxBadRequests = 100
    /// New connections one user may open a second, on all fronts together, after a burst of
    /// `clientsPerUser` (`UserConnectionRate`); root is not limited.
    public var newConnectionsPerSecondPerUser = 16
    /// Requests per second beyond which a client is flooding.
    public var maxRequestsPerSecond = 1000
    /// Bytes queued for one client beyond which it is closed (location reports are coalesced first,
    /// so only a client that never reads and keeps asking gets here).
    public var maxQueuedBytes = 1 << 20

    public init() {}

    /// Connections only root and the admin group may use: an eighth of `maxClients`, 1 to 16.
    public var reservedClients: Int { max(1, min(16, maxClients / 8)) }

    /// The connections one user may hold: `maxClientsPerUser`, but never more than half of the room not
    /// kept for administrators, so that one user can never take it all.
    public var clientsPerUser: Int { min(maxClientsPerUser, max(1, (maxClients - reservedClients) / 2)) }
}
