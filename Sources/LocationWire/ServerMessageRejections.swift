extension ServerMessage.Status {
    /// Fixes of a receiver that a plausibility rule kept from being published (docs/RECEIVERS.md "Bad
    /// receivers"), protocol 1.5: an element of a receiver's `rejected` (`rule` and `count`), or its
    /// `lastRejection` (`rule` and `reason`).
    public struct Rejection: Hashable, Sendable {
        /// The rule: `check-date`, `null-island`, `time-backwards`, `impossible-jump` (text: rules a newer
        /// daemon adds still show) (`rule`).
        public var rule: String
        /// Fixes it rejected since the daemon started (`count`), in `rejected`.
        public var count: Int?
        /// Why, for people, e.g. `fix dated 2020-07-11 rejected: check-date; set check-date = no for captures`
        /// (`reason`), in `lastRejection`.
        public var reason: String?

        /// - Parameters: as the properties.
        public init(rule: String, count: Int? = nil, reason: String? = nil) {
            self.rule = rule
            self.count = count
            self.reason = reason
        }

        func writeMembers(to w: inout JSONObjectWriter) {
            w.field("rule", rule)
            w.field("count", count)
            w.field("reason", reason)
        }

        init(_ r: MemberReader) throws(ServerMessageError) {
            self.init(rule: try r.string("rule") ?? "?", count: try r.integer("count"), reason: try r.string("reason"))
        }
    }
}

extension MemberReader {
    /// A receiver's `rejected`: nil when absent (none, or not shown to this client).
    func rejections() throws(ServerMessageError) -> [ServerMessage.Status.Rejection]? {
        guard members.present("rejected") != nil else { return nil }
        return try objects("rejected").map { r throws(ServerMessageError) in try ServerMessage.Status.Rejection(r) }
    }
}
