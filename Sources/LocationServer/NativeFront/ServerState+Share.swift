#if canImport(Glibc)
import Glibc
#endif
import LocationCore
import LocationPolicy
import LocationPosix
import LocationWire

/// The sharing switch of the uplinks (issue 17): the person on board pauses what leaves the machine.
/// While paused, no uplink is handed a report, so none is spooled to be sent later, and the uplinks send
/// nothing of what their spools held from before (issue 32); `discard` drops that.
public struct SharingState: Sendable, Equatable {
    /// Unix seconds until which sharing is off; `.infinity`: until switched on; nil: sharing.
    public var pausedUntil: Double?

    public init(pausedUntil: Double? = nil) { self.pausedUntil = pausedUntil }

    /// Whether sharing is off at `wall` (Unix seconds).
    public func isPaused(at wall: Double) -> Bool { pausedUntil.map { wall < $0 } ?? false }

    /// The state file's text: absent (sharing), `off`, or `off-until SECONDS`.
    var fileText: String? {
        guard let until = pausedUntil else { return nil }
        return until.isInfinite ? "off\n" : "off-until \(Int(until.rounded(.up)))\n"
    }

    /// Reads the state file's text; anything unreadable counts as paused (fail closed: nothing leaves).
    init(fileText text: String) {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        if words.count == 2, words[0] == "off-until", let until = Double(words[1]) { pausedUntil = until } else { pausedUntil = .infinity }
    }
}

/// Where the sharing switch is kept and who may turn it.
struct SharingSettings {
    /// `share-group`: besides root and the admin group, its members may turn the switch.
    var group: String?
    /// The state file (`STATE/sharing`); nil: not kept (tests).
    var path: String?
}

extension ServerState {
    /// SHARE: the sharing switch. Root, the admin group and the `share-group` may turn it or ask; others
    /// get an ERROR. A change takes effect before the next fix, is audited and logged, and kept in the
    /// state file so that it survives a restart. While off, the uplinks hold their spools (`discard`: drop them).
    mutating func share(_ id: Int, sharing: Bool?, forSeconds: Double?, discard: Bool = false, at now: Moment) {
        guard let identity = connections[id]?.identity else { return }
        let inGroup = publisher.uplinks.settings.group.map { identity.groups.contains($0) } ?? false
        guard publisher.policy.isAdmin(identity) || inGroup else {
            send(id, ServerMessage.error(request: "SHARE", message: "permission denied: root, the admin group or the share-group only"))
            return
        }
        guard let sharing else { return send(id, shareReply(at: now.wall)) }
        let state = SharingState(pausedUntil: sharing ? nil : forSeconds.map { now.wall + $0 } ?? .infinity)
        setSharing(state, discard: discard, reply: id, at: now.wall)
        var what = sharing ? "sharing on" : forSeconds.map { "sharing off for \(DurationText.minutesAndSeconds(Int($0.rounded(.up))))" } ?? "sharing off"
        if discard { what += ", spooled reports discarded" }
        context.store.record(AuditEvent(event: "share", identity: identity, name: nil, request: "SHARE", status: sharing ? "on" : "off",
                                        accuracy: nil, reason: what + " (\(publisher.uplinks.entries.count) uplinks)"), at: now.wall)
        context.log.notice(what, ["client.uid": String(identity.uid), "client.pid": String(identity.pid),
                                  "until": state.pausedUntil.map { $0.isInfinite ? "switched on" : UTCTime(unixSeconds: $0).iso8601 } ?? "-"])
    }

