import LocationCore

/// One message the server sends (docs/PROTOCOL.md "On connect", "Server messages", "Authorization",
/// "Agents and administrators"), as a value: `encoded()` writes its line, `decode(_:)`
/// (ServerMessageDecoding.swift) reads one. The daemon and `LocationClient` share these definitions.
///
/// Members the protocol lets the server leave out are optionals (absent means "not known", never zero);
/// the few without which a message means nothing are not (`VERSION.proto_major`, `STATE.fix`,
/// `AUTHORIZATION.status`, `ASK.id`, `ANSWERED.id`). Encoding leaves nil members out and writes the
/// rest in the order of the protocol page.
public enum ServerMessage: Equatable, Sendable {
    /// `VERSION`, the greeting.
    case version(Version)
    /// `ERROR`: a request failed.
    case error(Failure)
    /// The `WATCH` acknowledgement.
    case watch(Watch)
    /// `STATE`: the fix was lost or came back.
    case state(State)
    /// The `POLL` reply.
    case poll(Poll)
    /// `TPV`: a location report.
    case tpv(TPV)
    /// `SKY`: satellites and DOPs, to full-accuracy watchers that asked for them.
    case sky(Sky)
    /// The `STATUS` reply.
    case status(Status)
    /// `AUTHORIZATION`: the client's status (a reply, or unasked on a change).
    case authorization(Authorization)
    /// `{"class":"AGENT"}`: the connection is now an agent.
    case agent
    /// `ASK`: a question for the agents.
    case ask(Ask)
    /// `ANSWERED`: how a question ended.
    case answered(Answered)
    /// `GRANTS`: the reply to `GRANTS`, `GRANT` and `REVOKE`.
    case grants(Grants)
    /// The `AUDIT` reply.
    case audit(Audit)

    /// The message's `class`, e.g. `"TPV"`.
    public var className: String {
        switch self {
        case .version: return "VERSION"
        case .error: return "ERROR"
        case .watch: return "WATCH"
        case .state: return "STATE"
        case .poll: return "POLL"
        case .tpv: return "TPV"
        case .sky: return "SKY"
        case .status: return "STATUS"
        case .authorization: return "AUTHORIZATION"
        case .agent: return "AGENT"
        case .ask: return "ASK"
        case .answered: return "ANSWERED"
        case .grants: return "GRANTS"
        case .audit: return "AUDIT"
        }
    }

    /// `VERSION`, sent on connect.
    public struct Version: Equatable, Sendable {
        /// locationd's version, e.g. `"0.1.0"` (`release`).
        public var release: String?
        /// Incompatible protocol changes bump this (`proto_major`; `ProtocolVersion.major`).
        public var protocolMajor: Int
        /// Compatible additions bump this (`proto_minor`).
        public var protocolMinor: Int?

        /// Makes the value; each parameter is the property of the same name (units there).
        public init(release: String?, protocolMajor: Int = ProtocolVersion.major,
                    protocolMinor: Int? = ProtocolVersion.minor) {
            self.release = release
            self.protocolMajor = protocolMajor
            self.protocolMinor = protocolMinor
        }
    }

    /// `ERROR`: a request failed.
    public struct Failure: Equatable, Sendable {
        /// The request's class, or `"?"` when it could not be read (`request`).
        public var request: String?
        /// What went wrong, e.g. `"no fix within 10 s"` (`message`).
        public var message: String?
        /// Seconds until a reduced-accuracy client's next report is due, whole, rounded up: present only
        /// on the ERROR answering a `POLL` that its pacing would not let through within the timeout
        /// (`nextReportIn`; docs/PROTOCOL.md "POLL").
        public var nextReportIn: Double?

        /// Makes the value; each parameter is the property of the same name (units there).
        public init(request: String?, message: String?, nextReportIn: Double? = nil) {
            self.request = request
            self.message = message
            self.nextReportIn = nextReportIn
        }
    }

