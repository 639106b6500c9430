import LocationPolicy
import LocationPosix

/// Why a connection's peer was not identified, and so refused (every front).
public enum PeerRefusal: Error, Equatable, CustomStringConvertible {
    /// The peer's address is not on loopback (TCP).
    case notLoopback(String)
    /// getsockname(2)/getpeername(2) failed (TCP).
    case noAddress(Errno)
    /// The kernel's socket table has no socket at the other end (it is not on this host, or closed).
    case noSocketOwner
    /// The socket has no peer credentials (SO_PEERCRED failed).
    case noCredentials(Errno)
    /// No process of the socket's owner holds its other end.
    case noProcess
    /// Processes of other users than the one that made the socket hold it (uids): which user reads it
    /// cannot be told, and the least any of them would get is nothing that can be told either.
    case otherUsers([UInt32])
    /// The process exited, or its pid was reused, while it was being identified.
    case exited
    /// The owner's processes hold more descriptors than one look-up reads (`PeerProcess.descriptorScanLimit`).
    case tooManyDescriptors
    /// The daemon itself is out of file descriptors (EMFILE, ENFILE): /proc cannot be read. Not the client's
    /// doing: it is closed without a word, as accept(2) would have left it in the backlog.
    case daemonOutOfDescriptors

    public var description: String {
        switch self {
        case .notLoopback(let address): return "peer \(address) is not on loopback"
        case .noAddress(let e): return "no socket address: \(e)"
        case .noSocketOwner: return "the kernel has no socket at the other end"
        case .noCredentials(let e): return "no peer credentials: \(e)"
        case .noProcess: return "no process holds the other end"
        case .otherUsers(let uids): return "processes of other users hold the other end (uids \(uids.map(String.init).joined(separator: ",")))"
        case .exited: return "the connecting process exited before it was identified"
        case .tooManyDescriptors: return "its user's processes hold more than \(PeerProcess.descriptorScanLimit) descriptors"
        case .daemonOutOfDescriptors: return "locationd is out of file descriptors"
        }
    }
}

/// The gpsd front's name for `PeerRefusal`.
public typealias TCPPeerRefusal = PeerRefusal

/// What the processes holding a connection say of the program behind it (ARCHITECTURE.md "Identity
/// strength"): the parts of `ClientIdentity` that the holders decide, the same for the first look and every
/// re-check, so that a change shows as a difference.
struct HeldProgram: Equatable, Sendable {
    var executable: String?
    var unit: String?
    var userUnit: String?
    var interpreter: String?
    var program: String?
    var strength: IdentityStrength
    /// Every holder runs outside login sessions (`ClientIdentity.outsideLoginSessions`); one inside makes the
    /// connection follow its user's session.
    var outsideLoginSessions = false

