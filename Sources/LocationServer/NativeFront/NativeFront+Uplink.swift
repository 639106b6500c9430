import LocationPolicy
import LocationWire

/// The fleet uplinks' entry points: each uplink is one more subscriber of the Publisher, under the policy and the
/// sharing switch (`SHARE`, docs/PROTOCOL.md).
extension NativeFront {
    /// Subscribes an uplink (a fleet broker): from the next fix on, `sink` gets what it may see.
    /// - Parameter sharing: told at once and on every change whether sharing is on (`locationctl share`).
    /// - Parameter status: the uplink's state for STATUS (shown to root and the admin group).
    public func addUplink(_ subscription: UplinkSubscription, sink: @escaping UplinkSink, sharing: SharingSink? = nil,
                          status: (@Sendable () -> ServerMessage.Status.Uplink)? = nil) {
        // Read outside the lock: /proc and the user database.
        let identity = ClientIdentity.ofDaemon()
        state.withLock { s in
            s.publisher.addUplink(subscription, identity: identity, sink: sink, sharing: sharing, status: status)
            sharing?(s.publisher.uplinks.sharing.isPaused(at: Moment.now().wall) ? .off(discard: false) : .on)
        }
    }

    /// The sharing switch's group (`share-group`) and state file; the state kept there is put in force.
    public func configureSharing(group: String?, stateFile: String) {
        let kept = readSharingFile(stateFile)
        withState { s, now in
            s.publisher.uplinks.settings = SharingSettings(group: group, path: stateFile)
            s.publisher.uplinks.sharing = kept
            s.armPauseEnd(at: now.wall)
        }
    }
}
