"""Values the daemon reports: a location, an authorization, a change of the fix."""

import datetime
import time

# docs/PROTOCOL.md "Accuracy: 95 % on the wire, 68 % in LocationClient": eph and epv are gpsd's 95 %
# figures; Core Location's horizontalAccuracy is a 68 % radius.
HORIZONTAL_68_PER_95 = 0.61673
VERTICAL_68_PER_95 = 0.50739

AUTHORIZED_STATUSES = ("authorizedOnce", "authorizedWhenInUse", "authorizedPersistent")


def parse_time(text):
    """An ISO 8601 UTC time as the daemon writes it (``2007-04-08T09:53:05.802Z``) as an aware datetime.

    Returns None for None or a text not of that form.
    """
    if not isinstance(text, str):
        return None
    body = text[:-1] if text.endswith("Z") else text
    for pattern in ("%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.datetime.strptime(body, pattern).replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            pass
    return None


def _number(message, key):
    value = message.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


class Location:
    """One location report (a ``TPV`` with a position), in Core Location's terms and gpsd's units.

    Attributes (None when the daemon did not send it, never 0 for "unknown"):
      lat, lon            degrees, WGS84
      alt_hae, alt_msl    metres above the WGS84 ellipsoid / above mean sea level
      speed               metres per second over ground
      track               course over ground, degrees true
      heading             where the vehicle points, degrees true
      horizontal_accuracy metres, radius of 68 % confidence (``eph`` x 0.61673; at reduced accuracy the
                          daemon's bound ``eph`` as sent)
      vertical_accuracy   metres, 68 % (``epv`` x 0.50739)
      time                the fix's time, an aware ``datetime`` in UTC
      accuracy            ``"full"`` or ``"reduced"``: how precisely the policy let this client see it
      mode                1 no fix, 2 2D, 3 3D
      device              the receiver it came from
      raw                 the ``TPV`` object as received (a dict)
    """

    __slots__ = ("lat", "lon", "alt_hae", "alt_msl", "speed", "track", "heading", "horizontal_accuracy",
                 "vertical_accuracy", "time", "accuracy", "mode", "device", "raw")

    def __init__(self, tpv):
        self.raw = tpv
        self.lat = _number(tpv, "lat")
        self.lon = _number(tpv, "lon")
        self.alt_hae = _number(tpv, "altHAE")
        self.alt_msl = _number(tpv, "altMSL")
        self.speed = _number(tpv, "speed")
        self.track = _number(tpv, "track")
        self.heading = _number(tpv, "heading")
        self.accuracy = tpv.get("accuracy") if tpv.get("accuracy") in ("full", "reduced") else None
        eph = _number(tpv, "eph")
        if eph is None:
            self.horizontal_accuracy = None
        elif self.accuracy == "reduced":
            self.horizontal_accuracy = eph
        else:
            self.horizontal_accuracy = eph * HORIZONTAL_68_PER_95
        epv = _number(tpv, "epv")
        self.vertical_accuracy = None if epv is None else epv * VERTICAL_68_PER_95
        self.time = parse_time(tpv.get("time"))
        mode = tpv.get("mode")
        self.mode = mode if isinstance(mode, int) and not isinstance(mode, bool) else None
        device = tpv.get("device")
        self.device = device if isinstance(device, str) else None

    @staticmethod
    def from_tpv(tpv):
        """The location of a ``TPV`` object, or None when it holds no position (``mode`` 1)."""
        if not isinstance(tpv, dict) or _number(tpv, "lat") is None or _number(tpv, "lon") is None:
            return None
        return Location(tpv)

    def __repr__(self):
        return "Location(time=%s, lat=%r, lon=%r, horizontal_accuracy=%r, accuracy=%r)" % (
            self.time.isoformat() if self.time else None, self.lat, self.lon, self.horizontal_accuracy,
            self.accuracy)


class Authorization:
    """This client's authorization (an ``AUTHORIZATION`` object).

    Attributes:
      status    ``notDetermined``, ``denied``, ``restricted``, ``authorizedOnce``, ``authorizedWhenInUse``
                or ``authorizedPersistent`` (Core Location's ``authorizedAlways``)
      accuracy  ``"full"`` or ``"reduced"`` when authorized (Core Location's accuracy authorization)
      reason    why, in words
      in_use    False only for When In Use while the user has no active login session (nothing comes)
      standing  True when a standing approval gave this one-time grant without asking
      raw       the object as received
    """

    __slots__ = ("status", "accuracy", "reason", "in_use", "standing", "raw")

    def __init__(self, message):
        self.raw = message
        self.status = message.get("status") if isinstance(message.get("status"), str) else "notDetermined"
        self.accuracy = message.get("accuracy") if message.get("accuracy") in ("full", "reduced") else None
        self.reason = message.get("reason") if isinstance(message.get("reason"), str) else None
        self.in_use = message.get("inUse") is not False
        self.standing = message.get("standing") is True

    @property
    def is_authorized(self):
        """True for a one-time, When In Use or Always authorization."""
        return self.status in AUTHORIZED_STATUSES

    def __repr__(self):
        return "Authorization(status=%r, accuracy=%r, reason=%r)" % (self.status, self.accuracy, self.reason)


class FixState:
    """The fix was lost (``fix`` False, with the daemon's ``reason``) or came back (a ``STATE`` object); or, with
    ``waiting``, why nothing comes for now though the program is authorized, and until when (protocol 1.6).

    ``waiting``: None for a change of the fix; else the cause, in Core Location's words: ``"accuracyLimited"``
    (reduced accuracy, between two paced reports) or ``"insufficientlyInUse"`` (When In Use while the user has no
    active login session: nothing until one is active); a newer daemon may add causes (``reason`` says it in words).
    ``fix`` is then only what the program's messages last told it, no news of the fix.
    ``next_report_in``: seconds from the message until the next report is due at reduced accuracy (also on a reduced
    program's no-fix notice); None when not known. ``next_report_at``: the same as a ``time.monotonic()`` time.
    """

    __slots__ = ("fix", "reason", "waiting", "next_report_in", "next_report_at", "raw")

    def __init__(self, message, received=None):
        self.raw = message
        self.fix = message.get("fix") is True
        self.reason = message.get("reason") if isinstance(message.get("reason"), str) else None
        self.waiting = message.get("waiting") if isinstance(message.get("waiting"), str) else None
        wait = message.get("nextReportIn")
        self.next_report_in = float(wait) if isinstance(wait, (int, float)) and not isinstance(wait, bool) else None
        start = time.monotonic() if received is None else received
        self.next_report_at = None if self.next_report_in is None else start + self.next_report_in

    def __repr__(self):
        if self.waiting is not None:
            return "FixState(waiting=%r, next_report_in=%r, reason=%r)" % (self.waiting, self.next_report_in, self.reason)
        return "FixState(fix=%r, reason=%r)" % (self.fix, self.reason)
