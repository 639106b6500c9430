"""Scripts/faults: the state directory's filesystem full (grant store, audit files) and the wall clock
stepped. Real faults: a tiny tmpfs mounted on the state directory and filled; libfaketime (Debian's
faketime) stepping CLOCK_REALTIME under the daemon while the monotonic clocks run on."""
import errno, glob, json, os, select, subprocess, sys, tempfile, time

from daemonrun import Client, Daemon, shared_dir, verdict

LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
BASE = ("[daemon]\nsocket = DIR/locationd.sock\nstate-directory = DIR/state\nlog-level = info\nclient-timeout = %s\n\n"
        "[receiver demo]\ntype = replay\nfile = %s\nrate = 2\nloop = yes\n\n")


def capture():
    """A real capture with a valid fix in every epoch (5 Hz; replayed at rate 2: 10 fixes a second)."""
    return os.path.join(shared_dir(), "nmea-logs", "quectel-l76k-nmea.log")


def mount_tmpfs(path, size):
    os.makedirs(path, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0700" % size, "tmpfs", path], check=True)


def fill(path):
    """Writes DIR/filler until the filesystem is full; returns its size."""
    written = 0
    with open(os.path.join(path, "filler"), "wb", buffering=0) as f:
        while True:
            try:
                written += f.write(b"\0" * 4096)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                return written


def run_as(uid, code, *args):
    """python3 CODE ARGS as uid (and gid) `uid`, no groups; its standard output."""
    return subprocess.run(["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups", sys.executable, "-c", code]
                          + [str(a) for a in args], capture_output=True, text=True, timeout=60).stdout


CLIENT = """
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1]); f = s.makefile("rb")
f.readline()
s.sendall(b'{"class":"AUTHORIZE","authorization":"once"}\\n{"class":"WATCH"}\\n')
n = 0
while n < int(sys.argv[2]):
    m = json.loads(f.readline())
    n += m.get("class") == "TPV"
print(n)
"""


def tpvs_since(watcher_client, seconds):
    """TPVs read by a watching client in the next `seconds` (what it had not read yet is dropped first), and
    the longest silence between two."""
    while watcher_client.line(0.01) is not None:
        pass
    end = time.monotonic() + seconds
    count, last, gap = 0, time.monotonic(), 0.0
    while time.monotonic() < end:
        line = watcher_client.line(max(0.01, end - time.monotonic()))
        if line and '"class":"TPV"' in line:
            now = time.monotonic()
            count, gap, last = count + 1, max(gap, now - last), now
    return count, max(gap, end - last)


def storage_daemon(bindir, size, extra=""):
    directory = tempfile.mkdtemp(prefix="locationd-faults.")
    os.chmod(directory, 0o755)  # the socket, for clients of other users
    state = os.path.join(directory, "state")
    mount_tmpfs(state, size)
    config = BASE % ("30s", capture()) + "[policy]\naccess = once\naccuracy = full\n" + extra
    return Daemon(bindir, directory, config).start(), state


def once_watcher(daemon):
    """A client with a one-time grant (the daemon's `access = once`), streaming."""
    watcher = Client(daemon.socket)
    watcher.line()
    watcher.request({"class": "AUTHORIZE", "authorization": "once"}, "AUTHORIZATION")
    watcher.request({"class": "WATCH"}, "WATCH")
    return watcher


def fault_state_full(bindir):
    daemon, state = storage_daemon(bindir, "256k")
    ok = True
    try:
        admin = Client(daemon.socket)
        admin.line()
        first = admin.request({"class": "GRANT", "user": "3001", "kind": "persistent", "accuracy": "full"}, "GRANTS")
        path = os.path.join(state, "grants.json")
        before = open(path, "rb").read()
        watcher = once_watcher(daemon)
        filled = fill(state)
        admin.send({"class": "GRANT", "user": "3002", "kind": "persistent", "accuracy": "full"})
        reply = admin.message("ERROR", 10) or {}
        after = open(path, "rb").read()
        leftovers = glob.glob(path + ".tmp-*")
        ok &= verdict(first is not None and "could not be written" in reply.get("message", ""),
                      "state full: the administrator's GRANT got ERROR \"%s\"" % reply.get("message"))
        ok &= verdict(after == before and not leftovers and json.loads(after) is not None,
                      "state full: grants.json unchanged (%d bytes, still valid JSON), %d temporary files left; %d KiB filler"
                      % (len(after), len(leftovers), filled // 1024))
        fixes, gap = tpvs_since(watcher, 3)
        status = Client(daemon.socket)
        status.line()
        answered = status.request({"class": "STATUS"}, "STATUS") is not None
        ok &= verdict(daemon.alive() and fixes >= 20 and gap < 1.0 and answered,
                      "state full: still serving: %d fixes in 3 s to a watcher (longest silence %.2f s), a new client's STATUS %s"
                      % (fixes, gap, "answered" if answered else "unanswered"))
        os.unlink(os.path.join(state, "filler"))
        again = admin.request({"class": "GRANT", "user": "3002", "kind": "persistent", "accuracy": "full"}, "GRANTS")
        ok &= verdict(again is not None and b'"3002"' in open(path, "rb").read(),
                      "state full: once space is back, the next GRANT is stored")
    finally:
        daemon.stop()
        subprocess.run(["umount", "-l", state])
    return ok


def fault_audit_full(bindir):
    daemon, state = storage_daemon(bindir, "256k")
    ok = True
    try:
        admin = Client(daemon.socket)
        admin.line()
        for i in range(3):
            admin.request({"class": "GRANT", "user": "3001", "kind": "once", "accuracy": "reduced"}, "GRANTS")
        watcher = once_watcher(daemon)
        time.sleep(0.5)
        fill(state)
        t0 = time.monotonic()
        # Records for the administrators' file (never budgeted) and for 20 users' files.
        for i in range(30):
            admin.send({"class": "REVOKE", "user": "3001"})
            admin.message("ERROR", 5)
        served = sum(int(run_as(3001 + i, CLIENT, daemon.socket, 3) or 0) for i in range(20))
        fixes, gap = tpvs_since(watcher, 2)
        elapsed = time.monotonic() - t0
        lost = [l for l in daemon.log().splitlines() if "cannot write the audit" in l]
        ok &= verdict(daemon.alive() and served == 60 and gap < 1.0,
                      "audit full: fixes kept flowing: 20 clients of 20 users got their 3 fixes each (%d), a watcher %d in the last 2 s "
                      "(longest silence %.2f s) of %.0f s" % (served, fixes, gap, elapsed))
        ok &= verdict(len(lost) == 1, "audit full: the loss logged %d time(s)%s" % (len(lost), (": " + lost[0][:160]) if lost else ""))
        os.unlink(os.path.join(state, "filler"))
        admin.request({"class": "GRANT", "user": "3001", "kind": "once", "accuracy": "reduced"}, "GRANTS")
        time.sleep(0.5)
        broken, records = 0, 0
        for name in glob.glob(os.path.join(state, "audit*.jsonl*")):
            for line in open(name, "rb").read().splitlines():
                records += 1
                try:
                    json.loads(line)
                except ValueError:
                    broken += 1
        last = open(os.path.join(state, "audit.jsonl"), "rb").read().splitlines()[-1]
        again = [l for l in daemon.log().splitlines() if "audit file is written again" in l]
        ok &= verdict(broken == 0 and b'"grant"' in last and len(again) == 1,
                      "audit full: %d records on disk, %d broken lines; once space is back the next record is written, and the log says%s"
                      % (records, broken, (": " + again[0][:160]) if again else " nothing"))
    finally:
        daemon.stop()
        subprocess.run(["umount", "-l", state])
    return ok


def step(path, offset):
    with open(path + ".new", "w") as f:
        f.write(offset + "\n")
    os.replace(path + ".new", path)


def rdhup(client):
    """True once the daemon closed `client`'s connection, read or not (POLLRDHUP)."""
    p = select.poll()
    p.register(client.sock, select.POLLRDHUP | select.POLLHUP)
    return any(ev & (select.POLLRDHUP | select.POLLHUP) for _, ev in p.poll(0))


def fault_clock(bindir):
    """Steps of +3 h, -3 h, +1 h under a running daemon. libfaketime also shifts absolute timerfd deadlines
    by its offset whatever the timer's clock (libfaketime issue #378: it cannot tell a CLOCK_MONOTONIC
    timerfd from a CLOCK_REALTIME one), so under its negative offsets the daemon's monotonic timers would
    stall for an artefact no real step causes; the timeouts are therefore measured across the forward step,
    and the fix-driven durations (grant lifetime, pacing) across all three."""
    directory = tempfile.mkdtemp(prefix="locationd-faults.")
    os.chmod(directory, 0o755)
    clock = os.path.join(directory, "faketime")
    step(clock, "+0")
    env = dict(os.environ, LD_PRELOAD=LIBFAKETIME, FAKETIME_TIMESTAMP_FILE=clock, FAKETIME_DONT_FAKE_MONOTONIC="1",
               FAKETIME_CACHE_DURATION="1")
    config = (BASE % ("4s", capture()) + "[policy]\naccess = once\naccuracy = full\nonce-lifetime = 20s\nask-timeout = 4s\n"
              "reduced-interval = 4s\n\n[client asker]\nuser = 3103\naccess = ask\n")
    # Started through env(1): exec'd straight from Python with libfaketime preloaded, the daemon saw no
    # arguments (it read /etc/locationd/locationd.conf); through a preloaded env(1) it sees them.
    daemon = Daemon(bindir, directory, config, env=env, launcher=["env"]).start()
    ok = True
    try:
        agent = Client(daemon.socket)
        agent.line()
        agent.request({"class": "AGENT"}, "AGENT")       # registered, reads, never answers
        once = Client(daemon.socket)
        once.line()
        granted = once.request({"class": "AUTHORIZE", "authorization": "once"}, "AUTHORIZATION")
        t_grant = time.monotonic()
        once.request({"class": "WATCH"}, "WATCH")
        reduced = Client(daemon.socket)
        reduced.line()
        reduced.request({"class": "AUTHORIZE", "authorization": "once", "accuracy": "reduced"}, "AUTHORIZATION")
        reduced.request({"class": "WATCH"}, "WATCH")
        t0 = time.monotonic()
        steps = [(1.0, "+3h"), (9.0, "-3h"), (14.0, "+1h")]
        silent = asker = t_silent = None
        reports, ended, cut = [], None, None
        while time.monotonic() - t0 < 23:
            now = time.monotonic()
            while steps and now - t0 >= steps[0][0]:
                step(clock, steps.pop(0)[1])
            if silent is None and now - t0 >= 2.2:
                # Armed 3 h ahead (libfaketime re-reads its file within 1 s): a reader that stops reading,
                # a question no agent answers, and a decision audited at the stepped time.
                silent = Client(daemon.socket)
                silent.line()
                silent.send({"class": "AUTHORIZE", "authorization": "once"})
                silent.send({"class": "WATCH"})
                t_silent = time.monotonic()
                asker = subprocess.Popen(["setpriv", "--reuid=3103", "--regid=3103", "--clear-groups", sys.executable, "-c",
                                          ASKER, daemon.socket], stdout=subprocess.PIPE, text=True)
            for client, sink in ((once, "once"), (reduced, "reduced"), (agent, "agent")):
                line = client.line(0.02)
                while line:
                    m = json.loads(line)
                    if sink == "reduced" and m.get("class") == "TPV":
                        reports.append(time.monotonic())
                    if sink == "once" and m.get("class") == "AUTHORIZATION" and m.get("status") != "authorizedOnce" and ended is None:
                        ended = time.monotonic()
                    line = client.line(0)
            if silent is not None and cut is None and rdhup(silent):
                cut = time.monotonic()
        asked = json.loads(asker.communicate(timeout=30)[0] or "{}")
        # Did the daemon's wall clock move? Its audit records say when they were made.
        audit = [json.loads(l) for f in glob.glob(os.path.join(directory, "state", "audit*.jsonl"))
                 for l in open(f, "rb").read().splitlines()]
        skew = max((r.get("unix", 0) - time.time() for r in audit), default=0) / 3600
        ok &= verdict(granted and granted.get("status") == "authorizedOnce" and skew > 2.5,
                      "clock: libfaketime stepped the daemon's wall clock +3 h, -3 h, +1 h (an audit record made %.1f h ahead of the real time)" % skew)
        lifetime = (ended - t_grant) if ended else -1
        ok &= verdict(19.0 <= lifetime <= 21.5, "clock: a one-time grant of once-lifetime 20 s, made before the steps, ended after %.1f s" % lifetime)
        gaps = [b - a for a, b in zip(reports, reports[1:])]
        ok &= verdict(len(gaps) >= 4 and min(gaps) >= 3.5 and max(gaps) <= 5.0,
                      "clock: reduced reports (reduced-interval 4 s) came %s s apart" % ", ".join("%.1f" % g for g in gaps))
        ok &= verdict(cut is not None and 4.0 <= cut - t_silent <= 6.5,
                      "clock: a client reading nothing since the +3 h step was cut after %.1f s (client-timeout 4 s)" % ((cut - t_silent) if cut else -1))
        waited = asked.get("waited", -1)
        ok &= verdict(3.5 <= waited <= 5.5 and asked.get("status") == "denied",
                      "clock: a question asked after the +3 h step, never answered, was refused after %.1f s (ask-timeout 4 s): %s"
                      % (waited, asked.get("reason")))
        ok &= verdict(daemon.alive(), "clock: daemon running")
    finally:
        daemon.stop()
    return ok


ASKER = """
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect(sys.argv[1]); f = s.makefile("rb")
f.readline()
t = time.monotonic()
s.sendall(b'{"class":"AUTHORIZE","authorization":"once"}\\n')
while True:
    m = json.loads(f.readline())
    if m.get("class") == "AUTHORIZATION":
        print(json.dumps({"waited": time.monotonic() - t, "status": m.get("status"), "reason": m.get("reason")}))
        break
"""