    /// Puts `state` in force, tells the uplinks (`discard`, while paused: to drop what their spools hold), arms the
    /// end of a timed pause, and has the state file written; connection `reply` gets the SHARE reply this turn
    /// decided once the uplinks were told and the file is written (`Effect.saveSharing`).
    mutating func setSharing(_ state: SharingState, discard: Bool = false, reply: Int?, at wall: Double) {
        publisher.uplinks.sharing = state
        let paused = state.isPaused(at: wall)
        tellUplinks(paused ? .off(discard: discard) : .on)
        armPauseEnd(at: wall)
        // Written before the reply: a switch turned off must hold across a crash right after `locationctl
        // share off` returned. On the store's queue, so that its two fsyncs hold up no client's fix; in
        // order with every other SHARE's file. The reply says the state this turn put in force.
        effects.append(.saveSharing(text: state.fileText, path: publisher.uplinks.settings.path,
                                    reply: reply.map { ($0, shareReply(at: wall)) }))
    }

    /// Tells every uplink of a change of the sharing switch, after the reports handed to them before it.
    private mutating func tellUplinks(_ change: SharingChange) {
        let work = publisher.uplinks.entries.compactMap { uplink in uplink.sharingSink.map { UplinkWork.sharing($0, change) } }
        if !work.isEmpty { effects.append(.uplinks(work)) }
    }

    /// Arms the timer that ends the timed pause in force, if any (`ServerEvent.sharingPauseEnds`).
    mutating func armPauseEnd(at wall: Double) {
        guard let until = publisher.uplinks.sharing.pausedUntil, until.isFinite, until > wall else { return }
        effects.append(.schedule(.sharingPauseEnds, after: .milliseconds(Int64(((until - wall) * 1000).rounded(.up)))))
    }

    /// A timed pause's timer fired: once its end has come (by the wall clock its date is on), sharing is
    /// on again and the uplinks are told. The file needs no writing: its `off-until` reads as on from then.
    /// Early (the wall clock was set back, or a later pause replaced this one), it waits again.
    mutating func pauseMayHaveEnded(at wall: Double) {
        guard let until = publisher.uplinks.sharing.pausedUntil, until.isFinite else { return }
        guard wall >= until else { return armPauseEnd(at: wall) }
        publisher.uplinks.sharing = SharingState()
        tellUplinks(.on)
        context.log.notice("sharing on: the pause ended")
    }

    /// `{"class":"SHARE","sharing":BOOL,"until":TIME,"uplinks":N}`; `until` only for a timed pause.
    func shareReply(at wall: Double) -> [UInt8] {
        let state = publisher.uplinks.sharing
        var w = JSONObjectWriter(reservingCapacity: 128)
        w.begin()
        w.field("class", constant: "SHARE")
        w.field("sharing", !state.isPaused(at: wall))
        if let until = state.pausedUntil, !until.isInfinite, state.isPaused(at: wall) { w.field("until", UTCTime(unixSeconds: until).iso8601) }
        w.field("uplinks", publisher.uplinks.entries.count)
        w.end()
        return w.bytes
    }
}

/// Replaces the sharing file atomically (`FileDescriptorOps.writeAtomically`: temporary file, fsync, rename,
/// fsync of the directory, through the syscall funnel), or removes it when sharing is on; a failure is
/// left for the next change (the switch holds in memory).
func writeSharingFile(_ path: String, _ text: String?) {
    guard let text else {
        guard case .success = FileDescriptorOps.unlink(path) else { return }
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        if let directoryFile = try? OwnedFileDescriptor(opening: directory, flags: O_RDONLY | O_DIRECTORY) {
            _ = FileDescriptorOps.fsync(directoryFile.rawValue)
        }
        return
    }
    try? FileDescriptorOps.writeAtomically(path: path, bytes: Array(text.utf8))
}

/// Reads the sharing file at start: absent → sharing; unreadable → paused (fail closed).
func readSharingFile(_ path: String) -> SharingState {
    switch FileDescriptorOps.readFile(atPath: path, maximumBytes: 256) {
    case .success(let bytes): return SharingState(fileText: String(decoding: bytes, as: UTF8.self))
    case .failure(.noSuchFileOrDirectory): return SharingState()
    case .failure: return SharingState(pausedUntil: .infinity)
    }
}
