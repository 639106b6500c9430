#if canImport(Glibc)
import Glibc
#endif
import LocationClient
import LocationWire

/// `locationctl agent`: answer the daemon's authorization questions, on the terminal or automatically.
enum AgentCommand {
    static let help = """
        usage: locationctl agent [--answer once|standing|always|deny] [--count N] [--socket PATH]

        Registers with locationd as an agent (root or the daemon's admin-group only): each time a
        program asks for location and the daemon's rule says 'ask', prints who asks — user, uid, pid,
        executable, systemd unit, and the name it declared (display text, not verified) — what it asks
        for (one-time or persistent access, full or reduced accuracy, or temporary full accuracy with
        the purpose text from the configuration, or the usage text the configuration sets for what is
        asked: usage.when-in-use, usage.always), and asks:

          [o]nce, [s]tanding once, [a]lways, [d]eny, [r]educed once, [R]educed always?

        Answers are read from standard input, one line each, so they may be piped in. At a terminal
        an answer belongs to the question on screen: what was typed before it appeared (even a line
        begun before and ended after) or within a second of it appearing is discarded, and said so.
        Piped in, every line answers the next question, in order, as a script wrote them. 'once' allows
        this connection of the program only; 'standing' (allow once, and from now on without asking:
        the LocationButton's standing approval) allows this connection, and each later connection of
        the same user's program that asks for one-time access gets a one-time grant without a
        question, until revoked; 'always' is remembered (also across restarts): as Always when the
        program asked for Always, else as When In Use — while its user has an active login session,
        or, for a program outside every login session (a system service, a program on a box nobody
        logs in to), whenever it runs; 'deny' is remembered too, and the program is not asked about
        again; the reduced answers allow with reduced accuracy. Under each question a few lines say
        what each answer does for that program. A line "ANSWERED ..." reports how each question ended (answered here or by
        another agent, timed out, withdrawn). Unanswered questions are refused after the daemon's
        ask-timeout. Runs until interrupted, until --count answers were given, or until standard
        input ends.

        options:
          --answer A      answer every question with A ('once', 'standing', 'always' or 'deny') without asking
                          (for kiosks and tests); standard input is not read
          --count N       exit after giving N answers
          --socket PATH   the daemon's socket (default: $LOCATIOND_SOCKET, else
                          /run/locationd/locationd.sock)
          -h, --help      show this help

        exit status: 0 after --count answers or at the end of standard input, 64 usage, 69 daemon
        unreachable or gone, 75 timeout, 76 protocol mismatch, 77 not root or in the admin group.

        """

    static let prompt = "[o]nce, [s]tanding once, [a]lways, [d]eny, [r]educed once, [R]educed always? "

    /// What the main loop waits for: the daemon's events and the lines typed.
    private enum Input: Sendable {
        case event(AgentEvent)
        case eventsEnded((any Error)?)
        /// A line and the generation it was typed in (``AgentInput``).
        case line(String, generation: Int)
        case endOfInput
    }

