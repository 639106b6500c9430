import LocationPosix

/// Why a `LocationClient` call failed. Every case that concerns the socket names it or the request.
public enum LocationClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// socket(2)/connect(2) to the daemon's socket failed: `errno` is `noSuchFileOrDirectory` when no
    /// daemon has created the socket, `connectionRefused` when the socket file is stale (daemon not
    /// running), `permissionDenied` when the socket's mode shuts this user out.
    case cannotConnect(path: String, errno: Errno)
    /// The server's `VERSION` greeting names a protocol major version this library does not speak
    /// (docs/PROTOCOL.md "On connect: VERSION": an incompatible change).
    case protocolMismatch(serverMajor: Int, supportedMajor: Int)
    /// The server answered a request with an `ERROR` object: `request` is the request's class
    /// (`"WATCH"`, `"POLL"`, `"STATUS"`, or `"?"` when the server could not tell), `message` its reason,
    /// e.g. `"no fix within 10 s"`.
    case server(request: String, message: String)
    /// The daemon answered a reduced client's `POLL` without a report: at once, when its next report (one
    /// per the daemon's `reduced-interval`) is not due within the call's timeout, or, when it was due, after
    /// 2.5 s without a fix (then `meansNoFixInTime` is true). `nextReportIn` is the seconds until the next
    /// report is due (`ERROR.nextReportIn`), `message` the daemon's words, e.g. `"reduced accuracy: the next
    /// report is due in 12 min 3 s"` or `"no fix yet; at reduced accuracy the next report is due in 15 min 0 s"`
    /// (docs/PROTOCOL.md "POLL").
    case paced(request: String, message: String, nextReportIn: Double)
    /// No reply came within the allowed time (the call's timeout plus a grace period), or a request
    /// could not be written within the send timeout.
    case timedOut
    /// The connection ended (the daemon stopped or closed it, or the client was closed) before the
    /// reply came.
    case disconnected
    /// The server sent something this library cannot read: not JSON, a line over the size cap, a
    /// greeting other than `VERSION`, a reply missing a required member. The text says what.
    case invalidReply(String)

    /// True when the error means "no fix arrived in time": `.timedOut`, the daemon's `POLL` error
    /// `"no fix within N s"`, or, at reduced accuracy, `"no fix yet; at reduced accuracy the next report is
    /// due in …"` (a `.paced` one; docs/PROTOCOL.md "POLL"). `locationctl get` exits 75 for these.
    public var meansNoFixInTime: Bool {
        switch self {
        case .timedOut: return true
        case let .server(request, message), let .paced(request, message, _): return request == "POLL" && message.hasPrefix("no fix")
        default: return false
        }
    }

    /// True when the daemon refused because of its permission policy: a `WATCH` or `POLL` without
    /// authorization (`"not authorized ..."`; docs/PROTOCOL.md "Authorization"), or an agent's or
    /// administrator's request from a user who is neither root nor in the daemon's `admin-group`
    /// (`"permission denied: ..."`). `locationctl` exits 77 (EX_NOPERM) for these.
    public var meansNotAuthorized: Bool {
        guard case let .server(_, message) = self else { return false }
        return message.hasPrefix("not authorized") || message.hasPrefix("permission denied")
    }

    /// The class of the request an `ERROR` answered (`.server`, `.paced`); nil for other errors.
    var serverRequest: String? {
        switch self {
        case let .server(request, _), let .paced(request, _, _): return request
        default: return nil
        }
    }

    /// The error in words, for people: names the socket path or the refused request.
    public var description: String {
        switch self {
        case let .cannotConnect(path, errno):
            return "cannot connect to \(path): \(errno)"
        case let .protocolMismatch(server, supported):
            return "the daemon speaks protocol version \(server), this client version \(supported)"
        case let .server(request, message):
            return request == "?" ? "locationd: \(message)" : "the daemon refused \(request): \(message)"
        case let .paced(_, message, _):
            return message
        case .timedOut:
            return "timed out waiting for the daemon"
        case .disconnected:
            return "the daemon closed the connection"
        case let .invalidReply(what):
            return "unreadable reply from the daemon: \(what)"
        }
    }
}
