import LocationWire

/// The protocol's names as locationctl says them to people in its tables and messages: "allowed once" for
/// `authorizedOnce`, "always" for `authorizedPersistent`, "not determined" for `notDetermined` (issue 33: the
/// wire names read as code). `--json` output keeps the wire names, which scripts match.
enum PlainWords {
    /// Every wire name locationctl may print, in plain words.
    static let words: [String: String] = [
        // AuthorizationStatus (Core Location's CLAuthorizationStatus).
        "notDetermined": "not determined",
        "authorizedOnce": "allowed once",
        "authorizedPersistent": "always",
        "authorizedWhenInUse": "when in use",
        // AuthorizationKind, as requests and grants name it.
        "persistent": "always",
        "whenInUse": "when in use",
        "temporaryFullAccuracy": "temporary full accuracy",
        // AnswerChoice, an agent's answer.
        "allowOnce": "allow once",
        "allowOnceStanding": "allow once, standing",
        "allowAlways": "allow always",
    ]

    /// `name` in plain words; unchanged when it is not a wire name (denied, restricted, full, reduced, deny
    /// already are).
    static func word(_ name: String) -> String { words[name] ?? name }

    /// A status in plain words: "allowed once", "always", "not determined".
    static func status(_ status: AuthorizationStatus) -> String { word(status.rawValue) }

    /// A sentence of the daemon's (an audit reason: "agent root (uid 0) answered allowOnce") with the wire names
    /// of its words in plain words. Only the names written in camelCase: a plain word such as "persistent" is
    /// left as the sentence uses it.
    static func names(in sentence: String) -> String {
        sentence.split(separator: " ", omittingEmptySubsequences: false).map { token in
            let word = token.prefix { $0.isLetter }
            guard word.contains(where: \.isUppercase), let plain = words[String(word)] else { return String(token) }
            return plain + token.dropFirst(word.count)
        }.joined(separator: " ")
    }
}
