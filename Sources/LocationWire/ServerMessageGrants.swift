import LocationCore

extension ServerMessage {
    /// `GRANTS`: the reply to `GRANTS`, `GRANT` and `REVOKE`; `LocationClient` hands it out as
    /// `GrantList`, its entries as they are here.
    public struct Grants: Hashable, Sendable {
        /// A stored decision (`persistent[]`).
        public struct Stored: Hashable, Sendable {
            /// Whom it is about (`executable` or `unit`, with `user` when for that user's program only,
            /// or `user` alone); nil when the entry names none.
            public var subject: GrantTarget?
            /// True for a grant, false for a remembered refusal (`allowed`).
            public var allowed: Bool?
            /// The accuracy granted (`accuracy`).
            public var accuracy: AccuracyAuthorization?
            /// When it was made, UTC (`created`).
            public var created: UTCTime?
            /// When it expires, UTC; nil: never (`expires`).
            public var expires: UTCTime?
            /// Who decided, e.g. `"agent root (uid 0)"`, `"administrator root (uid 0)"` (`decidedBy`).
            public var decidedBy: String?
            /// True for a When-In-Use grant; false for Always (`whenInUse`, protocol 1.4; absent: false).
            public var whenInUse: Bool
            /// For When In Use: true when it also applies to the subject's clients outside every login session
            /// while they run (`whileRunning`, protocol 1.6; absent: false — they follow the user's session).
            public var whileRunning: Bool
            /// What the grant gives under the rules in force when a rule changes it — caps its accuracy, or denies
            /// the subject access (`effective`, protocol 1.6; absent: it applies as stored).
            public var effective: Effective?

            /// Makes the value; each parameter is the property of the same name (units there).
            public init(subject: GrantTarget?, allowed: Bool?, accuracy: AccuracyAuthorization? = nil,
                        created: UTCTime? = nil, expires: UTCTime? = nil, decidedBy: String? = nil, whenInUse: Bool = false,
                        whileRunning: Bool = false, effective: Effective? = nil) {
                self.whenInUse = whenInUse
                self.whileRunning = whileRunning
                self.effective = effective
                self.subject = subject
                self.allowed = allowed
                self.accuracy = accuracy
                self.created = created
                self.expires = expires
                self.decidedBy = decidedBy
            }

            func writeMembers(to w: inout JSONObjectWriter) {
                subject?.write(to: &w)
                if let allowed { w.field("allowed", allowed) }
                w.field("accuracy", accuracy?.rawValue)
                w.field("created", created)
                w.field("expires", expires)
                w.field("decidedBy", decidedBy)
                if whenInUse { w.field("whenInUse", true) }
                if whileRunning { w.field("whileRunning", true) }
                effective?.write(to: &w)
            }
        }

        /// A pre-approved one-time grant: the next connection of the subject asking for one-time access
        /// gets it without an agent — or, for a standing approval, every such connection (`preapproved[]`).
        public struct Preapproved: Hashable, Sendable {
            /// Whom it is about (the subject members, as `Stored.subject`).
            public var subject: GrantTarget?
            /// The accuracy it grants (`accuracy`).
            public var accuracy: AccuracyAuthorization?
            /// When it was made, UTC (`created`).
            public var created: UTCTime?
            /// When it lapses unused, UTC; nil: never (`expires`).
            public var expires: UTCTime?
            /// True for a standing approval: not used up, it grants each later connection until revoked
            /// (`standing`, protocol 1.3; absent: false).
            public var standing: Bool
            /// Who made a standing approval, e.g. `"agent root (uid 0)"` (`decidedBy`; absent for a single
            /// pre-approval).
            public var decidedBy: String?

            /// Makes the value; each parameter is the property of the same name (units there).
            public init(subject: GrantTarget?, accuracy: AccuracyAuthorization? = nil, created: UTCTime? = nil,
                        expires: UTCTime? = nil, standing: Bool = false, decidedBy: String? = nil) {
                self.subject = subject
                self.accuracy = accuracy
                self.created = created
                self.expires = expires
                self.standing = standing
                self.decidedBy = decidedBy
            }

            func writeMembers(to w: inout JSONObjectWriter) {
                subject?.write(to: &w)
                w.field("accuracy", accuracy?.rawValue)
                w.field("created", created)
                w.field("expires", expires)
                if standing { w.field("standing", true) }
                w.field("decidedBy", decidedBy)
            }
        }

        /// A live one-time grant of a connected client (`once[]`).
        public struct OneTime: Hashable, Sendable {
            /// Process id (`pid`).
            public var pid: Int?
            /// User id (`uid`).
            public var uid: Int?
            /// Executable (`exe`).
            public var executable: String?
            /// systemd unit (`unit`).
            public var unit: String?
            /// The accuracy it gets now (`accuracy`).
            public var accuracy: AccuracyAuthorization?
            /// When it was granted, UTC (`granted`).
            public var granted: UTCTime?
            /// When it ends at the latest (the daemon's `once-lifetime`), UTC (`expires`).
            public var expires: UTCTime?
            /// How the client was identified (`identified`; `ClientDescription.identified`).
            public var identified: String?

