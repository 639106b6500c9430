#if canImport(Glibc)
import Glibc
#endif
import LocationPosix
import TestSupport

/// A stand-in for locationd: listens on a Unix socket in a fresh temporary directory and serves
/// connections one after another on a background thread, each with a script that speaks the protocol
/// (docs/PROTOCOL.md) line by line. Every line the server reads is recorded for the test to check.
/// Reads wait at most 10 s, so a broken test fails instead of hanging.
final class FakeServer: Sendable {
    /// The socket path to connect to.
    let path: String
    private let directory: String
    private let listener: ListeningSocket
    private let received = Locked<[String]>([])
    private let done = Locked(false)

    /// Starts serving `connections` connections with `script`, then stops accepting.
    init(connections: Int = 1, script: @escaping @Sendable (FakePeer) -> Void) throws {
        var template = Array("/tmp/locationclient-test-XXXXXX".utf8CString)
        guard let made = TemporaryDirectories.mkdtemp(&template) else { throw Errno.current }
        directory = String(cString: made)
        path = directory + "/locationd.sock"
        listener = try ListeningSocket(path: path, mode: 0o600)
        // A thread of its own: blocking reads on Dispatch's pool would starve Swift concurrency's
        // executor, which runs on the same pool.
        startThread { [self] in
            for _ in 0..<connections {
                guard let fd = acceptOne() else { break }
                let peer = FakePeer(fd: fd) { line in self.received.withLock { $0.append(line) } }
                script(peer)
                FileDescriptorOps.close(fd)
            }
            listener.close()
            rmdir(directory)
            done.withLock { $0 = true }
        }
    }

    /// The request lines the server has read so far, in order.
    var requests: [String] { received.withLock { $0 } }

    /// Waits (at most 10 s) until every connection has been served.
    func finished() async -> Bool {
        for _ in 0..<1000 {
            if done.withLock({ $0 }) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    private func acceptOne() -> Int32? {
        var poller = pollfd(fd: listener.fileDescriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 10_000) == 1, case .success(let fd) = listener.accept() else { return nil }
        _ = FileDescriptorOps.setNonBlocking(fd, false)
        _ = UnixSocketOps.setReceiveTimeout(fd, seconds: 10)
        return fd
    }
}

/// The server's end of one connection, for a `FakeServer` script.
final class FakePeer {
    let fd: Int32
    private let record: (String) -> Void
    private var pending: [UInt8] = []

    init(fd: Int32, record: @escaping (String) -> Void) {
        self.fd = fd
        self.record = record
    }

    /// Sends `line` and a newline.
    func send(_ line: String) {
        _ = UnixSocketOps.sendAll(fd, Array(line.utf8) + [10])
    }

    /// Sends bytes as they are (already ending in a newline).
    func send(bytes: [UInt8]) {
        _ = UnixSocketOps.sendAll(fd, bytes)
    }

    /// Sends locationd's greeting, protocol 1.0.
    func greet() {
        send(#"{"class":"VERSION","release":"0.1.0","proto_major":1,"proto_minor":0}"#)
    }

    /// The next line from the client, recorded; nil at end of file or after 10 s.
    @discardableResult
    func readLine() -> String? {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let newline = pending.firstIndex(of: 10) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                record(line)
                return line
            }
            let result = chunk.withUnsafeMutableBytes { FileDescriptorOps.read(fd, into: $0) }
            guard case .success(let count) = result, count > 0 else { return nil }
            pending.append(contentsOf: chunk[..<count])
        }
    }

    /// Reads (and records) lines until the client closes the connection; false after 10 s without.
    @discardableResult
    func waitForClose() -> Bool {
        while readLine() != nil {}
        var byte: UInt8 = 0
        let result = withUnsafeMutableBytes(of: &byte) { FileDescriptorOps.read(fd, into: $0) }
        if case .success(0) = result { return true }
        return false
    }
}

/// Runs `body` on a new detached thread (pthread_create(3)).
private func startThread(_ body: @escaping @Sendable () -> Void) {
    final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let result = pthread_create(&thread, nil, { raw in
        Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
        return nil
    }, box)
    precondition(result == 0, "pthread_create failed: \(result)")
    pthread_detach(thread)
}
