"""The Python client against the real daemon on the bundled capture (issue 33).

    python3 -m unittest discover -s clients/python/tests -v
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
import unittest

from harness import CLIENT, ROOT, USER, Agent, Daemon, decoded_fixes, run_cli

import locationd
from locationd.location import HORIZONTAL_68_PER_95

FULL_FOR_ME = """
[client me]
user = %s
access = always
accuracy = full
purpose.Navigation = Turn-by-turn directions need your exact position.
""" % USER


class Checks(unittest.TestCase):
    def assert_capture_fix(self, location):
        """The location is one of the capture's fixes, value for value, as `locationctl decode` gives it."""
        self.assertIsInstance(location, locationd.Location)
        stamp = location.raw["time"]
        expected = decoded_fixes().get(stamp)
        self.assertIsNotNone(expected, "no fix at %s in the capture" % stamp)
        self.assertEqual(location.accuracy, "full")
        self.assertEqual(location.lat, expected["lat"])
        self.assertEqual(location.lon, expected["lon"])
        self.assertEqual(location.alt_hae, expected.get("altHAE"))
        self.assertEqual(location.alt_msl, expected.get("altMSL"))
        self.assertEqual(location.speed, expected.get("speed"))
        self.assertEqual(location.track, expected.get("track"))
        self.assertAlmostEqual(location.horizontal_accuracy, expected["eph"] * HORIZONTAL_68_PER_95, places=6)
        self.assertEqual(location.time.utcoffset().total_seconds(), 0)
        self.assertEqual(location.time.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (location.time.microsecond // 1000),
                         stamp)
        return expected


class AuthorizedByRule(Checks):
    """A [client] rule for this user: full accuracy without asking anyone."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("access = deny\naccuracy = full", FULL_FOR_ME)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def manager(self):
        return locationd.LocationManager(self.daemon.socket_path, name="python tests")

    def test_capture_is_decoded(self):
        fixes = decoded_fixes()
        self.assertGreater(len(fixes), 10)
        # The capture was made in Brisbane on 2007-04-08 (its header).
        for stamp, fix in fixes.items():
            self.assertTrue(stamp.startswith("2007-04-08T"), stamp)
            self.assertAlmostEqual(fix["lat"], -27.21, places=1)
            self.assertAlmostEqual(fix["lon"], 153.05, places=1)

    def test_status_before_asking(self):
        with self.manager() as manager:
            self.assertEqual(manager.version["proto_major"], 1)
            # Nothing told yet; asked, the daemon says the rule allows always.
            self.assertEqual(manager.authorization_status, "notDetermined")
            self.assertIsNone(manager.accuracy_authorization)
            authorization = manager.refresh_authorization()
            self.assertEqual(authorization.status, "authorizedPersistent")
            self.assertIn("[client me]", authorization.reason)
            self.assertEqual(manager.accuracy_authorization, "full")

    def test_request_location(self):
        with self.manager() as manager:
            authorization = manager.request_when_in_use_authorization()
            self.assertTrue(authorization.is_authorized, authorization)
            self.assertEqual(manager.accuracy_authorization, "full")
            self.assertEqual(manager.authorization_status, authorization.status)
            location = manager.request_location(timeout=10)
            self.assert_capture_fix(location)

    def test_watch_streams_the_capture(self):
        with self.manager() as manager:
            manager.request_authorization("once")
            self.assertEqual(manager.authorization_status, "authorizedPersistent")   # the rule's, more than asked
            received = []
            for location in manager.watch(timeout=10):
                self.assert_capture_fix(location)
                received.append(location.raw["time"])
                if len(received) == 5:
                    break
            self.assertEqual(len(set(received)), 5, received)
            manager.stop_updating_location()
            # The connection still answers after the subscription ended.
            self.assert_capture_fix(manager.request_location(timeout=10))

    def test_min_interval_paces(self):
        with self.manager() as manager:
            manager.request_authorization("once")
            times = []
            for location in manager.watch(min_interval=1.0, timeout=10):
                times.append(location.time)
                if len(times) == 3:
                    break
            # At most one a second of the daemon's time; the replay runs at 10x, so every ~10 fixes one.
            for earlier, later in zip(times, times[1:]):
                gap = abs((later - earlier).total_seconds())
                self.assertTrue(gap >= 1.0 * 10 * 0.9 or gap > 100, "fixes %s s apart" % gap)

    def test_temporary_full_accuracy_with_full_accuracy_is_unchanged(self):
        with self.manager() as manager:
            manager.request_authorization("once")
            self.assertEqual(manager.request_temporary_full_accuracy("Navigation").accuracy, "full")

    def test_socket_from_environment(self):
        saved = os.environ.get("LOCATIOND_SOCKET")
        os.environ["LOCATIOND_SOCKET"] = self.daemon.socket_path
        try:
            with locationd.LocationManager() as manager:
                self.assertEqual(manager.socket_path, self.daemon.socket_path)
        finally:
            if saved is None:
                del os.environ["LOCATIOND_SOCKET"]
            else:
                os.environ["LOCATIOND_SOCKET"] = saved

    def test_no_daemon(self):
        with self.assertRaises(locationd.DaemonUnavailable):
            locationd.LocationManager(os.path.join(self.daemon.directory, "nothing.sock"))

    def test_cli_get(self):
        done = run_cli(self.daemon.socket_path, "get", "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assert_capture_fix(locationd.Location.from_tpv(json.loads(done.stdout)))
        human = run_cli(self.daemon.socket_path, "get")
        self.assertEqual(human.returncode, 0, human.stderr)
        fields = human.stdout.split()
        stamp = fields[0] + "T" + fields[1]
        expected = decoded_fixes()[stamp]
        self.assertEqual(fields[2], "%.7f" % expected["lat"])
        self.assertEqual(fields[3], "%.7f" % expected["lon"])
        self.assertEqual(fields[4], "±%.1f" % (expected["eph"] * HORIZONTAL_68_PER_95))
        self.assertTrue(human.stdout.rstrip().endswith("[demo]"), human.stdout)

    def test_cli_watch_count(self):
        done = run_cli(self.daemon.socket_path, "watch", "--count", "3", "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = [json.loads(line) for line in done.stdout.splitlines()]
        tpvs = [line for line in lines if line["class"] == "TPV"]
        self.assertEqual(len(tpvs), 3, done.stdout)
        for tpv in tpvs:
            self.assert_capture_fix(locationd.Location.from_tpv(tpv))

    def test_cli_status(self):
        done = run_cli(self.daemon.socket_path, "status")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("authorization: authorizedPersistent, full accuracy (rule [client me] allows always)", done.stdout)
        self.assertIn("receiver demo: replay", done.stdout)

    def test_cli_usage(self):
        self.assertEqual(run_cli(self.daemon.socket_path, "get", "--timeout", "0").returncode, 64)
        self.assertEqual(run_cli(self.daemon.socket_path, "fly").returncode, 64)
        gone = run_cli(os.path.join(self.daemon.directory, "nothing.sock"), "get")
        self.assertEqual(gone.returncode, 69, gone.stderr)


class Denied(Checks):
    """No rule allows this user: the default denies."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("access = deny\naccuracy = full")

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def test_request_is_refused(self):
        with locationd.LocationManager(self.daemon.socket_path) as manager:
            with self.assertRaises(locationd.NotAuthorized) as refused:
                manager.request_authorization("once")
            self.assertIn(refused.exception.status, ("denied", "restricted"))
            self.assertTrue(refused.exception.reason)
            self.assertEqual(manager.authorization_status, refused.exception.status)

    def test_locations_without_authorization_are_refused(self):
        with locationd.LocationManager(self.daemon.socket_path) as manager:
            with self.assertRaises(locationd.NotAuthorized):
                manager.request_location(timeout=2)
            with self.assertRaises(locationd.NotAuthorized):
                next(manager.locations())

    def test_cli_exits_77(self):
        for command in (["get"], ["watch", "--count", "1"]):
            done = run_cli(self.daemon.socket_path, *command)
            self.assertEqual(done.returncode, 77, done.stderr)
            self.assertIn("not authorized", done.stderr)
            self.assertEqual(done.stdout, "")


class Reduced(Checks):
    """A rule for the Python interpreter (`interpreter = yes`) at reduced accuracy."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("access = deny\naccuracy = full\nreduced-interval = 15min", """
[client python]
executable = %s
interpreter = yes
access = always
accuracy = reduced
""" % os.path.realpath(sys.executable))

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def test_reduced_location_and_pacing(self):
        with locationd.LocationManager(self.daemon.socket_path) as manager:
            authorization = manager.request_authorization("once")
            self.assertEqual(authorization.accuracy, "reduced", authorization)
            self.assertEqual(manager.accuracy_authorization, "reduced")
            location = manager.request_location(timeout=10)
            self.assertEqual(location.accuracy, "reduced")
            for hidden in (location.alt_hae, location.alt_msl, location.speed, location.track, location.heading):
                self.assertIsNone(hidden)
            self.assertGreaterEqual(location.horizontal_accuracy, 2000)
            self.assertEqual(location.horizontal_accuracy, location.raw["eph"])
            # Within the reduction's bound of some fix of the capture (2 km grid, offset of ~grid/4).
            near = min(abs(location.lat - f["lat"]) + abs(location.lon - f["lon"]) for f in decoded_fixes().values())
            self.assertLess(near, 0.05)
            # The next report is due in 15 min: a second request is answered at once, paced.
            with self.assertRaises(locationd.Paced) as paced:
                manager.request_location(timeout=1)
            self.assertGreater(paced.exception.next_report_in, 800)
            # A purpose key the config does not declare: refused, no agent asked.
            with self.assertRaises(locationd.DaemonError) as refused:
                manager.request_temporary_full_accuracy("Undeclared")
            self.assertEqual(refused.exception.request, "FULLACCURACY")
        # The command line, the same program of the same user: paced too (exit 79, as locationctl's).
        second = run_cli(self.daemon.socket_path, "get", "--timeout", "1")
        self.assertEqual(second.returncode, 79, second.stderr)
        self.assertIn("reduced accuracy", second.stderr)


    def test_reduced_watch_is_told_when_the_next_report_is_due(self):
        with locationd.LocationManager(self.daemon.socket_path) as manager:
            manager.request_authorization("once")
            # The slot's report (when this program had none yet) and then when the next is due, or that alone: never
            # "no fix" while the receiver has one.
            waiting = None
            for item in manager.watch(states=True, timeout=10):
                if isinstance(item, locationd.FixState):
                    self.assertIsNotNone(item.waiting, item)
                    waiting = item
                    break
                self.assertEqual(item.accuracy, "reduced")
            self.assertEqual(waiting.waiting, "accuracyLimited", waiting)
            self.assertGreater(waiting.next_report_in, 0)
            self.assertLessEqual(waiting.next_report_in, 900)
            self.assertTrue(waiting.reason.startswith("reduced accuracy: the next report is due in "), waiting)
            self.assertAlmostEqual(waiting.next_report_at - time.monotonic(), waiting.next_report_in, delta=5)
            from locationd.__main__ import waiting_line
            self.assertTrue(waiting_line(waiting).startswith("waiting: reduced accuracy, next location in "), waiting_line(waiting))


class AskedAgent(Checks):
    """`access = ask`: the request waits for an agent's answer; WATCH comes after it and works."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("access = ask\naccuracy = full\nask-timeout = 10s", """
[client python]
executable = %s
interpreter = yes
access = ask
accuracy = full
purpose.Navigation = Turn-by-turn directions need your exact position.
""" % os.path.realpath(sys.executable))

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def test_not_determined_until_asked(self):
        with locationd.LocationManager(self.daemon.socket_path) as manager:
            self.assertEqual(manager.refresh_authorization().status, "notDetermined")
            self.assertEqual(manager.authorization_status, "notDetermined")
            self.assertIsNone(manager.accuracy_authorization)

    def test_agent_allows_once(self):
        agent = Agent(self.daemon.socket_path, "allowOnce")
        try:
            with locationd.LocationManager(self.daemon.socket_path, name="asked test") as manager:
                authorization = manager.request_authorization("once")
                self.assertEqual(authorization.status, "authorizedOnce")
                self.assertEqual(authorization.accuracy, "full")
                self.assertEqual(agent.asks[-1]["request"], "once")
                self.assertEqual(agent.asks[-1]["client"]["name"], "asked test")
                self.assertEqual(agent.asks[-1]["client"]["pid"], os.getpid())
                location = next(manager.locations(timeout=10))
                self.assert_capture_fix(location)
        finally:
            agent.close()

    def test_agent_denies(self):
        agent = Agent(self.daemon.socket_path, "deny")
        try:
            with locationd.LocationManager(self.daemon.socket_path) as manager:
                with self.assertRaises(locationd.NotAuthorized) as refused:
                    manager.request_authorization("once")
                self.assertEqual(refused.exception.status, "denied")
        finally:
            agent.close()
        # A denial is remembered for this user's program (and the daemon is restarted by no one here):
        # the next request is refused without a question.
        with locationd.LocationManager(self.daemon.socket_path) as manager:
            with self.assertRaises(locationd.NotAuthorized):
                manager.request_authorization("once")
        # Clean up for the other tests: the administrator (this user is in admin-group) revokes it.
        with locationd.LocationManager(self.daemon.socket_path) as admin:
            admin._round_trip({"class": "REVOKE", "user": str(os.getuid())}, "GRANTS", 10)

    def test_agent_lowers_to_reduced_then_temporary_full_accuracy(self):
        agent = Agent(self.daemon.socket_path, "allowOnce", accuracy="reduced")
        try:
            with locationd.LocationManager(self.daemon.socket_path) as manager:
                self.assertEqual(manager.request_authorization("once").accuracy, "reduced")
                agent.accuracy = None
                full = manager.request_temporary_full_accuracy("Navigation")
                self.assertEqual(full.accuracy, "full")
                self.assertEqual(agent.asks[-1]["request"], "temporaryFullAccuracy")
                self.assertEqual(agent.asks[-1]["purposeKey"], "Navigation")
                self.assertIn("Turn-by-turn", agent.asks[-1].get("purpose", ""))
                self.assert_capture_fix(manager.request_location(timeout=10))
        finally:
            agent.close()

    def test_cli_get_waits_for_the_agent(self):
        agent = Agent(self.daemon.socket_path, "allowOnce")
        try:
            done = run_cli(self.daemon.socket_path, "get", "--json")
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assert_capture_fix(locationd.Location.from_tpv(json.loads(done.stdout)))
        finally:
            agent.close()


def _example(language):
    """The docs/PROTOCOL.md "Examples" code block in ``language`` (sh or python)."""
    with open(os.path.join(ROOT, "docs", "PROTOCOL.md")) as f:
        text = f.read()
    examples = text[text.index("\n## Examples"):]
    match = re.search(r"```%s\n(.*?)```" % language, examples, re.S)
    return match.group(1)


class ProtocolExamples(Checks):
    """docs/PROTOCOL.md's socat and Python examples, run as printed, under `access = ask` with an agent."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("access = ask\naccuracy = full\nask-timeout = 10s")

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def run_example(self, command):
        """Runs it until it printed a TPV with a position (at most 20 s); returns that TPV."""
        agent = Agent(self.daemon.socket_path, "allowOnce")
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                                   start_new_session=True)
        lines = []
        try:
            end = time.monotonic() + 20
            while time.monotonic() < end:
                line = process.stdout.readline()
                if not line:
                    break
                lines.append(line)
                if '"class": "TPV"' in line or '"class":"TPV"' in line or re.match(r"^\d{4}-\d\d-\d\dT", line):
                    return line, lines
            self.fail("no location from the example; it printed:\n%s%s" % ("".join(lines), process.stderr.read()
                                                                          if process.poll() is not None else ""))
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(5)
            process.stdout.close()
            process.stderr.close()
            agent.close()

    def test_watch_before_the_decision_is_refused(self):
        """Why the examples wait: a WATCH sent with the AUTHORIZE, before the agent answered, is refused."""
        # The agent holds its answer until the WATCH was refused: an agent answering at once can beat the
        # WATCH to the daemon (it did under AddressSanitizer), and then the WATCH is rightly served.
        agent = Agent(self.daemon.socket_path, "allowOnce", hold=True)
        try:
            with locationd.LocationManager(self.daemon.socket_path) as manager:
                manager._send({"class": "AUTHORIZE", "authorization": "once"})
                with self.assertRaises(locationd.NotAuthorized) as refused:
                    next(manager.locations())
                self.assertEqual(refused.exception.status, "notDetermined")
                agent.release()
                # The AUTHORIZATION that settles it comes once the agent answered; then a WATCH is served.
                deadline = time.monotonic() + 10
                while manager._read_message(deadline).get("class") != "AUTHORIZATION":
                    pass
                self.assertEqual(manager.authorization_status, "authorizedOnce")
                self.assert_capture_fix(next(manager.locations(timeout=10)))
        finally:
            agent.close()

    def test_python_example(self):
        code = _example("python").replace("/run/locationd/locationd.sock", self.daemon.socket_path)
        line, lines = self.run_example([sys.executable, "-u", "-c", code])
        stamp, lat, lon = line.split()[:3]
        expected = decoded_fixes()[stamp]
        self.assertEqual((float(lat), float(lon)), (expected["lat"], expected["lon"]))
        self.assertFalse(any("ERROR" in l for l in lines), lines)

    @unittest.skipUnless(os.path.exists("/usr/bin/socat"), "socat is not installed")
    def test_socat_example(self):
        script = _example("sh").replace("/run/locationd/locationd.sock", self.daemon.socket_path)
        line, lines = self.run_example(["bash", "-c", script])
        self.assert_capture_fix(locationd.Location.from_tpv(json.loads(line)))
        self.assertFalse(any('"class":"ERROR"' in l for l in lines), lines)


if __name__ == "__main__":
    unittest.main()
