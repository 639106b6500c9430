import Dispatch
import LocationPosix

/// The listening socket's source, and what to do when accept(2) fails: out of descriptors (EMFILE,
/// ENFILE) or memory, the connection stays in the backlog and the socket stays readable, so accepting
/// again at once would spin. The source is suspended for a back-off that doubles from 50 ms to 1 s
/// while failures go on, and the failures are logged at most once per 10 s, with their count.
struct AcceptThrottle {
    var source: (any DispatchSourceRead)?
    private var suspended = false
    private var backoff: Duration = .milliseconds(50)
    private var failuresSinceLog = 0
    private var lastLog: ContinuousClock.Instant?

    static let shortestBackoff: Duration = .milliseconds(50)
    static let longestBackoff: Duration = .seconds(1)
    static let logInterval: Duration = .seconds(10)

    /// accept(2) failed with `error`: suspends accepting; returns how long to wait before resuming, and
    /// whether to log now (with the number of failures since the last log line).
    mutating func failed(at now: ContinuousClock.Instant) -> (resumeAfter: Duration?, log: Int?) {
        failuresSinceLog += 1
        var toLog: Int?
        if lastLog.map({ now - $0 >= Self.logInterval }) ?? true {
            toLog = failuresSinceLog
            failuresSinceLog = 0
            lastLog = now
        }
        guard !suspended, let source else { return (nil, toLog) }
        source.suspend()
        suspended = true
        let delay = backoff
        backoff = min(backoff * 2, Self.longestBackoff)
        return (delay, toLog)
    }

    /// A connection was accepted: the back-off starts from the shortest again.
    mutating func succeeded() {
        backoff = Self.shortestBackoff
    }

    /// The back-off is over: accept again.
    mutating func resume() {
        guard suspended else { return }
        suspended = false
        source?.resume()
    }

    /// Stops accepting for good.
    mutating func cancel() {
        if suspended { resume() }
        source?.cancel()
        source = nil
    }
}
