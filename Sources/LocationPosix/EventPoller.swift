#if canImport(Glibc)
import Glibc
#endif
import CPosixShims

/// One epoll(7) set and the thread that waits on it: level-triggered readiness of many descriptors, each
/// registered with a tag, handed to `handler` on that thread a batch at a time.
///
/// For client sockets, whose watch for room to write comes and goes with each backed-up write: registering
/// or unregistering is one epoll_ctl(2), done when the call returns. A dispatch source per descriptor
/// instead registers and unregisters asynchronously in libdispatch's epoll bookkeeping, and churning them
/// by the thousand crashed the daemon there ("Source finalized twice", `Scripts/soak`, docs/ROBUSTNESS.md).
/// Closing a registered descriptor removes it from the set (epoll(7): no other descriptor refers to the
/// socket); events already taken for it carry its tag, which the handler no longer knows.
public final class EventPoller: Sendable {
    /// A descriptor's readiness.
    public struct Event: Sendable {
        /// The tag it was registered with.
        public let tag: UInt64
        /// Input, end of file, a hang-up or an error: a read says which.
        public let readable: Bool
        /// Room to write (only while watched: `watchWritable`).
        public let writable: Bool
    }

    private let epoll: Int32
    private let wake: Int32
    /// The tag of `wake`, which no caller may use.
    private static let stopTag = UInt64.max
    private static let input = UInt32(EPOLLIN.rawValue) | UInt32(EPOLLRDHUP.rawValue)
    private static let output = UInt32(EPOLLOUT.rawValue)

    /// Creates the set and starts its thread.
    /// - Parameters:
    ///   - interval: how often to call `tick`, on the poller's thread between batches, counted from the
    ///     previous call (`ContinuousClock`); nil: never. A periodic chore on a thread that is there anyway:
    ///     a libdispatch timer wakes its manager thread and a worker, which the pool made anew when its
    ///     last one had idled out (clone(2), page faults, exit).
    ///   - tick: the chore; the next wait starts when it returns.
    ///   - handler: called on the poller's thread with each batch of events (at most 64), in the
    ///     kernel's order; the next wait starts when it returns.
    /// - Throws: the errno of epoll_create1(2), eventfd(2) or pthread_create(3).
    public init(tickEvery interval: Duration? = nil, tick: @escaping @Sendable () -> Void = {},
                handler: @escaping @Sendable ([Event]) -> Void) throws(Errno) {
        let epoll = locationd_epoll_create()
        guard epoll >= 0 else { throw Errno.current }
        let wake = locationd_eventfd()
        guard wake >= 0 else {
            let error = Errno.current
            Glibc.close(epoll)
            throw error
        }
        guard locationd_epoll_control(epoll, EPOLL_CTL_ADD, wake, Self.input, Self.stopTag) == 0 else {
            let error = Errno.current
            Glibc.close(epoll)
            Glibc.close(wake)
            throw error
        }
        self.epoll = epoll
        self.wake = wake
        // The thread holds the poller until `stop`: its descriptors stay open (and their numbers taken)
        // while anyone may still call `add` or `remove` on them.
        try PosixThread.detach { [self] in run(handler, tickEvery: interval, tick) }
    }

    deinit {
        Glibc.close(epoll)
        Glibc.close(wake)
    }

    /// Watches `fd` for input, its events tagged `tag`.
    /// - Throws: epoll_ctl(2)'s errno (`ENOMEM`, `ENOSPC`: the user's epoll watch limit).
    public func add(_ fd: Int32, tag: UInt64) throws(Errno) {
        precondition(tag != Self.stopTag)
        guard locationd_epoll_control(epoll, EPOLL_CTL_ADD, fd, Self.input, tag) == 0 else { throw Errno.current }
    }

    /// Watches `fd` (added with `tag`) for room to write as well as input, or for input only again.
    /// - Throws: epoll_ctl(2)'s errno.
    public func watchWritable(_ fd: Int32, tag: UInt64, _ watch: Bool) throws(Errno) {
        let events = watch ? Self.input | Self.output : Self.input
        guard locationd_epoll_control(epoll, EPOLL_CTL_MOD, fd, events, tag) == 0 else { throw Errno.current }
    }

    /// Stops watching `fd` (nothing when it is not watched). Closing it does as much.
    public func remove(_ fd: Int32) {
        _ = locationd_epoll_control(epoll, EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// Ends the thread after the batch it is handling; no handler call starts after that.
    public func stop() {
        var one: UInt64 = 1
        _ = Glibc.write(wake, &one, MemoryLayout<UInt64>.size)
    }

    private func run(_ handler: @Sendable ([Event]) -> Void, tickEvery interval: Duration?, _ tick: @Sendable () -> Void) {
        var tags = [UInt64](repeating: 0, count: 64)
        var bits = [UInt32](repeating: 0, count: 64)
        var batch: [Event] = []
        batch.reserveCapacity(64)
        let hangUp = UInt32(EPOLLHUP.rawValue) | UInt32(EPOLLERR.rawValue)
        let clock = ContinuousClock()
        var nextTick = interval.map { clock.now + $0 }
        while true {
            let n = locationd_epoll_wait(epoll, &tags, &bits, 64, nextTick.map { Self.milliseconds(until: $0, clock) } ?? -1)
            if n < 0, errno != EINTR { return }
            if n > 0 {
                batch.removeAll(keepingCapacity: true)
                for i in 0..<Int(n) {
                    if tags[i] == Self.stopTag { return }
                    batch.append(Event(tag: tags[i], readable: bits[i] & (Self.input | hangUp) != 0, writable: bits[i] & Self.output != 0))
                }
                handler(batch)
            }
            if let due = nextTick, let interval, clock.now >= due {
                tick()
                nextTick = clock.now + interval
            }
        }
    }

    /// epoll_wait(2)'s timeout to `deadline`: whole milliseconds, rounded up (a wait rounded down would
    /// end early and spin until the deadline), 0 when it passed.
    private static func milliseconds(until deadline: ContinuousClock.Instant, _ clock: ContinuousClock) -> Int32 {
        let left = clock.now.duration(to: deadline)
        guard left > .zero else { return 0 }
        let (seconds, attoseconds) = left.components
        let ms = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: ms)
    }
}
