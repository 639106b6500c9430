import LocationCore

extension ServerMessage {
    /// `TPV`: a location report, gpsd_json(5)'s TPV plus `heading` and `accuracy` (docs/PROTOCOL.md
    /// "TPV"). Encoded with gpsd's precisions, as `GPSDEncoder.appendTPV` writes a fix (the daemon's
    /// fast path, the stream); a value made from a fix with `init(_:accuracy:)` encodes to the same bytes
    /// (the daemon's `POLL` reply is made so).
    public struct TPV: Equatable, Sendable {
        /// The receiver it came from (`device`).
        public var device: String?
        /// 1 no fix, 2 2D, 3 3D (`mode`; gpsd's 0, "not seen yet", reads as no fix).
        public var mode: FixMode
        /// gpsd's fix status: 2 DGPS, 3 RTK fixed, 4 RTK float, 5 dead reckoning, 7 manual, 8 simulated
        /// (`status`; absent for plain GNSS).
        public var status: Int?
        /// Fix time, UTC (`time`).
        public var time: UTCTime?
        /// Degrees WGS84, north positive (`lat`).
        public var latitude: Double?
        /// Degrees WGS84, east positive (`lon`).
        public var longitude: Double?
        /// Metres above the WGS84 ellipsoid (`altHAE`).
        public var altitudeHAE: Double?
        /// Metres above mean sea level (`altMSL`).
        public var altitudeMSL: Double?
        /// `altHAE − altMSL`, metres (`geoidSep`).
        public var geoidSeparation: Double?
        /// Speed over ground, m/s (`speed`).
        public var speed: Double?
        /// Course over ground, degrees true (`track`).
        public var track: Double?
        /// Magnetic variation, degrees, east positive (`magvar`).
        public var magneticVariation: Double?
        /// Vertical speed, m/s, up positive (`climb`).
        public var climb: Double?
        /// Estimated horizontal error, metres, about 95 % (`eph`).
        public var eph: Double?
        /// Estimated longitude error, metres (`epx`).
        public var epx: Double?
        /// Estimated latitude error, metres (`epy`).
        public var epy: Double?
        /// Estimated vertical error, metres (`epv`).
        public var epv: Double?
        /// Where the vehicle points, degrees true (`heading`, from HDT/THS).
        public var heading: Double?
        /// How precisely the policy let this client see it (`accuracy`); nil outside the daemon.
        public var accuracy: AccuracyAuthorization?

        /// Makes the value; each parameter is the property of the same name (units there).
        public init(device: String? = nil, mode: FixMode = .noFix, status: Int? = nil, time: UTCTime? = nil,
                    latitude: Double? = nil, longitude: Double? = nil, altitudeHAE: Double? = nil,
                    altitudeMSL: Double? = nil, geoidSeparation: Double? = nil, speed: Double? = nil,
                    track: Double? = nil, magneticVariation: Double? = nil, climb: Double? = nil, eph: Double? = nil,
                    epx: Double? = nil, epy: Double? = nil, epv: Double? = nil, heading: Double? = nil,
                    accuracy: AccuracyAuthorization? = nil) {
            self.device = device
            self.mode = mode
            self.status = status
            self.time = time
            self.latitude = latitude
            self.longitude = longitude
            self.altitudeHAE = altitudeHAE
            self.altitudeMSL = altitudeMSL
            self.geoidSeparation = geoidSeparation
            self.speed = speed
            self.track = track
            self.magneticVariation = magneticVariation
            self.climb = climb
            self.eph = eph
            self.epx = epx
            self.epy = epy
            self.epv = epv
            self.heading = heading
            self.accuracy = accuracy
        }