            /// Makes the value; each parameter is the property of the same name (units there).
            public init(pid: Int? = nil, uid: Int? = nil, executable: String? = nil, unit: String? = nil,
                        accuracy: AccuracyAuthorization? = nil, granted: UTCTime? = nil, expires: UTCTime? = nil,
                        identified: String? = nil) {
                self.identified = identified
                self.pid = pid
                self.uid = uid
                self.executable = executable
                self.unit = unit
                self.accuracy = accuracy
                self.granted = granted
                self.expires = expires
            }

            func writeMembers(to w: inout JSONObjectWriter) {
                w.field("pid", pid)
                w.field("uid", uid)
                w.field("exe", executable)
                w.field("unit", unit)
                w.field("accuracy", accuracy?.rawValue)
                w.field("granted", granted)
                w.field("expires", expires)
                w.field("identified", identified)
            }
        }

        /// What a `GRANT` will give the subject's clients under the daemon's rules (`effective`).
        public struct Effective: Hashable, Sendable {
            /// The accuracy that applies: the lesser of the grant's and the rule's ceiling; nil when a
            /// rule denies the subject access, so the grant does not apply (`accuracy`).
            public var accuracy: AccuracyAuthorization?
            /// Why, when it is not the accuracy granted, e.g. `"the [policy] default allows no more than
            /// reduced accuracy"`; nil when the grant applies as made (`reason`).
            public var reason: String?

            /// Makes the value; each parameter is the property of the same name (units there).
            public init(accuracy: AccuracyAuthorization?, reason: String? = nil) {
                self.accuracy = accuracy
                self.reason = reason
            }

            /// Writes the `effective` member: in the reply to `GRANT`, and on a stored grant in `GRANTS`.
            func write(to w: inout JSONObjectWriter) {
                w.beginObject("effective")
                w.field("accuracy", accuracy?.rawValue)
                w.field("reason", reason)
                w.endObject()
            }
        }

        /// A configured uplink (`[uplink NAME]`, a fleet's MQTT broker) and what the policy lets it publish
        /// (`uplinks[]`; absent when the daemon has none).
        public struct Uplink: Hashable, Sendable {
            /// The section's NAME (`name`).
            public var name: String
            /// `mqtt://host:port` or `mqtts://host:port` (`broker`).
            public var broker: String
            /// Where reports go (`topic`).
            public var topic: String
            /// `owntracks` or `tpv` (`format`).
            public var format: String
            /// The accuracy it gets: the section's `accuracy` capped by the rule that applies to it; nil when
            /// that rule denies it access, so it publishes nothing (`accuracy`).
            public var accuracy: AccuracyAuthorization?
            /// The accuracy the section asks for (`requested`).
            public var requested: AccuracyAuthorization
            /// False while the sharing switch is off (`locationctl share off`): nothing is published (`sharing`).
            public var sharing: Bool
            /// Why it gets what it gets, e.g. `"[policy] default allows no more than reduced accuracy"` (`reason`).
            public var reason: String?

            /// Makes the value; each parameter is the property of the same name.
            public init(name: String, broker: String, topic: String, format: String, accuracy: AccuracyAuthorization?,
                        requested: AccuracyAuthorization, sharing: Bool, reason: String? = nil) {
                self.name = name
                self.broker = broker
                self.topic = topic
                self.format = format
                self.accuracy = accuracy
                self.requested = requested
                self.sharing = sharing
                self.reason = reason
            }

            func writeMembers(to w: inout JSONObjectWriter) {
                w.field("name", name)
                w.field("broker", broker)
                w.field("topic", topic)
                w.field("format", format)
                w.field("accuracy", accuracy?.rawValue)
                w.field("requested", requested.rawValue)
                w.field("sharing", sharing)
                w.field("reason", reason)
            }
        }

        /// Stored decisions, in the daemon's order (`persistent`).
        public var persistent: [Stored]
        /// Pre-approved one-time grants (`preapproved`).
        public var preapproved: [Preapproved]
        /// Live one-time grants (`once`).
        public var once: [OneTime]
        /// In the reply to `GRANT` only: what the grant will give (`effective`).
        public var effective: Effective?
        /// In the reply to `REVOKE` only: how many grants it removed — stored decisions, pre-approvals
        /// and live one-time grants; 0 when the subject had none (`revoked`).
        public var revoked: Int?
        /// The configured uplinks, in config order (`uplinks`; absent when there are none).
        public var uplinks: [Uplink]

        /// Makes the value; each parameter is the property of the same name (units there).
        public init(persistent: [Stored] = [], preapproved: [Preapproved] = [], once: [OneTime] = [],
                    effective: Effective? = nil, revoked: Int? = nil, uplinks: [Uplink] = []) {
            self.uplinks = uplinks
            self.persistent = persistent
            self.preapproved = preapproved
            self.once = once
            self.effective = effective
            self.revoked = revoked
        }

        func writeMembers(to w: inout JSONObjectWriter) {
            w.objects("persistent", persistent) { $0.writeMembers(to: &$1) }
            w.objects("preapproved", preapproved) { $0.writeMembers(to: &$1) }
            w.objects("once", once) { $0.writeMembers(to: &$1) }
            effective?.write(to: &w)
            w.field("revoked", revoked)
            if !uplinks.isEmpty { w.objects("uplinks", uplinks) { $0.writeMembers(to: &$1) } }
        }
    }
}