    static func run(_ arguments: [String], socketPath globalSocketPath: String?) async -> ExitCode {
        var automatic: AgentAnswer? = nil
        var count: Int? = nil
        var options = OptionReader(arguments)
        do throws(UsageError) {
            while let option = try options.next() {
                switch option {
                case "-h", "--help":
                    writeStandardOutput(help)
                    return .ok
                case "--answer":
                    switch try options.choice(for: option, from: ["once", "standing", "always", "deny"]) {
                    case "once": automatic = .allowOnce
                    case "standing": automatic = .allowOnceStanding
                    case "always": automatic = .allowAlways
                    default: automatic = .deny
                    }
                case "--count": count = try options.count(for: option)
                default: throw UsageError(message: "unexpected argument '\(option)'")
                }
            }
        } catch {
            return usageFailure("agent", error, help: help)
        }

        let client: LocationClient
        let events: AsyncThrowingStream<AgentEvent, any Error>
        do {
            client = try await LocationClient.connect(socketPath: options.socketPath ?? globalSocketPath)
            events = try await client.registerAgent()
        } catch {
            return clientFailure("agent", error)
        }
        defer { client.close() }
        guard writeStandardOutput("agent registered with locationd; waiting for requests\n") else { return .ioError }

        let (inputs, feed) = AsyncStream.makeStream(of: Input.self)
        let pump = Task {
            do {
                for try await event in events { feed.yield(.event(event)) }
                feed.yield(.eventsEnded(nil))
            } catch {
                feed.yield(.eventsEnded(error))
            }
        }
        defer { pump.cancel() }
        let standardInput = AgentInput()
        if automatic == nil {
            standardInput.start(line: { feed.yield(.line($0, generation: $1)) }, end: { feed.yield(.endOfInput) })
        }

        var pending: [AgentQuestion] = []
        var typed: [String] = []
        var inputEnded = false
        var prompted: Int? = nil
        var given = 0
        var reported: Set<Int> = []
        // A terminal echoes what is typed; piped answers are echoed here so that the output reads the same.
        let echo = !standardInput.isTerminal
        // At a terminal, an answer belongs to the question on screen: what was typed before it appeared —
        // a whole line, or a line begun and ended after it (its start is flushed: AgentInput) — or within
        // a second of it appearing was meant for another (one withdrawn or answered elsewhere meanwhile)
        // and is dropped; else it answered the next question, which nobody had read (a late "a" stored
        // Always for another program; a "d" typed ahead stored a refusal for python3.11, issue 33).
        // Piped answers are kept for the questions to come, in order, as scripts give them.
        var shownAt: ContinuousClock.Instant? = nil
        var shownGeneration = 0
        for await input in inputs {
            switch input {
            case .event(.ask(let question)):
                pending.append(question)
            case .event(.answered(let notice)):
                if reported.remove(notice.id) != nil { break }
                guard writeStandardOutput((prompted == notice.id ? "\n" : "") + describe(notice) + "\n") else { return .ioError }
                pending.removeAll { $0.id == notice.id }
                if prompted == notice.id { prompted = nil }
            case .eventsEnded(let error):
                guard let error else { return .ok }
                return clientFailure("agent", error)
            case .line(let line, let generation):
                if !echo, prompted == nil || generation < shownGeneration || shownAt.map({ .now - $0 < .seconds(1) }) ?? true {
                    var shown = "no request was waiting"
                    if let prompted {
                        shown = generation < shownGeneration ? "typed before request \(prompted) appeared" : "request \(prompted) had just been shown"
                    }
                    guard writeStandardOutput("(\"\(DisplayText.escaped(line))\" ignored: \(shown); read it and answer again)\n") else {
                        return .ioError
                    }
                    if let question = pending.first, prompted == question.id {
                        guard writeStandardOutput(prompt) else { return .ioError }
                    }
                    break
                }
                typed.append(line)
            case .endOfInput:
                inputEnded = true
            }
            // Answer what can be answered now, one question at a time, oldest first.
            while let question = pending.first {
                let answer: AgentAnswer
                var accuracy: AccuracyAuthorization? = nil
                if let automatic {
                    guard writeStandardOutput(describe(question) + "answering \(automatic.rawValue) (--answer)\n") else { return .ioError }
                    answer = automatic
                } else {
                    if prompted != question.id {
                        // Flushed just before the question is written: whatever is typed once it shows is kept.
                        shownGeneration = standardInput.showingQuestion()
                        guard writeStandardOutput(describe(question) + prompt) else { return .ioError }
                        prompted = question.id
                        shownAt = .now
                    }
                    guard !typed.isEmpty else { break }
                    let line = typed.removeFirst()
                    if echo { guard writeStandardOutput(line + "\n") else { return .ioError } }
                    guard let choice = parseChoice(line) else {
                        guard writeStandardOutput("please answer o, s, a, d, r or R\n" + prompt) else { return .ioError }
                        continue
                    }
                    (answer, accuracy) = choice
                    prompted = nil
                }
                pending.removeFirst()
                do {
                    let outcome = try await client.answer(id: question.id, answer: answer, accuracy: accuracy)
                    // Reported here at once (and not again when the agent stream brings it).
                    guard writeStandardOutput(describe(outcome) + "\n") else { return .ioError }
                    reported.insert(outcome.id)
                    if outcome.answer == answer.rawValue { given += 1 }
                } catch let error as LocationClientError {
                    // Too late: the question timed out, was withdrawn, or another agent answered first.
                    guard case let .server(request, message) = error, request == "ANSWER" else {
                        return clientFailure("agent", error)
                    }
                    writeStandardError("locationctl agent: request \(question.id): \(message)\n")
                } catch {
                    return clientFailure("agent", error)
                }
                if let count, given >= count { return .ok }
            }
            if inputEnded && typed.isEmpty {
                if prompted != nil { writeStandardOutput("\n") }
                writeStandardError("locationctl agent: end of standard input; no more answers\n")
                return .ok
            }
        }
        return .ok
    }

    /// An answer typed at the prompt: `o`/`once`, `s`/`standing`, `a`/`always`, `d`/`deny`, `r` (reduced once),
    /// `R` (reduced always); nil for anything else.
    static func parseChoice(_ line: String) -> (AgentAnswer, AccuracyAuthorization?)? {
        switch String(line.trimmingSpaces) {
        case "o", "O", "once": return (.allowOnce, nil)
        case "s", "S", "standing": return (.allowOnceStanding, nil)
        case "a", "A", "always": return (.allowAlways, nil)
        case "d", "D", "deny": return (.deny, nil)
        case "r", "reduced once": return (.allowOnce, .reducedAccuracy)
        case "R", "reduced always": return (.allowAlways, .reducedAccuracy)
        default: return nil
        }
    }