        /// The TPV the daemon sends for `fix`: position members only with a 2D/3D position, `status`
        /// only when not plain GNSS, `time` only with a date (as `GPSDEncoder.appendTPV`).
        public init(_ fix: Fix, accuracy: AccuracyAuthorization? = nil) {
            let position = fix.hasPosition
            self.init(device: fix.device, mode: fix.mode,
                      status: fix.quality.flatMap { position && $0.gpsdStatus != 1 ? $0.gpsdStatus : nil },
                      time: fix.time.flatMap { $0.date == nil ? nil : $0 })
            if position {
                latitude = fix.latitude
                longitude = fix.longitude
                altitudeHAE = fix.altitudeHAE
                altitudeMSL = fix.altitudeMSL
                geoidSeparation = fix.geoidSeparation
                speed = fix.speed
                track = fix.track
                magneticVariation = fix.magneticVariation
                climb = fix.climb
                eph = fix.eph
                epx = fix.epx
                epy = fix.epy
                epv = fix.epv
            }
            heading = fix.heading
            self.accuracy = accuracy
        }

        /// Writes the whole object and its newline.
        func write(to w: inout JSONObjectWriter) {
            w.begin()
            writeMembers(to: &w)
            w.end()
        }

        /// Writes `"class":"TPV"` and the members, with gpsd's precisions (lat/lon 9 decimals, metres 3–4).
        func writeMembers(to w: inout JSONObjectWriter) {
            w.field("class", constant: "TPV")
            w.field("device", device)
            w.field("mode", mode.rawValue)
            w.field("status", status)
            if let time, time.date != nil { w.timeField(time) }
            w.field("lat", latitude, decimals: 9)
            w.field("lon", longitude, decimals: 9)
            w.field("altHAE", altitudeHAE, decimals: 4)
            w.field("altMSL", altitudeMSL, decimals: 4)
            w.field("geoidSep", geoidSeparation, decimals: 3)
            w.field("speed", speed, decimals: 4)
            w.field("track", track, decimals: 4)
            w.field("magvar", magneticVariation, decimals: 2)
            w.field("climb", climb, decimals: 4)
            w.field("eph", eph, decimals: 3)
            w.field("epx", epx, decimals: 3)
            w.field("epy", epy, decimals: 3)
            w.field("epv", epv, decimals: 3)
            w.field("heading", heading, decimals: 4)
            w.field("accuracy", accuracy?.rawValue)
        }
    }

    /// `STATUS` reply: the fix mode this client may know, clients, receivers. `LocationClient` hands it
    /// out as `DaemonStatus`, the daemon builds its receivers as `ReceiverReport`s: one definition.
    public struct Status: Hashable, Sendable {
        /// One configured receiver (`receivers[]`). The daemon always sends `name`, `type`, `state` and
        /// the counts; a line without one reads as `"?"` (texts) or 0 (counts), so that the receiver
        /// still shows.
        public struct Receiver: Hashable, Sendable {
            /// Config section name, e.g. `gnss0` (`name`).
            public var name: String
            /// `serial`, `gpsd` or `replay` (`type`).
            public var type: String
            /// Device path (serial), `host:port` (gpsd) or file (replay); nil when not given (`path`).
            public var path: String?
            /// For a gpsd receiver, the device its fixes come from as gpsd names it (e.g. `/dev/ttyACM0`), once
            /// gpsd has said; nil otherwise (`device`).
            public var device: String?
            /// `starting`, `connected`, `unavailable` or `stopped` (`state`; text, so that states a newer
            /// daemon adds still show); nil for a client without full accuracy (a receiver becoming
            /// unavailable would tell it the fix was lost sooner than its paced reports).
            public var state: String?
            /// Why it is unavailable, when it is (`reason`).
            public var reason: String?
            /// Serial line speed, bit/s (`speed`).
            public var speed: Int?
            /// When it connected, UTC (`connectedSince`).
            public var connectedSince: UTCTime?
            /// NMEA sentences read since the daemon started (`sentences`); nil as `state` (the count moves once
            /// an epoch, by that epoch's sentences: the cadence, and satellites in view from the GSV count).
            public var sentences: Int?
            /// Fixes since the daemon started; nil for a client that may not see fix timing (only clients
            /// with full accuracy, and admins, do) (`fixes`).
            public var fixes: Int?
            /// Errors (bad checksums, garbled lines, read failures) since the daemon started (`errors`); nil
            /// as `state`.
            public var errors: Int?
            /// Time of its last fix, UTC; nil when there was none, or as `fixes` (`lastFixTime`).
            public var lastFixTime: UTCTime?
            /// Failover priority: higher wins while it has a fix (`priority`).
            public var priority: Int
            /// Fixes a plausibility rule kept from being published since the daemon started, by rule, each
            /// with its `count` (`rejected`, protocol 1.5); nil when there were none, or as `errors`.
            public var rejected: [Rejection]?
            /// The last of them, its `rule` and `reason` (`lastRejection`, protocol 1.5); nil as `rejected`.
            public var lastRejection: Rejection?

