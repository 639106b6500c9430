import LocationWire

/// An uplink's state for `locationctl status`.
public struct UplinkStatus: Sendable {
    public var name: String
    public var broker: String
    public var topic: String
    public var accuracy: AccuracyAuthorization
    public var connected: Bool
    /// The sharing switch is on.
    public var sharing: Bool
    /// Why it is not connected, when it is not.
    public var problem: String?
    /// Reports waiting for the broker's acknowledgement.
    public var spooled: Int
    /// Reports the broker acknowledged since start.
    public var sent: Int
    /// Reports dropped from a full spool since start.
    public var dropped: Int
}
