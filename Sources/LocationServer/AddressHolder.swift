import LocationPosix

/// What already listens on a TCP address the daemon could not bind, for an error that says what to do.
///
/// The usual case is gpsd itself (or systemd's `gpsd.socket`) on gpsd's port 2947, where locationd's gpsd
/// front wants to be. The listener is found as `ss -ltp` finds it: its owner and inode from the kernel's
/// socket table (sock_diag, the local address and no remote end), then the processes holding that inode
/// (/proc/PID/fd, which for other users' processes needs the capabilities of docs/SECURITY.md).
enum AddressHolder {
    /// One process holding the listening socket.
    struct Holder: Equatable {
        var pid: Int32
        /// Its executable (/proc/PID/exe), else its command name (/proc/PID/comm); nil when unreadable.
        var program: String?
    }

    /// The processes holding the TCP listener on `address` (a wildcard listener on its port counts); nil
    /// when the kernel's socket table has no listener there (a race, or not TCP).
    static func holders(of address: TCPAddress) -> (uid: UInt32, processes: [Holder])? {
        let nowhere = TCPAddress(family: address.family, bytes: [UInt8](repeating: 0, count: address.bytes.count), port: 0)
        guard let owner = PeerProcess.tcpSocketOwner(peer: address, ours: nowhere) else { return nil }
        // Once, at start-up, for the administrator: every process is read, however many descriptors.
        let pids = PeerProcess.processes(holdingSocket: owner.inode, uid: nil, descriptorLimit: .max) ?? []
        return (owner.uid, pids.map { Holder(pid: $0, program: program(of: $0)) })
    }

    /// The bind error for `address`: for `EADDRINUSE`, that the address is in use and by what, with the
    /// commands that free gpsd's port; otherwise the error itself.
    static func bindError(_ address: TCPAddress, _ error: Errno) -> String {
        let prefix = "cannot listen for gpsd clients on \(address)"
        guard error == .addressInUse else { return "\(prefix): \(error)" }
        let remedy = "stop it and keep it stopped (for gpsd: systemctl disable --now gpsd.socket gpsd), "
            + "or give gpsd-listen another address"
        guard let found = holders(of: address) else {
            return "\(prefix): the address is already in use (`ss -ltnp 'sport = :\(address.port)'` shows by what); " + remedy
        }
        guard !found.processes.isEmpty else {
            return "\(prefix): the address is already in use by a process of uid \(found.uid) that this daemon may not "
                + "inspect (`ss -ltnp 'sport = :\(address.port)'` as root shows it); " + remedy
        }
        let names = found.processes.map { "\($0.program ?? "?") (pid \($0.pid))" }.joined(separator: ", ")
        let isGpsd = found.processes.contains { ($0.program ?? "").hasSuffix("/gpsd") || $0.program == "gpsd" }
        let bySystemd = found.processes.contains { $0.pid == 1 }
        var kind = ""
        if isGpsd { kind = ": gpsd is running" + (bySystemd ? ", started by systemd's gpsd.socket" : "") }
        else if bySystemd { kind = ": a systemd socket unit holds it (gpsd.socket, when gpsd is installed)" }
        return "\(prefix): the address is already in use by \(names)\(kind); " + remedy
    }

    /// The executable of `pid` (/proc/PID/exe), else its command name (/proc/PID/comm).
    static func program(of pid: Int32) -> String? {
        if case .success(let path) = FileDescriptorOps.readLink("/proc/\(pid)/exe"), !path.isEmpty { return path }
        guard case .success(let bytes) = FileDescriptorOps.readFile(atPath: "/proc/\(pid)/comm", maximumBytes: 64) else { return nil }
        let name = String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        return name.isEmpty ? nil : name
    }
}