    /// The `WATCH` acknowledgement: the effective subscription.
    public struct Watch: Equatable, Sendable {
        /// Subscribed (`enable`).
        public var enable: Bool?
        /// At most one TPV per this many seconds (`minInterval`).
        public var minInterval: Double?
        /// Metres a position must move from the last delivered one (`distanceFilter`).
        public var distanceFilter: Double?
        /// A `SKY` follows each full-accuracy `TPV` (`satellites`; absent: false).
        public var satellites: Bool?

        /// Makes the value; each parameter is the property of the same name (units there).
        public init(enable: Bool?, minInterval: Double?, distanceFilter: Double?, satellites: Bool? = nil) {
            self.enable = enable
            self.minInterval = minInterval
            self.distanceFilter = distanceFilter
            self.satellites = satellites
        }
    }

    /// `STATE`: the fix was lost (with the reason) or came back; or, with `waiting`, why an authorized
    /// watcher gets no location for now and until when (docs/PROTOCOL.md "STATE").
    public struct State: Equatable, Sendable {
        /// True when there is a fix again (`fix`). With `waiting`: only what the client's messages last told
        /// it (true after a report; false before any, or after a no-fix notice) — never news of the fix.
        public var fix: Bool
        /// Why there is none, e.g. `"no receiver has a fix"`, or why nothing comes (`reason`).
        public var reason: String?
        /// Present when the client is authorized and watching but gets no location for now for another cause
        /// than a lost fix, in Core Location's words (`CLLocationUpdate`): `accuracyLimited` (reduced
        /// accuracy, between two paced reports) or `insufficientlyInUse` (When In Use while its user has no
        /// active login session); a newer daemon may add causes (`waiting`; protocol 1.6).
        public var waiting: String?
        /// Seconds until a reduced-accuracy client's next report is due, whole, rounded up, counted from this
        /// message — the figure a `POLL`'s `ERROR` gives (`nextReportIn`; protocol 1.6).
        public var nextReportIn: Double?

        /// Makes the value; each parameter is the property of the same name (units there).
        public init(fix: Bool, reason: String? = nil, waiting: String? = nil, nextReportIn: Double? = nil) {
            self.fix = fix
            self.reason = reason
            self.waiting = waiting
            self.nextReportIn = nextReportIn
        }

        /// `waiting`: reduced accuracy, between paced reports (Core Location's `accuracyLimited`).
        public static let accuracyLimited = "accuracyLimited"
        /// `waiting`: When In Use while the user has no active login session (Core Location's `insufficientlyInUse`).
        public static let insufficientlyInUse = "insufficientlyInUse"
    }

    /// `POLL` reply: the first fix after the request, in a one-element `tpv` array
    /// (`{"class":"POLL","tpv":[{"class":"TPV",…}]}`, docs/PROTOCOL.md "POLL").
    public struct Poll: Equatable, Sendable {
        /// The fixes (`tpv`), each encoded as a `TPV` line is; the server sends one.
        public var tpv: [TPV]

        /// Makes the value; each parameter is the property of the same name (units there).
        public init(tpv: [TPV]) { self.tpv = tpv }
    }

    /// `AUTHORIZATION`: the client's status, its accuracy authorization and why.
    public struct Authorization: Hashable, Sendable {
        /// The status (`status`).
        public var status: AuthorizationStatus
        /// How precisely it may see locations; present when authorized (`accuracy`).
        public var accuracy: AccuracyAuthorization?
        /// Why, in words (`reason`).
        public var reason: String?
        /// True when the status is a one-time grant that a standing approval gave, without asking
        /// (`standing`, protocol 1.3; absent otherwise, read as false).
        public var standing: Bool
        /// False for a When-In-Use client while its user has no active login session: it is sent nothing
        /// until this turns true again (`inUse`, protocol 1.4; written only when false, absent reads true).
        public var inUse: Bool

