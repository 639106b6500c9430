import LocationPolicy
import LocationPosix
import LocationWire

/// Who holds the connections, looked at again while they live (docs/SECURITY.md "Who a client is"): on
/// every front, since any holder reads what is sent. (The native front also serves only requests written by
/// the process that connected, SCM_CREDENTIALS; but a process with its own user and pid namespace may
/// name any pid of that namespace there — found by a helper attacking the daemon as uid 1.)
extension ServerState {
    /// Starts a re-check of the holders of every connection, unless one is under way (then one more follows
    /// it). Called at every sweep (at most a second apart) and for every gpsd request.
    mutating func checkHolders() {
        guard !holderCheck.running else {
            holderCheck.wanted = true
            return
        }
        var checks: [HolderCheck] = []
        for (id, connection) in connections where connection.front != .native {
            guard let inode = connection.peerInode else { continue }
            checks.append(HolderCheck(id: id, uid: connection.identity.uid, peerInode: inode))
        }
        guard !checks.isEmpty else { return }
        holderCheck = (running: true, wanted: false)
        effects.append(.recheckHolders(checks))
    }

    /// A re-check came back: a connection whose holders no longer back the identity it was given — another
    /// program or another user now holds it — keeps going only if what it is authorized for is the same under
    /// the identity its holders give it now (a `user` rule's client that ran `system()` with the socket
    /// inherited); otherwise it is closed: what that identity was granted ends with it. Looked at again at the
    /// next pass, so a rule or grant that changes meanwhile is seen within a second.
    mutating func holdersChecked(_ results: [HolderCheckResult], at now: Moment) {
        holderCheck.running = false
        for result in results {
            guard let connection = connections[result.id] else { continue }
            let old = connection.identity.heldProgram
            switch result.held {
            case .success(let held) where held.stillBacks(old):
                continue
            case .success(let held):
                var weaker = connection.identity
                weaker.apply(held)
                let current = publisher.authorization(of: result.id, at: now)
                if let then = publisher.authorization(of: result.id, as: weaker, at: now),
                   then.status == current.status, then.accuracy == current.accuracy, then.inUse == current.inUse {
                    continue
                }
                refuse(result.id, "the processes holding this connection changed (now \(held.program ?? "?"), \(held.strength)): "
                       + "what \(old.program ?? "?") (\(old.strength)) was granted ends")
            case .failure(let refusal):
                refuse(result.id, "the processes holding this connection changed: \(refusal)")
            }
        }
        if holderCheck.wanted { checkHolders() }
    }

    /// A connection that could not be identified: told why (`Front.refusal`) and closed.
    mutating func refuseUnidentified(_ connection: PendingConnection, _ refusal: PeerRefusal) {
        let why: String
        switch refusal {
        case .exited: why = "the connecting process exited before it could be identified"
        default: why = "not identified: \(refusal)"
        }
        // Out of descriptors, the daemon cannot say who it is: closed without a word, as before it was accepted.
        let bytes = refusal == .daemonOutOfDescriptors ? [] : connection.front.refusal(why)
        if !bytes.isEmpty { _ = bytes.withUnsafeBytes { sendNoSignal(connection.fd, $0) } }
        FileDescriptorOps.close(connection.fd)
        context.log.client(.warning, "client refused", uid: connection.uid,
                           ["client.uid": connection.uid.map(String.init) ?? "?", "reason": why])
    }
}
