import LocationWire

// Core Location's names for the authorization calls (CLLocationManager), over the daemon's requests.

extension LocationClient {
    /// Asks for When-In-Use authorization: remembered, and used while this user has an active login
    /// session (Core Location's `requestWhenInUseAuthorization()`; `AUTHORIZE` with `whenInUse`). While
    /// the user has none, the daemon sends no location and says so (`Authorization.inUse` false).
    /// - Parameters:
    ///   - accuracy: the most precise the client wants; the daemon's rule may allow less.
    ///   - name: display text for the agent; never used to decide.
    ///   - timeout: seconds to wait for the answer (plus `replyGracePeriod`).
    /// - Returns: the authorization now in force (a refusal is a status, not an error).
    /// - Throws: as `requestAuthorization(_:accuracy:name:timeout:)`.
    public func requestWhenInUseAuthorization(accuracy: AccuracyAuthorization = .fullAccuracy, name: String? = nil,
                                              timeout: Double = LocationClient.authorizationTimeout) async throws -> Authorization {
        try await requestAuthorization(.whenInUse, accuracy: accuracy, name: name, timeout: timeout)
    }

    /// Asks for Always authorization: remembered, and used whether or not the user is at the machine
    /// (Core Location's `requestAlwaysAuthorization()`; `AUTHORIZE` with `persistent`). One question to the
    /// agents: asked first, "allow always" gives Always; asked by a client authorized When In Use, the agent
    /// sees an upgrade, and refusing it (or no answer) leaves When In Use (docs/PROTOCOL.md "When In Use and
    /// Always").
    /// - Parameters: as `requestWhenInUseAuthorization(accuracy:name:timeout:)`.
    /// - Returns: the authorization now in force.
    /// - Throws: as `requestAuthorization(_:accuracy:name:timeout:)`.
    public func requestAlwaysAuthorization(accuracy: AccuracyAuthorization = .fullAccuracy, name: String? = nil,
                                           timeout: Double = LocationClient.authorizationTimeout) async throws -> Authorization {
        try await requestAuthorization(.always, accuracy: accuracy, name: name, timeout: timeout)
    }

    /// Asks for full accuracy for this connection citing `purposeKey` (Core Location's
    /// `requestTemporaryFullAccuracyAuthorization(withPurposeKey:)`); see
    /// `requestTemporaryFullAccuracy(purposeKey:timeout:)`.
    /// - Returns: the authorization now in force.
    /// - Throws: as `requestTemporaryFullAccuracy(purposeKey:timeout:)`.
    public func requestTemporaryFullAccuracyAuthorization(withPurposeKey purposeKey: String,
                                                          timeout: Double = LocationClient.authorizationTimeout) async throws -> Authorization {
        try await requestTemporaryFullAccuracy(purposeKey: purposeKey, timeout: timeout)
    }

    /// How precisely this client may see locations now (Core Location's `accuracyAuthorization`); nil when
    /// it may see none (not authorized, or When In Use while its user has no active session).
    /// - Parameter timeout: seconds to wait for the reply (plus `replyGracePeriod`).
    /// - Throws: as `authorizationStatus(timeout:)`.
    public func accuracyAuthorization(timeout: Double = 10) async throws -> AccuracyAuthorization? {
        try await authorizationStatus(timeout: timeout).accuracy
    }
}

extension Authorization {
    /// The status under Core Location's name (`CLLocationManager.authorizationStatus`).
    public var authorizationStatus: AuthorizationStatus { message.status }
    /// The accuracy under Core Location's name (`CLLocationManager.accuracyAuthorization`); nil when no
    /// location is sent.
    public var accuracyAuthorization: AccuracyAuthorization? { message.accuracy }
}