        /// Makes the value; each parameter is the property of the same name (units there).
        public init(status: AuthorizationStatus, accuracy: AccuracyAuthorization? = nil, reason: String? = nil,
                    standing: Bool = false, inUse: Bool = true) {
            self.status = status
            self.accuracy = accuracy
            self.reason = reason
            self.standing = standing
            self.inUse = inUse
        }
    }

    /// `ANSWERED`: how a question ended, told to every agent.
    public struct Answered: Hashable, Sendable {
        /// The question's id (`id`).
        public var id: Int
        /// `allowOnce`, `allowOnceStanding`, `allowAlways`, `deny`, `timeout` or `withdrawn` (`answer`; text, so that
        /// outcomes a newer daemon adds still read).
        public var answer: String?
        /// Who answered, e.g. `"root (uid 0)"`, `"nobody"` on a timeout (`by`).
        public var by: String?

        /// Makes the value; each parameter is the property of the same name (units there).
        public init(id: Int, answer: String?, by: String? = nil) {
            self.id = id
            self.answer = answer
            self.by = by
        }
    }

    /// `AUDIT` reply: one page of the audit events, oldest first (`events`), and where the next page
    /// starts (`next`, absent on the last page; protocol 1.2).
    public struct Audit: Equatable, Sendable {
        /// The events, oldest first.
        public var events: [AuditRecord]
        /// The cursor for the next page (send it as the request's `cursor`); nil when this page is the last.
        public var next: String?

        /// Makes the value; each parameter is the property of the same name (units there).
        public init(events: [AuditRecord], next: String? = nil) {
            self.events = events
            self.next = next
        }
    }
}

/// Who a client is, as the daemon saw it: the kernel's answer (pid, uid, executable, systemd unit),
/// plus the display name the client declared, which is never used to decide (`ASK.client`, an audit
/// event's `client`).
public struct ClientDescription: Hashable, Sendable {
    /// Process id (`pid`).
    public var pid: Int?
    /// User id (`uid`).
    public var uid: Int?
    /// User name (`user`).
    public var user: String?
    /// Executable path from `/proc/PID/exe` (`exe`).
    public var executable: String?
    /// systemd unit (`unit`).
    public var unit: String?
    /// The name declared in `AUTHORIZE`, display text only, not verified (`name`).
    public var name: String?
    /// How the daemon identified it (`identified`, protocol 1.5): `system unit`, `verified executable`,
    /// `sandboxed app` or `unverified (REASON)`; for an unverified client `exe` is only what the kernel
    /// names, and rules and approvals apply to its user as a whole.
    public var identified: String?

    /// Makes a description; every value is optional, as on the wire.
    public init(pid: Int? = nil, uid: Int? = nil, user: String? = nil, executable: String? = nil,
                unit: String? = nil, name: String? = nil, identified: String? = nil) {
        self.identified = identified
        self.pid = pid
        self.uid = uid
        self.user = user
        self.executable = executable
        self.unit = unit
        self.name = name
    }

    func write(_ name: StaticString, to w: inout JSONObjectWriter) {
        w.beginObject(name)
        w.field("pid", pid)
        w.field("uid", uid)
        w.field("user", user)
        w.field("exe", executable)
        w.field("unit", unit)
        w.field("name", self.name)
        w.field("identified", identified)
        w.endObject()
    }
}

/// One audit event (`AUDIT.events[]`; the daemon's audit file holds the same objects, one a line).
public struct AuditRecord: Hashable, Sendable {
    /// When, Unix seconds (`unix`).
    public var unixTime: Double?
    /// When, UTC (`time`).
    public var time: UTCTime?
    /// `decision`, `delivery`, `grant` or `revoke` (`event`).
    public var event: String?
    /// The client concerned; for `grant` and `revoke` the administrator (`client`).
    public var client: ClientDescription?
    /// The request, e.g. `"AUTHORIZE"` or `"REVOKE executable /usr/bin/navit"` (`request`).
    public var request: String?
    /// The resulting status, an `AuthorizationStatus` raw value (`status`; text, as the file keeps it).
    public var status: String?
    /// The accuracy granted or delivered (`accuracy`).
    public var accuracy: AccuracyAuthorization?
    /// Why (`reason`).
    public var reason: String?

