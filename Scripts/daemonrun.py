"""Shared by Scripts/soak and Scripts/faults: build the release binaries, run the real daemon on a
config in a temporary directory, talk to it over its socket as a plain client, read its /proc figures.
Standard library only."""
import json, os, socket, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def shared_dir():
    """../shared beside the clone (gpsd's captures), or $LOCATIOND_SHARED."""
    return os.environ.get("LOCATIOND_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))


def build():
    """The directory of the release binaries: $LOCATIOND_BIN, or `make build` (incremental; the Makefile's
    flags, so that the quick start's and the package's build is reused, not compiled again)."""
    if os.environ.get("LOCATIOND_BIN"):
        return os.environ["LOCATIOND_BIN"]
    subprocess.run(["make", "build"], cwd=ROOT, check=True, stdout=sys.stderr)
    out = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


def capture_epochs(bindir, capture):
    """The fix times of a capture, in order, as the daemon's own decoder reads them (TPVs with a position)."""
    out = subprocess.run([os.path.join(bindir, "locationctl"), "decode", capture], check=True,
                         capture_output=True, text=True).stdout
    times = []
    for line in out.splitlines():
        m = json.loads(line)
        if m.get("class") == "TPV" and "lat" in m:
            times.append(m["time"])
    return times


class Daemon:
    """The real locationd on `config` (text; DIR is replaced by the directory) in `directory`."""

    def __init__(self, bindir, directory, config, env=None, log_name="daemon.log", launcher=()):
        self.directory = directory
        self.socket = os.path.join(directory, "locationd.sock")
        self.config_path = os.path.join(directory, "locationd.conf")
        self.log_path = os.path.join(directory, log_name)
        with open(self.config_path, "w") as f:
            f.write(config.replace("DIR", directory))
        self.bindir = bindir
        self.env = env
        self.launcher = list(launcher)
        self.proc = None

    def start(self, timeout=15):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.launcher + [os.path.join(self.bindir, "locationd"), "--config", self.config_path],
                                     stdout=subprocess.DEVNULL, stderr=log, env=self.env)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("locationd exited with %s; log %s" % (self.proc.returncode, self.log_path))
            try:
                Client(self.socket, timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("locationd did not listen within %s s" % timeout)

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """SIGTERM (tests may have set it ignored for us, not for the daemon: it installs its own handler);
        SIGKILL after 5 s. Returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def rss_kib(self):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def fds(self):
        return len(os.listdir("/proc/%d/fd" % self.pid))

    def fd_targets(self):
        """What each open descriptor is: "socket", "anon_inode:[eventfd]", a path, ..., with counts."""
        targets = {}
        for fd in os.listdir("/proc/%d/fd" % self.pid):
            try:
                t = os.readlink("/proc/%d/fd/%s" % (self.pid, fd))
            except OSError:
                continue
            t = "socket" if t.startswith("socket:") else t
            targets[t] = targets.get(t, 0) + 1
        return targets


class Client:
    """A blocking newline-delimited JSON client of the daemon's socket, with timeouts."""

    def __init__(self, path, timeout=5):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buffer = b""
        self.received = b""

    def send(self, obj):
        self.sock.sendall((obj if isinstance(obj, str) else json.dumps(obj)).encode() + b"\n")

    def line(self, timeout=5):
        end = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = end - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return None
            except OSError:
                return None
            if not chunk:
                return None
            self.buffer += chunk
            self.received += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode("utf-8", "replace")

    def message(self, cls, timeout=5, where=None):
        """The next message of class `cls` (and for which `where(m)` holds), or None at the timeout."""
        end = time.monotonic() + timeout
        while True:
            line = self.line(max(0.0, end - time.monotonic()))
            if line is None:
                return None
            try:
                m = json.loads(line)
            except ValueError:
                continue
            if m.get("class") == cls and (where is None or where(m)):
                return m

    def request(self, obj, cls, timeout=5):
        self.send(obj)
        return self.message(cls, timeout)

    def close(self):
        self.sock.close()


def verdict(ok, text):
    """One result line: PASS or FAIL and the figures."""
    print(("PASS  " if ok else "FAIL  ") + text, flush=True)
    return ok
