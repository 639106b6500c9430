#if canImport(Glibc)
import Glibc
#endif
import LocationClient
import LocationWire

/// Asks for authorization (`AUTHORIZE`, then `FULLACCURACY` with `--purpose`) before `watch` or `get`.
/// - Returns: nil when authorized; 77 (EX_NOPERM) after printing the status and the reason when refused.
/// - Throws: the client's errors (for `clientFailure`).
func authorize(_ client: LocationClient, _ options: AuthorizationOptions, command: String) async throws -> ExitCode? {
    // A person may be asked (`access = ask`): up to the daemon's ask-timeout with nothing on screen looked hung
    // (issue 33's second trial). Said once, after a second without a decision, on a terminal.
    let waiting = Task {
        try await Task.sleep(for: .seconds(1))
        guard isatty(2) == 1 else { return }
        writeStandardError("locationctl \(command): waiting for locationd's decision (an agent may be asking a person; "
                           + "up to the daemon's ask-timeout)\n")
    }
    let authorization: Authorization
    do {
        defer { waiting.cancel() }
        authorization = try await client.requestAuthorization(options.kind, accuracy: options.accuracy,
                                                              name: "locationctl \(command)")
    }
    guard authorization.isAuthorized else {
        writeStandardError("locationctl \(command): not authorized: \(PlainWords.status(authorization.status))"
                           + (authorization.reason.map { " (\($0))" } ?? "") + "\n")
        return .noPermission
    }
    if options.kind == .persistent, authorization.status == .authorizedWhenInUse {
        // Always asked, When In Use kept (the upgrade refused, or not answered in time): said, not hidden.
        writeStandardError("locationctl \(command): Always was not granted; continuing with When In Use"
                           + (authorization.reason.map { " (\($0))" } ?? "") + "\n")
    }
    if command == "get", !authorization.inUse {
        // When In Use while the user has no active session: no location would come.
        writeStandardError("locationctl get: not in use: \(authorization.reason ?? "the user has no active login session")\n")
        return .noPermission
    }
    guard let key = options.purposeKey, authorization.accuracy != .fullAccuracy else { return nil }
    let full: Authorization
    do {
        full = try await client.requestTemporaryFullAccuracy(purposeKey: key)
    } catch let error as LocationClientError {
        guard case let .server(request, message) = error, request == "FULLACCURACY" else { throw error }
        writeStandardError("locationctl \(command): temporary full accuracy refused: \(message)\n")
        return .noPermission
    }
    guard full.isAuthorized else {
        writeStandardError("locationctl \(command): not authorized: \(PlainWords.status(full.status))"
                           + (full.reason.map { " (\($0))" } ?? "") + "\n")
        return .noPermission
    }
    if full.accuracy != .fullAccuracy {
        writeStandardError("locationctl \(command): temporary full accuracy for '\(key)' was not granted; "
                           + "continuing with \(full.accuracy?.rawValue ?? "reduced") accuracy\n")
    }
    return nil
}