            /// Makes the value; each parameter is the property of the same name (units there); counts
            /// default to 0.
            public init(name: String, type: String, path: String? = nil, state: String?, reason: String? = nil,
                        speed: Int? = nil, connectedSince: UTCTime? = nil, sentences: Int? = 0, fixes: Int? = 0,
                        errors: Int? = 0, lastFixTime: UTCTime? = nil, priority: Int = 0, device: String? = nil,
                        rejected: [Rejection]? = nil, lastRejection: Rejection? = nil) {
                self.name = name
                self.type = type
                self.path = path
                self.device = device
                self.state = state
                self.reason = reason
                self.speed = speed
                self.connectedSince = connectedSince
                self.sentences = sentences
                self.fixes = fixes
                self.errors = errors
                self.lastFixTime = lastFixTime
                self.priority = priority
                self.rejected = rejected
                self.lastRejection = lastRejection
            }

            func writeMembers(to w: inout JSONObjectWriter) {
                w.field("name", name)
                w.field("type", type)
                w.field("path", path)
                w.field("device", device)
                w.field("state", state)
                w.field("reason", reason)
                w.field("speed", speed)
                w.field("connectedSince", connectedSince)
                w.field("sentences", sentences)
                w.field("fixes", fixes)
                w.field("errors", errors)
                if let t = lastFixTime, t.date != nil { w.field("lastFixTime", t) }
                w.field("priority", priority)
                if let rejected, !rejected.isEmpty { w.objects("rejected", rejected) { $0.writeMembers(to: &$1) } }
                if let lastRejection {
                    w.beginObject("lastRejection")
                    lastRejection.writeMembers(to: &w)
                    w.endObject()
                }
            }
        }

        /// Current fix mode; at most 2D for reduced accuracy, nil for a client that may not see the
        /// location (`mode`).
        public var mode: FixMode?
        /// Connected clients, the asking one included (`clients`; always sent, absent reads as 0): all of them for
        /// root and the admin group, the asking user's own for anyone else.
        public var clients: Int
        /// The configured receivers, in the daemon's order (`receivers`; absent reads as none).
        public var receivers: [Receiver]
        /// The fleet uplinks (MQTT brokers), shown to root and the admin group only (`uplinks`; absent
        /// reads as none).
        public var uplinks: [Uplink]
        /// The asking client as the daemon identified it (`you`, protocol 1.5): pid, uid, user, program and how it
        /// was identified (`ClientDescription.identified`).
        public var you: ClientDescription?

        /// Makes the value; each parameter is the property of the same name (units there).
        public init(mode: FixMode?, clients: Int, receivers: [Receiver], uplinks: [Uplink] = [], you: ClientDescription? = nil) {
            self.you = you
            self.mode = mode
            self.clients = clients
            self.receivers = receivers
            self.uplinks = uplinks
        }

        func writeMembers(to w: inout JSONObjectWriter) {
            if let mode { w.field("mode", mode.rawValue) }
            w.field("clients", clients)
            w.objects("receivers", receivers) { $0.writeMembers(to: &$1) }
            if !uplinks.isEmpty { w.objects("uplinks", uplinks) { $0.writeMembers(to: &$1) } }
            you?.write("you", to: &w)
        }