    /// Makes the value; each parameter is the property of the same name (units there).
    public init(unixTime: Double? = nil, time: UTCTime? = nil, event: String?, client: ClientDescription? = nil,
                request: String? = nil, status: String? = nil, accuracy: AccuracyAuthorization? = nil,
                reason: String? = nil) {
        self.unixTime = unixTime
        self.time = time
        self.event = event
        self.client = client
        self.request = request
        self.status = status
        self.accuracy = accuracy
        self.reason = reason
    }

    /// The event as one JSON object, without a newline: a line of the daemon's audit files (`audit.jsonl`,
    /// `audit-uid-N.jsonl`) and an element of `AUDIT.events` (docs/PROTOCOL.md "AUDIT"). Members in the
    /// protocol page's order — `unix` (Unix seconds, shortest text that reads back), `time` (ISO 8601 UTC,
    /// milliseconds), `event`, `client`, `request`, `status`, `accuracy`, `reason` — nil ones left out.
    /// `init(decoding:)` reads it back.
    public func encoded() -> [UInt8] {
        var w = JSONObjectWriter(reservingCapacity: 256)
        w.begin()
        writeMembers(to: &w)
        w.end(newline: false)
        var out: [UInt8] = []
        w.append(to: &out)
        return out
    }

    /// Writes the event's members into the current object.
    func writeMembers(to w: inout JSONObjectWriter) {
        w.field("unix", unixTime)
        w.field("time", time)
        w.field("event", event)
        client?.write("client", to: &w)
        w.field("request", request)
        w.field("status", status)
        w.field("accuracy", accuracy?.rawValue)
        w.field("reason", reason)
    }
}

extension ServerMessage {
    /// The message as one line, newline included.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        append(to: &out)
        return out
    }

    /// Appends the message's line (newline included) to `out`.
    public func append(to out: inout [UInt8]) {
        var w = JSONObjectWriter(reservingCapacity: 256)
        if case .tpv(let tpv) = self {
            tpv.write(to: &w)
            w.append(to: &out)
            return
        }
        if case .sky(let sky) = self {
            sky.append(to: &out)
            return
        }
        w.begin()
        w.field("class", className)
        switch self {
        case .version(let v):
            w.field("release", v.release)
            w.field("proto_major", v.protocolMajor)
            w.field("proto_minor", v.protocolMinor)
        case .error(let e):
            w.field("request", e.request)
            w.field("message", e.message)
            w.field("nextReportIn", e.nextReportIn)
        case .watch(let watch):
            if let enable = watch.enable { w.field("enable", enable) }
            w.field("minInterval", watch.minInterval)
            w.field("distanceFilter", watch.distanceFilter)
            if watch.satellites == true { w.field("satellites", true) }
        case .state(let s):
            w.field("fix", s.fix)
            w.field("reason", s.reason)
            w.field("waiting", s.waiting)
            w.field("nextReportIn", s.nextReportIn)
        case .poll(let poll):
            w.objects("tpv", poll.tpv) { $0.writeMembers(to: &$1) }
        case .tpv, .sky, .agent:
            break
        case .status(let s):
            s.writeMembers(to: &w)
        case .authorization(let a):
            w.field("status", a.status.rawValue)
            w.field("accuracy", a.accuracy?.rawValue)
            w.field("reason", a.reason)
            if a.standing { w.field("standing", true) }
            if !a.inUse { w.field("inUse", false) }
        case .ask(let ask):
            ask.writeMembers(to: &w)
        case .answered(let a):
            w.field("id", a.id)
            w.field("answer", a.answer)
            w.field("by", a.by)
        case .grants(let g):
            g.writeMembers(to: &w)
        case .audit(let audit):
            w.objects("events", audit.events) { $0.writeMembers(to: &$1) }
            w.field("next", audit.next)
        }
        w.end()
        w.append(to: &out)
    }
}
