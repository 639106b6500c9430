/// What an uplink holds under its lock (`MQTTUplink.state`): the reports waiting for the broker's
/// acknowledgement, oldest first, and the link's state.
extension MQTTUplink {
    /// One report held until the broker acknowledges it.
    struct Entry {
        var sequence: UInt64
        var payload: [UInt8]
        /// In the spool file (synced): only then may libmosquitto have it.
        var durable: Bool
        /// The message id libmosquitto gave it; nil while it waits for the link.
        var mid: Int32?
    }

    struct State {
        /// Reports held until acknowledged, oldest first: at most `spool-max`.
        var pending: [Entry] = []
        /// Reports of `pending` handed to libmosquitto (`mid` set).
        var inFlight = 0
        /// Sequence numbers acknowledged or dropped whose removal the spool file does not say yet.
        var removed: [UInt64] = []
        var nextSequence: UInt64 = 1
        var connected = false
        /// Why the link is down, as last logged; nil while connected or never tried.
        var problem: String?
        /// Reports dropped because the spool was full, since start.
        var dropped = 0
        /// Reports the broker acknowledged, since start.
        var sent = 0
        /// When a full spool was last logged: at most once a minute, with the count since.
        var lastDropLog: ContinuousClock.Instant?
        var droppedSinceLog = 0
        var pumpScheduled = false
        /// The last spool error logged (each error once until the spool works again).
        var spoolError: String?
        var stopped = false
        /// The sharing switch (`locationctl share`): off → the status topic says `paused`.
        var sharing = true
    }
}