    /// The question for people, several lines, e.g.
    ///
    ///     request 7: one-time access at full accuracy (answer within 30 s)
    ///       program:  /usr/bin/navit, declared name "My Navigator"
    ///       user:     alice (uid 1000), pid 4242
    ///       unit:     navit.service
    ///       identity: verified executable
    static func describe(_ question: AgentQuestion) -> String {
        var what: String
        switch question.request {
        case "once": what = "one-time access"
        case "whenInUse" where question.inUse == "running": what = "When-In-Use access (in use while it runs)"
        case "whenInUse": what = "When-In-Use access (while the user has an active session)"
        case "persistent" where question.upgrade: what = "an upgrade from When In Use to Always (persistent access)"
        case "persistent": what = "Always (persistent access)"
        case "temporaryFullAccuracy": what = "temporary full accuracy"
        default: what = question.request
        }
        if question.request != "temporaryFullAccuracy", let accuracy = question.accuracy {
            what += " at \(accuracy.rawValue) accuracy"
        }
        var text = "request \(question.id): \(what)"
        if let timeout = question.timeout { text += " (answer within \(humanDuration(timeout)))" }
        text += "\n"
        let client = question.client
        // Every string here but the numbers comes from the client or its file names: escaped, so that
        // none can draw lines of its own (DisplayText).
        var program = client.executable.map(DisplayText.escaped) ?? "unknown executable"
        if let name = client.name { program += ", declared name \"\(shortened(DisplayText.escaped(name)))\"" }
        text += "  program:  \(program)\n"
        var user = client.user.map(DisplayText.escaped) ?? "unknown user"
        if let uid = client.uid { user += " (uid \(uid))" }
        if let pid = client.pid { user += ", pid \(pid)" }
        text += "  user:     \(user)\n"
        if let unit = client.unit { text += "  unit:     \(DisplayText.escaped(unit))\n" }
        if let identified = client.identified {
            text += "  identity: \(DisplayText.escaped(identified))\n"
        }
        if let identified = client.identified, identified.hasPrefix("unverified"), question.request != "temporaryFullAccuracy" {
            // The daemon cannot tell which program speaks: a decision is stored for the user alone.
            text += "  note:     the program is not verified: \"always\", \"standing\" or \"deny\" applies to every program of this user\n"
        } else if client.executable == nil, client.unit == nil, question.request != "temporaryFullAccuracy" {
            // A decision is stored for the user and program together; with no program known, for the user.
            text += "  note:     no program is known: \"always\", \"standing\" or \"deny\" applies to every program of this user\n"
        }
        if question.purposeKey != nil {
            text += "  purpose:  " + (question.purposeKey.map { "\($0): " } ?? "") + (question.purpose ?? "") + "\n"
        } else if let usage = question.purpose {
            // The administrator's usage text for the access asked (usage.when-in-use, usage.always).
            text += "  usage:    " + DisplayText.escaped(usage) + "\n"
        }
        return text + answers(question)
    }

    /// What each answer does to `question`, in plain words, for the block under the question (issue 33: an
    /// `[a]lways` that stored When In Use, which then delivered nothing on a box with no login session):
    ///
    ///       o  this connection only
    ///       a  remembered: whenever it runs (When In Use; it runs outside every login session)
    static func answers(_ question: AgentQuestion) -> String {
        var lines: [(String, String)]
        if question.request == "temporaryFullAccuracy" {
            lines = [("o s a", "full accuracy for this connection"), ("d r R", "it stays at reduced accuracy")]
        } else if question.upgrade {
            lines = [("a", "remembered: Always, at any time"), ("R", "the same at reduced accuracy"),
                     ("o s d r", "it keeps When In Use as it is")]
        } else {
            let user = question.client.user.map(DisplayText.escaped) ?? question.client.uid.map { "uid \($0)" } ?? "its user"
            let remembered: String
            switch (question.remembers ?? (question.request == "persistent" ? "persistent" : "whenInUse"), question.inUse) {
            case ("persistent", _): remembered = "Always, at any time"
            case (_, "running"): remembered = "whenever it runs (When In Use; it runs outside every login session)"
            default: remembered = "while \(user) has an active login session (When In Use)"
            }
            lines = [("o", "this connection only"),
                     ("s", "this connection, and its later one-time requests without asking"),
                     ("a", "remembered: " + remembered), ("d", "refused, and remembered: not asked again"),
                     ("r R", "as o and a, at reduced accuracy")]
        }
        return lines.map { keys, words in "    " + keys + String(repeating: " ", count: max(1, 8 - keys.count)) + words + "\n" }.joined()
    }

    /// A client's declared name on one line of its own: runs of spaces made one, at most 80 characters —
    /// padded to the width of a terminal, a name wrapped onto a line of its own that read like the
    /// administrator's usage text (found by a helper attacking the agent).
    static func shortened(_ name: String) -> String {
        let words = name.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        return words.count > 80 ? String(words.prefix(79)) + "…" : words
    }

    /// `ANSWERED 7: allow once by root (uid 0)`, `ANSWERED 7: timeout (nobody answered in time)`.
    static func describe(_ notice: AnsweredNotice) -> String {
        var text = "ANSWERED \(notice.id): \(PlainWords.word(notice.answer ?? "?"))"
        switch notice.answer {
        case "timeout": text += " (nobody answered in time; the program was refused)"
        case "withdrawn": text += " (the program went away)"
        default: if let by = notice.by { text += " by \(by)" }
        }
        return text
    }
}
