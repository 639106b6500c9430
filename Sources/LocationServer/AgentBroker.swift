import LocationCore
import LocationPolicy
import LocationWire

/// A question waiting for an agent's answer, and the clients waiting on it.
struct PendingAsk: Sendable {
    let id: Int
    /// Whom the answer is about: the user and program, as an agent's decision is stored.
    let subject: GrantSubject
    let question: AgentQuestion
    /// The request that asked: "AUTHORIZE" or "FULLACCURACY".
    let request: String
    /// The connections waiting: the one that asked, then others of the same user and program that
    /// asked the same while it waited. The answer applies to each.
    var clients: [Int]
    /// When it was asked (the monotonic clock).
    var askedAt: ContinuousClock.Instant
}

/// The agents (`locationctl agent`, run by root or the admin group) and the questions waiting for them:
/// who is registered, what is pending, and the ASK / ANSWERED messages. A value; the server's state owns
/// it and schedules the timeouts.
///
/// Bounds, so that no user can flood the agents or knock them off (issue 12): at most one question per
/// user and program waits at a time (the same question again joins it; another is refused until it is
/// answered), and each user may open `questionsPerMinute` questions a minute.
struct AgentBroker: Sendable {
    /// Registered agents' connection ids, in the order they registered.
    private(set) var agents: [Int] = []
    private var asks: [Int: PendingAsk] = [:]
    /// The waiting question of each user and program.
    private var bySubject: [GrantSubject: Int] = [:]
    /// Questions opened per user in the current minute.
    private var opened: [UInt32: (start: ContinuousClock.Instant, count: Int)] = [:]
    private var nextAsk = 1

    /// Questions one user may open per minute.
    static let questionsPerMinute = 6

    /// What `open` did.
    enum Opening: Sendable {
        /// A new question, to show the agents.
        case opened(PendingAsk)
        /// The same question from the same user and program was waiting: the client waits on it too.
        case joined(Int)
        /// Another question from the same user and program is waiting.
        case busy
        /// The user opened `questionsPerMinute` questions in the last minute.
        case tooMany
    }

    var hasAgents: Bool { !agents.isEmpty }

    func isAgent(_ id: Int) -> Bool { agents.contains(id) }

    /// Registers connection `id` as an agent.
    mutating func register(_ id: Int) {
        if !agents.contains(id) { agents.append(id) }
    }

    /// A connection closed: it is no longer an agent, and it waits on no question; questions nobody
    /// waits on any more are withdrawn (returned).
    mutating func remove(_ id: Int) -> [PendingAsk] {
        agents.removeAll { $0 == id }
        var withdrawn: [PendingAsk] = []
        for askID in asks.keys.sorted() {
            guard var ask = asks[askID], ask.clients.contains(id) else { continue }
            ask.clients.removeAll { $0 == id }
            if ask.clients.isEmpty {
                asks.removeValue(forKey: askID)
                bySubject.removeValue(forKey: ask.subject)
                withdrawn.append(ask)
            } else {
                asks[askID] = ask
            }
        }
        return withdrawn
    }

    /// Opens a question for the agents about `identity`, asked by connection `client` — or joins the
    /// same one already waiting, or refuses (see `Opening`).
    mutating func open(client: Int, identity: ClientIdentity, question: AgentQuestion, request: String,
                       now: ContinuousClock.Instant) -> Opening {
        let subject = GrantSubject.decision(for: identity)
        if let waiting = bySubject[subject], var ask = asks[waiting] {
            guard ask.question == question, ask.request == request else { return .busy }
            if !ask.clients.contains(client) { ask.clients.append(client) }
            asks[waiting] = ask
            return .joined(waiting)
        }
        var rate = opened[identity.uid] ?? (start: now, count: 0)
        if now - rate.start >= .seconds(60) { rate = (start: now, count: 0) }
        guard rate.count < Self.questionsPerMinute else { return .tooMany }
        rate.count += 1
        if opened.count >= 4096 { opened = opened.filter { now - $0.value.start < .seconds(60) } }
        opened[identity.uid] = rate
        let ask = PendingAsk(id: nextAsk, subject: subject, question: question, request: request, clients: [client], askedAt: now)
        nextAsk += 1
        asks[ask.id] = ask
        bySubject[subject] = ask.id
        return .opened(ask)
    }

    /// The questions asked `timeout` or longer before `now`, oldest first.
    func overdue(now: ContinuousClock.Instant, timeout: Duration) -> [Int] {
        asks.values.filter { now - $0.askedAt >= timeout }.map(\.id).sorted()
    }

    /// Takes question `id` out (answered or timed out); nil when it is no longer waiting.
    mutating func take(_ id: Int) -> PendingAsk? {
        guard let ask = asks.removeValue(forKey: id) else { return nil }
        bySubject.removeValue(forKey: ask.subject)
        return ask
    }

    /// The ASK message for the agents (docs/PROTOCOL.md "ASK").
    /// - Parameters:
    ///   - timeout: seconds the agents have to answer.
    static func askMessage(_ ask: PendingAsk, identity: ClientIdentity, name: String?, timeout: Double) -> [UInt8] {
        let client = ClientDescription(pid: Int(identity.pid), uid: Int(identity.uid), user: identity.user,
                                       executable: AuditText.bounded(identity.program),
                                       unit: AuditText.bounded(identity.unit ?? identity.userUnit),
                                       name: AuditText.bounded(name, bytes: DisplayText.maximumNameBytes),
                                       identified: AuditText.bounded(Optional(identity.strength.description)))
        var request: String, purposeKey: String? = nil
        switch ask.question.subject {
        case .authorization(let kind): request = kind.rawValue
        case .temporaryFullAccuracy(let key):
            request = "temporaryFullAccuracy"
            purposeKey = key
        }
        return ServerMessage.ask(ServerMessage.Ask(id: ask.id, client: client, request: request, purposeKey: purposeKey,
                                                   accuracy: ask.question.accuracy, purpose: ask.question.purpose,
                                                   timeout: timeout, upgrade: ask.question.upgrade,
                                                   remembers: ask.question.remembers?.rawValue,
                                                   inUse: ask.question.inUseWhileRunning ? "running" : "activeSession")).encoded()
    }

    /// The ANSWERED message: question `id` was answered (`answer`, by whom), withdrawn or timed out.
    static func answered(_ id: Int, _ answer: String, by: String) -> [UInt8] {
        ServerMessage.answered(ServerMessage.Answered(id: id, answer: answer, by: by)).encoded()
    }
}
