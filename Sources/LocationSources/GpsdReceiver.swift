import LocationCore

/// Placeholder until the libgps receiver lands: reports itself unavailable.
public final class GpsdReceiver: Receiver, @unchecked Sendable {
    public let name: String
    public let priority: Int
    private let core: ReceiverCore

    public init(_ configuration: ReceiverConfiguration) {
        name = configuration.name
        priority = configuration.priority
        core = ReceiverCore(configuration: configuration, type: "gpsd", path: "")
    }

    public var status: ReceiverStatus { core.status }

    public func start(_ handler: @escaping @Sendable (ReceiverEvent) -> Void) {
        core.queue.async {
            self.core.setHandler(handler)
            self.core.setState(.unavailable(reason: "gpsd receiver not built yet"))
        }
    }

    public func stop() {}
}
