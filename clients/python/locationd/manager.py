"""LocationManager: one connection to locationd, with Core Location's words (docs/PROTOCOL.md)."""

import collections
import json
import os
import select
import socket
import time

from .errors import (DaemonError, DaemonUnavailable, NoFix, NotAuthorized, Paced, ProtocolMismatch,
                     Timeout)
from .location import Authorization, FixState, Location

DEFAULT_SOCKET_PATH = "/run/locationd/locationd.sock"
SOCKET_ENVIRONMENT_VARIABLE = "LOCATIOND_SOCKET"
PROTOCOL_MAJOR = 1
# Seconds added to a request's own wait before giving up on the reply (as LocationClient does).
REPLY_GRACE_PERIOD = 5.0
# How long an authorization request may wait: the daemon answers within its ask-timeout (30 s by
# default) once an agent, a person, decided or did not.
AUTHORIZATION_TIMEOUT = 60.0
# A reply line longer than this is not the daemon's (an AUDIT page is about 128 KiB).
MAX_LINE_BYTES = 4 * 1024 * 1024

_KINDS = {"once": "once", "whenInUse": "whenInUse", "when_in_use": "whenInUse", "when-in-use": "whenInUse",
          "always": "always", "persistent": "always"}


def socket_path_from_environment(path=None):
    """The socket to use: ``path`` when given, else ``$LOCATIOND_SOCKET`` when set and not empty, else
    ``/run/locationd/locationd.sock``."""
    if path:
        return path
    return os.environ.get(SOCKET_ENVIRONMENT_VARIABLE) or DEFAULT_SOCKET_PATH


