import LocationCore

/// One gpsd client's side of the protocol as a value: what it asked to watch, and the answer to each read it
/// sends, as gpsd 3.22 answers (gpsd.c `handle_request()`). No sockets and no policy: the front feeds it each read
/// and writes the answer; whether the client may see positions is the Publisher's decision.
public struct GpsdConversation: Sendable {
    /// The client's watch settings (the `WATCH` echo).
    public private(set) var policy = GpsdWatchPolicy()

    public init() {}

    /// A conversation whose watch settings are `policy` from the start, without a `?WATCH` (an NMEA socket's
    /// client: watching, NMEA only, from connect).
    public init(watching policy: GpsdWatchPolicy) {
        self.policy = policy
    }

    /// What one read from the client produced.
    public struct Reply: Hashable, Sendable {
        /// The bytes to send back, in order (CR LF-terminated objects); empty when gpsd would say nothing.
        public var bytes: [UInt8] = []
        /// True when this read turned watching on (`enable` went from false to true): the front starts
        /// delivering, and may ask the policy or an agent about this client now.
        public var startedWatching = false
        /// True when this read turned watching off.
        public var stoppedWatching = false
        /// The `?POLL;` requests in this read, in order: the front answers each with `GpsdResponses.appendPoll`
        /// at the position `pollOffsets` gives (the byte offset in `bytes` where that answer belongs).
        public var pollOffsets: [Int] = []
    }

    /// The answer to one read (`input`) from the client.
    /// - Parameters:
    ///   - input: the bytes the client sent in one read.
    ///   - devices: the receivers, as `DEVICES` lists them.
    /// - Returns: the bytes to send and what changed; `?POLL;` answers are left to the caller (`Reply.pollOffsets`),
    ///   since they need the latest reports the client may see.
    public mutating func receive(_ input: [UInt8], devices: [GpsdDevice]) -> Reply {
        var reply = Reply()
        let wasWatching = policy.enable
        for request in GpsdRequestParser.parse(input) {
            switch request {
            case .version:
                GpsdResponses.appendVersion(to: &reply.bytes)
            case .devices:
                GpsdResponses.appendDevices(devices, to: &reply.bytes)
            case .device(let settings):
                if let path = settings?.path, !devices.contains(where: { $0.path == path }) {
                    GpsdResponses.appendCannotOpen(path, to: &reply.bytes)
                } else {
                    // Read-only: settings are not applied; gpsd answers with the device as it is.
                    let path = settings?.path
                    for d in devices where path == nil || d.path == path { GpsdResponses.appendDevice(d, to: &reply.bytes) }
                }
            case .watch(let change):
                if let change {
                    if let path = change.device, !path.isEmpty, !devices.contains(where: { $0.path == path }) {
                        GpsdResponses.appendNoSuchDevice(path, to: &reply.bytes)
                        continue
                    }
                    policy = policy.applying(change)
                }
                GpsdResponses.appendDevices(devices, to: &reply.bytes)
                GpsdResponses.appendWatch(policy, to: &reply.bytes)
            case .poll:
                reply.pollOffsets.append(reply.bytes.count)
            case .invalid(let command, let reason):
                GpsdResponses.appendInvalid(command: command, reason: reason, to: &reply.bytes)
                if command == "WATCH" {
                    GpsdResponses.appendDevices(devices, to: &reply.bytes)
                    GpsdResponses.appendWatch(policy, to: &reply.bytes)
                }
            case .unrecognized(let text):
                GpsdResponses.appendUnrecognized(text, to: &reply.bytes)
            }
        }
        reply.startedWatching = !wasWatching && policy.enable
        reply.stoppedWatching = wasWatching && !policy.enable
        return reply
    }
}