        /// One fleet uplink (an `uplinks[]` element; locationd.conf(5) "[uplink NAME]").
        public struct Uplink: Hashable, Sendable {
            /// Config section name (`name`).
            public var name: String
            /// `mqtt://host:port` or `mqtts://host:port` (`broker`).
            public var broker: String
            /// The topic reports go to (`topic`).
            public var topic: String
            /// `full` or `reduced` (`accuracy`).
            public var accuracy: String
            /// `connected`, `disconnected` or `paused` (sharing off) (`state`; text, so that states a newer
            /// daemon adds still show).
            public var state: String
            /// Why it is not connected, when it is not (`reason`).
            public var reason: String?
            /// Reports waiting for the broker's acknowledgement (`spooled`).
            public var spooled: Int
            /// Reports the broker acknowledged since the daemon started (`sent`).
            public var sent: Int
            /// Reports dropped from a full spool since the daemon started (`dropped`).
            public var dropped: Int

            /// Makes the value; each parameter is the property of the same name.
            public init(name: String, broker: String, topic: String, accuracy: String, state: String, reason: String? = nil,
                        spooled: Int = 0, sent: Int = 0, dropped: Int = 0) {
                self.name = name
                self.broker = broker
                self.topic = topic
                self.accuracy = accuracy
                self.state = state
                self.reason = reason
                self.spooled = spooled
                self.sent = sent
                self.dropped = dropped
            }

            func writeMembers(to w: inout JSONObjectWriter) {
                w.field("name", name)
                w.field("broker", broker)
                w.field("topic", topic)
                w.field("accuracy", accuracy)
                w.field("state", state)
                w.field("reason", reason)
                w.field("spooled", spooled)
                w.field("sent", sent)
                w.field("dropped", dropped)
            }
        }
    }

    /// `ASK`: a pending authorization request, sent to every agent.
    public struct Ask: Hashable, Sendable {
        /// The question's id, for `ANSWER` (`id`).
        public var id: Int
        /// The client asking (`client`).
        public var client: ClientDescription?
        /// `once`, `whenInUse`, `persistent` (Always) or `temporaryFullAccuracy` (`request`; text, so that
        /// requests a newer daemon adds still read).
        public var request: String?
        /// For temporary full accuracy: the purpose key cited (`purposeKey`).
        public var purposeKey: String?
        /// The accuracy that would be granted, already capped by the client's rule (`accuracy`).
        public var accuracy: AccuracyAuthorization?
        /// The administrator's text from the config (`purpose`): for temporary full accuracy the purpose
        /// key's; for `once` or `persistent` the client's rule's usage text (`usage.when-in-use`,
        /// `usage.always`), absent when the rule sets none. Never text the client sent.
        public var purpose: String?
        /// Seconds the daemon waits for an answer (`timeout`).
        public var timeout: Double?
        /// True when a client authorized When In Use asks for Always (`upgrade`, protocol 1.4; absent:
        /// false): refusing leaves its When-In-Use grant.
        public var upgrade: Bool
        /// What "allow always" stores (`remembers`, protocol 1.6): `whenInUse` or `persistent` (Always); absent
        /// for temporary full accuracy, which stores nothing.
        public var remembers: String?
        /// What "in use" means for this client, for When In Use (`inUse`, protocol 1.6): `activeSession` (while
        /// its user has an active login session) or `running` (it runs outside every login session — a system
        /// service, a headless box's program — and is in use while it runs).
        public var inUse: String?

        /// Makes the value; each parameter is the property of the same name (units there).
        public init(id: Int, client: ClientDescription?, request: String?, purposeKey: String? = nil,
                    accuracy: AccuracyAuthorization? = nil, purpose: String? = nil, timeout: Double? = nil, upgrade: Bool = false,
                    remembers: String? = nil, inUse: String? = nil) {
            self.upgrade = upgrade
            self.remembers = remembers
            self.inUse = inUse
            self.id = id
            self.client = client
            self.request = request
            self.purposeKey = purposeKey
            self.accuracy = accuracy
            self.purpose = purpose
            self.timeout = timeout
        }

        func writeMembers(to w: inout JSONObjectWriter) {
            w.field("id", id)
            client?.write("client", to: &w)
            w.field("request", request)
            w.field("purposeKey", purposeKey)
            w.field("accuracy", accuracy?.rawValue)
            w.field("purpose", purpose)
            w.field("timeout", timeout)
            if upgrade { w.field("upgrade", true) }
            w.field("remembers", remembers)
            w.field("inUse", inUse)
        }
    }
}
