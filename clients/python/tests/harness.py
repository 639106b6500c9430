"""Runs the real locationd binary on the bundled capture for the Python client's tests.

LOCATIOND_BINARY names the daemon (default: .build/debug/locationd of this checkout), LOCATIONCTL_BINARY
the locationctl beside it; the expected fixes come from `locationctl decode Demo/haicom-305N.log`, so the
tests compare what the daemon sent with the capture's own decoding, not with pasted numbers.
"""

import atexit
import grp
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

TESTS = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.dirname(TESTS)                      # clients/python: where the locationd package is
ROOT = os.path.dirname(os.path.dirname(CLIENT))      # the checkout
sys.path.insert(0, CLIENT)

BINARY = os.environ.get("LOCATIOND_BINARY") or os.path.join(ROOT, ".build", "debug", "locationd")
LOCATIONCTL = os.environ.get("LOCATIONCTL_BINARY") or os.path.join(os.path.dirname(BINARY), "locationctl")
CAPTURE = os.path.join(ROOT, "Demo", "haicom-305N.log")
USER = pwd.getpwuid(os.getuid()).pw_name
GROUP = grp.getgrgid(os.getgid()).gr_name

_decoded = None


def decoded_fixes():
    """The capture's fixes as `locationctl decode` prints them: {time: TPV} for every TPV with a position."""
    global _decoded
    if _decoded is None:
        out = subprocess.run([LOCATIONCTL, "decode", CAPTURE], check=True, stdout=subprocess.PIPE,
                             universal_newlines=True).stdout
        _decoded = {}
        for line in out.splitlines():
            message = json.loads(line)
            if message.get("class") == "TPV" and "lat" in message:
                _decoded[message["time"]] = message
    return _decoded


class Daemon:
    """locationd on a temporary config, socket and state directory, replaying the capture at 10x.

    ``policy`` is the [policy] section's body, ``clients`` any [client NAME] sections.
    """

    def __init__(self, policy, clients="", rate="10"):
        if not os.access(BINARY, os.X_OK):
            raise unittest.SkipTest("no daemon binary at %s (swift build, or set LOCATIOND_BINARY)" % BINARY)
        self.directory = tempfile.mkdtemp(prefix="locationd-py-")
        self.socket_path = os.path.join(self.directory, "locationd.sock")
        self.log_path = os.path.join(self.directory, "daemon.log")
        config = "\n".join([
            "[daemon]",
            "socket = %s" % self.socket_path,
            "state-directory = %s/state" % self.directory,
            "admin-group = %s" % GROUP,
            "log-level = debug",
            "",
            "[receiver demo]",
            "type = replay",
            "file = %s" % CAPTURE,
            "rate = %s" % rate,
            "loop = yes",
            "",
            "[policy]",
            policy,
            "",
            clients,
            "",
        ])
        self.config_path = os.path.join(self.directory, "locationd.conf")
        with open(self.config_path, "w") as f:
            f.write(config)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen([BINARY, "--config", self.config_path], stdout=subprocess.DEVNULL,
                                            stderr=log)
        atexit.register(self.stop)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            if self.process.poll() is not None:
                raise RuntimeError("locationd exited with %s:\n%s" % (self.process.returncode, self.log()))
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(self.socket_path)
                return
            except OSError:
                time.sleep(0.05)
            finally:
                probe.close()
        self.stop()
        raise RuntimeError("locationd did not listen within 10 s:\n%s" % self.log())

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


class Agent:
    """An agent speaking the protocol (AGENT, then ANSWER to each ASK) on its own connection and thread.

    ``answer`` is the answer to every question (``allowOnce``, ``allowAlways``, ``deny``, ...); every ASK
    received is kept in ``asks``. With ``hold``, each answer waits until ``release()``: a person who has not
    decided yet, for as long as a test needs, instead of an answer that races the client's next request.
    """

    def __init__(self, socket_path, answer, accuracy=None, hold=False):
        self.answer = answer
        self.accuracy = accuracy
        self.asks = []
        self.released = threading.Event()
        if not hold:
            self.released.set()
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.socket.connect(socket_path)
        self.file = self.socket.makefile("rwb")
        self.file.readline()                                      # VERSION
        self.file.write(b'{"class":"AGENT"}\n')
        self.file.flush()
        reply = json.loads(self.file.readline())
        if reply.get("class") != "AGENT":
            raise RuntimeError("not an agent: %r" % reply)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            for line in self.file:
                message = json.loads(line)
                if message.get("class") != "ASK":
                    continue
                self.asks.append(message)
                self.released.wait(30)
                answer = {"class": "ANSWER", "id": message["id"], "answer": self.answer}
                if self.accuracy:
                    answer["accuracy"] = self.accuracy
                self.file.write((json.dumps(answer) + "\n").encode())
                self.file.flush()
        except (OSError, ValueError):
            pass

    def release(self):
        """Lets a held agent answer (the question on screen now, and every later one)."""
        self.released.set()

    def close(self):
        self.released.set()
        try:
            self.socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.socket.close()
        self.thread.join(5)


def run_cli(socket_path, *arguments, timeout=30):
    """Runs `python3 -m locationd --socket PATH ARGUMENTS`; returns the CompletedProcess (text)."""
    # From clients/python as the working directory, not with PYTHONPATH: the daemon takes an interpreter
    # with PYTHON* variables in its environment for unverified (code injected), and then no `executable =`
    # rule matches it.
    return subprocess.run([sys.executable, "-m", "locationd", "--socket", socket_path] + list(arguments),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=timeout, cwd=CLIENT)


# A closing line that CI reads: "N passed, N failed", after unittest's own OK/FAILED.
_original_run = unittest.TextTestRunner.run


def _run_and_count(self, test):
    result = _original_run(self, test)
    failed = len(result.failures) + len(result.errors) + len(getattr(result, "unexpectedSuccesses", []))
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped - len(result.expectedFailures)
    if skipped:
        self.stream.write("%d skipped\n" % skipped)
    self.stream.write("%d passed, %d failed\n" % (passed, failed))
    self.stream.flush()
    return result


if not getattr(unittest.TextTestRunner.run, "_counts", False):
    _run_and_count._counts = True
    unittest.TextTestRunner.run = _run_and_count
