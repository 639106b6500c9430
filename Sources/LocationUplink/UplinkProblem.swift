#if canImport(Glibc)
import Glibc
#endif
import CMosquitto

/// Why an uplink is not connected, in words an administrator can act on: libmosquitto's and OpenSSL's
/// texts, with what they mean for the `[uplink]` section's TLS keys (locationd.conf(5)).
enum UplinkProblem {
    /// An OpenSSL error libmosquitto logged (`OpenSSL Error[0]: error:0A000418:SSL routines::tlsv1 alert
    /// unknown ca`) as the reason: `TLS: ` and the text, after what it means when it is one of the
    /// failures a section's keys cause.
    /// - Parameter clientCertificate: whether the section has `cert-file`.
    static func tls(_ text: String, clientCertificate: Bool) -> String {
        let meaning: String?
        if text.contains("alert unknown ca") || text.contains("alert bad certificate") || text.contains("alert certificate unknown") {
            meaning = clientCertificate ? "the broker does not accept the client certificate (cert-file)"
                : "the broker wants a client certificate (cert-file, key-file)"
        } else if text.contains("alert certificate required") {
            meaning = "the broker requires a client certificate (cert-file, key-file)"
        } else if text.contains("certificate verify failed") {
            meaning = "the broker's certificate does not verify against ca-file"
        } else {
            meaning = nil
        }
        return "TLS: " + (meaning.map { "\($0) (\(text))" } ?? text)
    }

    /// A TLS connection that failed before the broker answered, with no OpenSSL error to say why (the
    /// broker closed it: what OpenSSL 3 sees when a broker requiring a client certificate gets none).
    /// - Parameters:
    ///   - failure: what libmosquitto said (`cannot connect to mqtts://…: Protocol error`).
    ///   - clientCertificate: whether the section has `cert-file`.
    static func tlsHandshake(_ failure: String, clientCertificate: Bool) -> String {
        failure + (clientCertificate ? "; the TLS handshake failed: the broker may not accept the client certificate (cert-file)"
            : "; the TLS handshake failed: the broker may require a client certificate (cert-file, key-file)")
    }

    /// Whether `problem` is the broker's or TLS's own reason, which a disconnect that follows must not hide.
    static func isSpecific(_ problem: String?) -> Bool {
        guard let problem else { return false }
        return problem.hasPrefix("broker refused") || problem.hasPrefix("TLS: ")
    }

    /// libmosquitto's text for its result `code`; for `MOSQ_ERR_ERRNO`, the text of `errno`, which then says why.
    static func libmosquitto(_ code: Int32) -> String {
        code == MOSQ_ERR_ERRNO.rawValue ? String(cString: strerror(errno)) : String(cString: mosquitto_strerror(code))
    }
}
