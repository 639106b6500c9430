"""The errors a locationd client raises, each with the daemon's words (docs/PROTOCOL.md "ERROR")."""


class LocationError(Exception):
    """Base class of every error this package raises."""


class DaemonUnavailable(LocationError):
    """The daemon's socket could not be reached, or the daemon closed the connection.

    ``socket_path`` names the socket tried.
    """

    def __init__(self, message, socket_path=None):
        super().__init__(message)
        self.socket_path = socket_path


class ProtocolMismatch(LocationError):
    """The daemon speaks another major version of the protocol, or sent something unreadable."""


class Timeout(LocationError, TimeoutError):
    """No reply came within the time allowed (the call's timeout plus a grace period)."""


class DaemonError(LocationError):
    """The daemon refused a request with an ``ERROR`` object.

    ``request`` is the refused request's class (``"WATCH"``, ``"POLL"``, ... or ``"?"``), ``message`` the
    daemon's words.
    """

    def __init__(self, request, message):
        super().__init__("%s: %s" % (request, message))
        self.request = request
        self.message = message


class NotAuthorized(LocationError):
    """The policy does not let this client see the location.

    ``status`` is the authorization status in Core Location's words (``"denied"``, ``"restricted"``,
    ``"notDetermined"``, or ``"authorizedWhenInUse"`` while the user has no active session); ``reason``
    is the daemon's reason, in words.
    """

    def __init__(self, status, reason=None):
        super().__init__("not authorized: %s%s" % (status, " (%s)" % reason if reason else ""))
        self.status = status
        self.reason = reason


class NoFix(LocationError):
    """No fix came within the time allowed (``POLL``).

    ``next_report_in`` (seconds) is set at reduced accuracy: when the client's next report is due.
    """

    def __init__(self, message, next_report_in=None):
        super().__init__(message)
        self.message = message
        self.next_report_in = next_report_in


class Paced(LocationError):
    """At reduced accuracy the client's next report is not due within the ``POLL``'s timeout.

    ``next_report_in`` is the seconds until it is due (``ERROR.nextReportIn``).
    """

    def __init__(self, message, next_report_in):
        super().__init__(message)
        self.message = message
        self.next_report_in = next_report_in