    /// What `holders` (every process holding the connection, the connecting one included) make of it, for a
    /// connection of user `uid`. The decision is the least any holder would get: a holder of another user
    /// refuses the connection; holders of different programs, or a program not loaded cleanly
    /// (`ProcessLoad`), leave it known by its user alone — its user's own code, which `user` and `group`
    /// rules trust anyway (a program that runs `system()` with the socket inherited keeps what its user may
    /// have); an interpreter is named for `interpreter = yes` rules only, which accept any code of its user,
    /// so its load is not judged.
    /// - Parameter unreadUsers: users whose processes could not all be read (`SocketHolderScan.unreadUsers`):
    ///   any of them may hold it too.
    /// - Throws: `PeerRefusal.otherUsers`, `.noProcess` when `holders` is empty.
    static func resolve(uid: UInt32, holders: [HolderFacts], unreadUsers: Set<UInt32>) throws(PeerRefusal) -> HeldProgram {
        guard let first = holders.first else { throw .noProcess }
        let others = Set(holders.filter { !$0.isOfUser(uid) }.map { $0.uids.first ?? 0 })
        if !others.isEmpty { throw .otherUsers(others.sorted()) }
        let programs = Set(holders.map { $0.program ?? "?" })

        var held = HeldProgram(executable: nil, unit: nil, userUnit: nil, interpreter: nil, program: first.program,
                               strength: .unverified(reason: "no program identified"),
                               outsideLoginSessions: holders.allSatisfy(\.outsideLoginSessions))
        // The unit: the same for every holder. One below a user's own manager (`user@UID.service/NAME`) is the
        // user's to name, so it only feeds the advisory `user-unit` key.
        var systemUnit = false
        if let unit = first.unit, holders.allSatisfy({ $0.unit == unit }) {
            if let slash = unit.lastIndex(of: "/") {
                held.userUnit = String(unit[unit.index(after: slash)...])
            } else {
                held.unit = unit
                systemUnit = holders.allSatisfy(\.inSystemSlice)
            }
        }
        let reason: String
        let unread = unreadUsers.subtracting([uid]).sorted()
        if !unread.isEmpty {
            reason = "processes of uid \(unread.map(String.init).joined(separator: ",")) hold more descriptors than are read: who else holds it cannot be told"
        } else if unreadUsers.contains(uid) {
            reason = "its user's processes hold more than \(PeerProcess.descriptorScanLimit) descriptors: who else holds it cannot be told"
        } else if programs.count > 1 {
            reason = "held by processes of different programs (pids \(holders.map { String($0.pid) }.joined(separator: ",")))"
        } else if let executable = first.executable, holders.allSatisfy({ $0.executable == executable }),
                  ProcessLoad.isInterpreter(executable) {
            held.interpreter = executable
            reason = "an interpreter (\(executable)): any script of its user can run as it"
        } else if let taint = holders.lazy.compactMap(\.taint).first {
            reason = taint
        } else if let executable = first.executable, holders.allSatisfy({ $0.executable == executable }) {
            held.executable = executable
            reason = ""
        } else {
            reason = "its executable cannot be verified (deleted, replaced, or in another mount namespace)"
        }
        if systemUnit {
            held.strength = .systemUnit
        } else if held.executable != nil {
            held.strength = .verifiedExecutable
        } else {
            held.strength = .unverified(reason: reason)
        }
        return held
    }

    /// Reads the holders `pids` (with `extra`, the connecting process, when not among them) from `cache`;
    /// processes gone meanwhile are left out.
    static func facts(_ pids: [Int32], adding extra: Int32?, cache: inout HolderCache) -> [HolderFacts] {
        var all = pids
        if let extra, !all.contains(extra) { all.append(extra) }
        return all.sorted().compactMap { cache.facts($0) }
    }
}

extension HeldProgram {
    /// Whether this (a re-check's finding) still backs what `old` (the first look's) was matched by: every
    /// executable, unit or interpreter that `old` named is named the same now, and a connection held outside every
    /// login session at first (`outsideLoginSessions`, which a When-In-Use grant made for it honours while it runs)
    /// still is. A weaker `old` loses nothing.
    func stillBacks(_ old: HeldProgram) -> Bool {
        (old.executable == nil || old.executable == executable) && (old.unit == nil || old.unit == unit)
            && (old.userUnit == nil || old.userUnit == userUnit) && (old.interpreter == nil || old.interpreter == interpreter)
            && (!old.outsideLoginSessions || outsideLoginSessions)
    }
}

extension ClientIdentity {
    /// The identity with what the holders say of its program.
    mutating func apply(_ held: HeldProgram) {
        executable = held.executable
        unit = held.unit
        userUnit = held.userUnit
        interpreter = held.interpreter
        program = held.program
        strength = held.strength
        outsideLoginSessions = held.outsideLoginSessions
    }

    /// The parts `HeldProgram` decides, as they are now.
    var heldProgram: HeldProgram {
        HeldProgram(executable: executable, unit: unit, userUnit: userUnit, interpreter: interpreter, program: program, strength: strength,
                    outsideLoginSessions: outsideLoginSessions)
    }
}