class LocationManager:
    """A connection to locationd (Core Location's ``CLLocationManager``).

    Connects at once and reads the daemon's ``VERSION``. Ask for authorization first
    (``request_authorization()``, ``request_when_in_use_authorization()``,
    ``request_always_authorization()``); under ``access = ask`` the call waits until an agent (a person)
    decided, up to the daemon's ask-timeout. Then ``locations()``/``watch()`` streams locations and
    ``request_location()`` asks for one fresh fix.

    Not thread-safe: use one manager from one thread. Use it as a context manager, or call ``close()``.

    Args:
      socket_path: the daemon's socket; default ``$LOCATIOND_SOCKET``, else ``/run/locationd/locationd.sock``.
      name: display text for the agent (never used to decide).
      timeout: seconds to wait for the connection and its ``VERSION``.
    Raises:
      DaemonUnavailable: the socket cannot be reached. ProtocolMismatch: another protocol version.
    """

    def __init__(self, socket_path=None, name=None, timeout=10.0):
        self.socket_path = socket_path_from_environment(socket_path)
        self.name = name
        self._buffer = b""
        self._pending = collections.deque()   # location messages read while waiting for a reply
        self._authorization = None
        self._watching = False
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._socket.settimeout(timeout)
            self._socket.connect(self.socket_path)
            self._socket.setblocking(False)
        except OSError as error:
            self._socket.close()
            raise DaemonUnavailable("cannot connect to %s: %s" % (self.socket_path, error.strerror or error),
                                    self.socket_path) from None
        try:
            version = self._read_message(time.monotonic() + timeout)
        except Exception:
            self.close()
            raise
        if version.get("class") == "ERROR":
            self.close()
            raise DaemonError(version.get("request", "?"), version.get("message", ""))
        if version.get("class") != "VERSION":
            self.close()
            raise ProtocolMismatch("expected VERSION, got %s" % version.get("class"))
        if version.get("proto_major") != PROTOCOL_MAJOR:
            self.close()
            raise ProtocolMismatch("the daemon speaks protocol %s, this client %d"
                                   % (version.get("proto_major"), PROTOCOL_MAJOR))
        self.version = version

    # MARK: connection

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Closes the connection; a one-time grant ends with it. Closing twice is harmless."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def fileno(self):
        """The socket's descriptor, for ``select``."""
        return self._socket.fileno()

    def _send(self, message):
        if self._socket is None:
            raise DaemonUnavailable("the connection is closed", self.socket_path)
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        self._socket.setblocking(True)
        try:
            self._socket.settimeout(10)
            self._socket.sendall(data)
        except OSError as error:
            raise DaemonUnavailable("the daemon closed the connection (%s)" % error, self.socket_path) from None
        finally:
            self._socket.setblocking(False)

    def _read_message(self, deadline):
        """The next object from the daemon; raises Timeout after ``deadline`` (monotonic; None: never)."""
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line, self._buffer = self._buffer[:newline], self._buffer[newline + 1:]
                if not line.strip():
                    continue
                try:
                    message = json.loads(line.decode("utf-8"))
                except ValueError:
                    raise ProtocolMismatch("unreadable line from the daemon: %r" % line[:120]) from None
                if not isinstance(message, dict):
                    raise ProtocolMismatch("not an object: %r" % line[:120])
                if message.get("class") == "AUTHORIZATION":
                    self._authorization = Authorization(message)
                return message
            if len(self._buffer) > MAX_LINE_BYTES:
                raise ProtocolMismatch("a line of more than %d bytes from the daemon" % MAX_LINE_BYTES)
            if self._socket is None:
                raise DaemonUnavailable("the connection is closed", self.socket_path)
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise Timeout("timed out waiting for the daemon")
            readable, _, _ = select.select([self._socket], [], [], wait)
            if not readable:
                continue
            try:
                chunk = self._socket.recv(65536)
            except BlockingIOError:
                continue
            except OSError as error:
                raise DaemonUnavailable("the daemon closed the connection (%s)" % error, self.socket_path) from None
            if not chunk:
                raise DaemonUnavailable("the daemon closed the connection", self.socket_path)
            self._buffer += chunk

    def _round_trip(self, request, reply_class, timeout):
        """Sends ``request`` and returns the first ``reply_class`` object; location messages that come
        meanwhile are kept for ``watch()``. An ``ERROR`` naming the request is raised (``_raise_error``)."""
        self._send(request)
        deadline = time.monotonic() + timeout
        request_class = request["class"]
        while True:
            message = self._read_message(deadline)
            kind = message.get("class")
            if kind == reply_class:
                return message
            if kind == "ERROR" and message.get("request") in (request_class, "?"):
                self._raise_error(message)
            if kind in ("TPV", "SKY", "STATE", "AUTHORIZATION", "ERROR") and self._watching:
                self._pending.append(message)

    def _raise_error(self, message):
        request = message.get("request", "?")
        text = message.get("message", "")
        if text.startswith("not authorized") or text.startswith("not in use") or text.startswith("permission denied"):
            status = self._authorization.status if self._authorization else "notDetermined"
            raise NotAuthorized(status, text)
        if request == "POLL":
            next_report_in = message.get("nextReportIn")
            if text.startswith("no fix"):
                raise NoFix(text, next_report_in)
            if next_report_in is not None:
                raise Paced(text, next_report_in)
        raise DaemonError(request, text)

    # MARK: authorization

    @property
    def authorization(self):
        """The last ``Authorization`` the daemon sent this connection (None before any)."""
        return self._authorization

    @property
    def authorization_status(self):
        """The authorization status as last told (``notDetermined`` before any request; Core Location's
        ``authorizationStatus``). ``refresh_authorization()`` asks the daemon again."""
        return self._authorization.status if self._authorization else "notDetermined"

    @property
    def accuracy_authorization(self):
        """``"full"`` or ``"reduced"`` when authorized, else None (Core Location's ``accuracyAuthorization``)."""
        return self._authorization.accuracy if self._authorization else None

    def refresh_authorization(self, timeout=10.0):
        """Asks the daemon for this client's authorization as it stands (``AUTHORIZATION``).
        Returns the ``Authorization``; never raises NotAuthorized."""
        return Authorization(self._round_trip({"class": "AUTHORIZATION"}, "AUTHORIZATION", timeout + REPLY_GRACE_PERIOD))

    def request_authorization(self, kind="once", accuracy="full", timeout=AUTHORIZATION_TIMEOUT):
        """Asks for authorization (``AUTHORIZE``) and waits for the ``AUTHORIZATION`` that settles it.

        Under ``access = ask`` the daemon sends it once an agent answered (or its ask-timeout passed).

        Args:
          kind: ``"once"`` (this connection only, "Allow Once"), ``"whenInUse"`` (remembered, used while the
            user has an active login session; for a program outside every login session, such as a system
            service, while it runs) or ``"always"`` (remembered, used always).
          accuracy: ``"full"`` or ``"reduced"``: the most precise this client wants.
          timeout: seconds to wait for the decision (plus a grace period).
        Returns: the ``Authorization`` (authorized).
        Raises: NotAuthorized(status, reason) when refused; Timeout; DaemonError; DaemonUnavailable.
        """
        wire_kind = _KINDS.get(kind)
        if wire_kind is None:
            raise ValueError("kind must be 'once', 'whenInUse' or 'always', not %r" % (kind,))
        if accuracy not in ("full", "reduced"):
            raise ValueError("accuracy must be 'full' or 'reduced', not %r" % (accuracy,))
        request = {"class": "AUTHORIZE", "authorization": wire_kind, "accuracy": accuracy}
        if self.name:
            request["name"] = self.name
        authorization = Authorization(self._round_trip(request, "AUTHORIZATION", timeout + REPLY_GRACE_PERIOD))
        if not authorization.is_authorized:
            raise NotAuthorized(authorization.status, authorization.reason)
        return authorization

    def request_when_in_use_authorization(self, accuracy="full", timeout=AUTHORIZATION_TIMEOUT):
        """Core Location's ``requestWhenInUseAuthorization()``: ``request_authorization("whenInUse")``."""
        return self.request_authorization("whenInUse", accuracy, timeout)

    def request_always_authorization(self, accuracy="full", timeout=AUTHORIZATION_TIMEOUT):
        """Core Location's ``requestAlwaysAuthorization()``: ``request_authorization("always")`` (one
        question to the agent; for a client authorized When In Use, the upgrade)."""
        return self.request_authorization("always", accuracy, timeout)

    def request_temporary_full_accuracy(self, purpose_key, timeout=AUTHORIZATION_TIMEOUT):
        """Asks for full accuracy for this connection, citing a purpose key that the daemon's config
        declares for this client (``FULLACCURACY``; Core Location's
        ``requestTemporaryFullAccuracyAuthorization(withPurposeKey:)``). The agent sees the purpose text.

        Returns: the ``Authorization`` now in force: ``accuracy`` ``"full"`` when granted, still
          ``"reduced"`` when the agent refused.
        Raises: DaemonError when the key is not declared for this client; NotAuthorized when not
          authorized at all; Timeout.
        """
        message = self._round_trip({"class": "FULLACCURACY", "purposeKey": purpose_key}, "AUTHORIZATION",
                                   timeout + REPLY_GRACE_PERIOD)
        authorization = Authorization(message)
        if not authorization.is_authorized:
            raise NotAuthorized(authorization.status, authorization.reason)
        return authorization

    # MARK: locations

    def request_location(self, timeout=10.0):
        """One fresh location: the first fix after the request (``POLL``; Core Location's
        ``requestLocation()``).

        Args: timeout: seconds to wait for a fix, more than 0 and at most 300.
        Returns: a ``Location``.
        Raises: NoFix (none in time; at reduced accuracy with ``next_report_in``); Paced (reduced accuracy,
          the next report not due within ``timeout``); NotAuthorized; DaemonError; Timeout.
        """
        reply = self._round_trip({"class": "POLL", "timeout": timeout}, "POLL", timeout + REPLY_GRACE_PERIOD)
        tpvs = reply.get("tpv") if isinstance(reply.get("tpv"), list) else []
        location = Location.from_tpv(tpvs[0]) if tpvs else None
        if location is None:
            raise ProtocolMismatch("POLL reply without a position")
        return location

    def watch(self, min_interval=0.0, distance_filter=0.0, timeout=None, states=False):
        """Subscribes (``WATCH``) and yields each ``Location`` as it comes (Core Location's
        ``startUpdatingLocation()`` with ``distanceFilter``).

        Args:
          min_interval: at most one location per this many seconds (full accuracy only).
          distance_filter: metres; only locations at least this far from the last delivered one.
          timeout: seconds to wait for each next item before raising Timeout; None waits forever.
          states: also yield a ``FixState`` when the fix is lost or comes back, and when nothing comes for now though
            the program is authorized (``FixState.waiting``, with when the next report is due: ``next_report_in``).
        Raises: NotAuthorized when refused, or when the authorization is lost while streaming;
          DaemonError; DaemonUnavailable when the daemon goes away; Timeout.
        The subscription ends when the generator is closed (``stop_updating_location()``).
        """
        request = {"class": "WATCH", "enable": True}
        if min_interval:
            request["minInterval"] = min_interval
        if distance_filter:
            request["distanceFilter"] = distance_filter
        self._round_trip(request, "WATCH", 10 + REPLY_GRACE_PERIOD)
        self._watching = True
        try:
            while True:
                deadline = None if timeout is None else time.monotonic() + timeout
                message = self._pending.popleft() if self._pending else self._read_message(deadline)
                kind = message.get("class")
                if kind == "TPV":
                    location = Location.from_tpv(message)
                    if location is not None:
                        yield location
                elif kind == "STATE":
                    if states:
                        yield FixState(message)
                elif kind == "AUTHORIZATION":
                    authorization = Authorization(message)
                    if not authorization.is_authorized:
                        raise NotAuthorized(authorization.status, authorization.reason)
                elif kind == "ERROR" and message.get("request") in ("WATCH", "?"):
                    self._raise_error(message)
        finally:
            self._watching = False

    def locations(self, min_interval=0.0, distance_filter=0.0, timeout=None):
        """The locations as they come: ``watch()`` without fix states."""
        return self.watch(min_interval=min_interval, distance_filter=distance_filter, timeout=timeout)

    def stop_updating_location(self):
        """Ends the subscription (``WATCH`` with ``enable`` false; Core Location's
        ``stopUpdatingLocation()``)."""
        self._watching = False
        self._pending.clear()
        self._round_trip({"class": "WATCH", "enable": False}, "WATCH", 10 + REPLY_GRACE_PERIOD)
        # Locations already on their way before the daemon read the request are not for anyone now.
        self._pending.clear()

    # MARK: the daemon

    def status(self, timeout=10.0):
        """The daemon's state (``STATUS``) as a dict: ``mode``, ``clients``, ``receivers``."""
        return self._round_trip({"class": "STATUS"}, "STATUS", timeout)
