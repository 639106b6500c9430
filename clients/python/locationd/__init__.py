"""A client of locationd, the Linux location daemon, for Python 3.9 and later (standard library only).

    import locationd
    with locationd.LocationManager(name="my logger") as manager:
        manager.request_authorization("once")          # waits while an agent (a person) decides
        for location in manager.locations():
            print(location.time, location.lat, location.lon, location.horizontal_accuracy)

The words are Core Location's (authorization status, accuracy authorization, one-time and When In Use
authorization, temporary full accuracy); the wire protocol is docs/PROTOCOL.md. ``python3 -m locationd``
is a command line (get, watch, status).
"""

from .errors import (DaemonError, DaemonUnavailable, LocationError, NoFix, NotAuthorized, Paced,
                     ProtocolMismatch, Timeout)
from .location import Authorization, FixState, Location
from .manager import DEFAULT_SOCKET_PATH, SOCKET_ENVIRONMENT_VARIABLE, LocationManager

__all__ = ["LocationManager", "Location", "Authorization", "FixState", "LocationError", "DaemonUnavailable",
           "DaemonError", "NotAuthorized", "NoFix", "Paced", "ProtocolMismatch", "Timeout",
           "DEFAULT_SOCKET_PATH", "SOCKET_ENVIRONMENT_VARIABLE"]
__version__ = "0.1.0"
