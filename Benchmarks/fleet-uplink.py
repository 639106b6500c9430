#!/usr/bin/env python3
"""Fleet benchmark (issue 17): N locationd daemons, each with a serial receiver on a pseudo-terminal fed
1 Hz NMEA with the current time, publish TPV reports through their MQTT uplink to one mosquitto; one
mosquitto_sub counts every report and its delay (receipt time minus the fix time the NMEA carried).

Prints: reports expected and received per second of the measured window, messages lost (goal 0),
p50/p99/max delay, and each daemon's CPU (% of one core) and RSS.

Run from the package root after `swift build -c release` (or pass --binary):
    python3 Benchmarks/fleet-uplink.py [--daemons 50] [--seconds 60] [--binary .build/release/locationd]
Needs mosquitto and mosquitto-clients. Standard library only.
"""
import argparse, calendar, os, shutil, signal, socket, subprocess, sys, tempfile, threading, time


def checksum(body):
    c = 0
    for ch in body.encode():
        c ^= ch
    return "%02X" % c


def epoch_sentences(t, lat, lon):
    """GGA and RMC for wall time t (Unix seconds), position in degrees."""
    g = time.gmtime(t)
    hms = "%02d%02d%05.2f" % (g.tm_hour, g.tm_min, g.tm_sec + (t % 1))
    date = "%02d%02d%02d" % (g.tm_mday, g.tm_mon, g.tm_year % 100)
    la = "%02d%07.4f,%s" % (int(abs(lat)), (abs(lat) % 1) * 60, "N" if lat >= 0 else "S")
    lo = "%03d%07.4f,%s" % (int(abs(lon)), (abs(lon) % 1) * 60, "E" if lon >= 0 else "W")
    out = []
    for body in ("GPGGA,%s,%s,%s,1,08,0.9,45.0,M,47.0,M,," % (hms, la, lo),
                 "GPRMC,%s,A,%s,%s,0.5,90.0,%s,,,A" % (hms, la, lo, date)):
        out.append("$%s*%s\r\n" % (body, checksum(body)))
    return "".join(out).encode()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemons", type=int, default=50)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--binary", default=".build/release/locationd")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="locationd-fleet-")
    procs, daemons = [], []
    try:
        port = free_port()
        with open(work + "/mosquitto.conf", "w") as f:
            f.write("user root\nlistener %d 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 100000\n" % port)
        procs.append(subprocess.Popen(["mosquitto", "-c", work + "/mosquitto.conf"], stdout=subprocess.DEVNULL,
                                      stderr=open(work + "/mosquitto.log", "w"), preexec_fn=restore_signals))
        time.sleep(0.5)
        received = open(work + "/received.txt", "w")
        procs.append(subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-q", "1", "-t", "fleet/+",
                                       "-F", "%U %t %p"], stdout=received, preexec_fn=restore_signals))
        time.sleep(0.5)
        masters = []
        for i in range(a.daemons):
            master, slave = os.openpty()
            masters.append(master)
            d = "%s/d%d" % (work, i)
            os.makedirs(d)
            with open(d + "/locationd.conf", "w") as f:
                f.write("[daemon]\nsocket = %s/s.sock\nstate-directory = %s/state\nlog-level = notice\n\n"
                        "[receiver gnss]\ntype = serial\npath = %s\nspeed = 9600\n\n[policy]\naccess = deny\n\n"
                        # The uplinks are the daemon's own service to the policy: this rule lets them have
                        # full accuracy while every client is denied.
                        "[client uplinks]\nexecutable = %s\naccess = always\naccuracy = full\n\n"
                        "[uplink fleet]\ntype = mqtt\nbroker = mqtt://127.0.0.1:%d\nclient-id = van%d\ntopic = fleet/van%d\n"
                        "format = tpv\naccuracy = full\n" % (d, d, os.ttyname(slave), os.path.realpath(a.binary), port, i, i))
            daemons.append(subprocess.Popen([a.binary, "--config", d + "/locationd.conf"], stdout=subprocess.DEVNULL,
                                            stderr=open(d + "/daemon.log", "w"), preexec_fn=restore_signals))
            os.close(slave)
        written = []  # (second, fix time) of each epoch written to every pty
        stop = threading.Event()

        def feed():
            while not stop.is_set():
                t = time.time()
                time.sleep(1 - (t % 1))
                t = time.time()
                data = epoch_sentences(t, -27.2107, 153.052)
                for m in masters:
                    try:
                        os.write(m, data)
                    except OSError:
                        pass
                written.append(round(t, 2))

        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        time.sleep(a.warmup)
        start_cpu = [cpu_seconds(p.pid) for p in daemons]
        start = time.time()
        time.sleep(a.seconds)
        end = time.time()
        end_cpu = [cpu_seconds(p.pid) for p in daemons]
        rss = [rss_kib(p.pid) for p in daemons]
        time.sleep(3)  # reports of the window's last epochs still on their way
        stop.set()
        received.flush()
        window = [t for t in written if start <= t < end]
        expected = len(window) * a.daemons
        got, delays = set(), []
        with open(work + "/received.txt") as f:
            for line in f:
                parts = line.split(" ", 2)
                if len(parts) < 3 or '"time":"' not in parts[2]:
                    continue
                iso = parts[2].split('"time":"', 1)[1].split('"', 1)[0]
                fix = calendar.timegm(time.strptime(iso[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + iso[19:23])
                if not (start - 0.01 <= fix < end):
                    continue
                key = (parts[1], round(fix, 2))
                if key in got:
                    continue
                got.add(key)
                delays.append((float(parts[0]) - fix) * 1000)
        lost = expected - len(got)
        print("daemons %d, window %.0f s, epochs %d, reports expected %d, received %d, lost %d"
              % (a.daemons, end - start, len(window), expected, len(got), lost))
        print("delay ms: p50 %.1f  p99 %.1f  max %.1f" % (percentile(delays, 50), percentile(delays, 99), max(delays or [float("nan")])))
        cpu = [(e - s) / (end - start) * 100 for s, e in zip(start_cpu, end_cpu)]
        print("daemon CPU %% of one core: min %.2f  median %.2f  max %.2f" % (min(cpu), percentile(cpu, 50), max(cpu)))
        print("daemon RSS MiB: min %.1f  median %.1f  max %.1f" % (min(rss) / 1024, percentile(rss, 50) / 1024, max(rss) / 1024))
        for i, (c, r) in enumerate(zip(cpu, rss)):
            print("  van%-3d CPU %5.2f %%  RSS %5.1f MiB" % (i, c, r / 1024))
        return 0 if lost == 0 else 1
    finally:
        for p in procs + daemons:
            p.send_signal(signal.SIGKILL)
            p.wait()
        shutil.rmtree(work, ignore_errors=True)


def restore_signals():
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


if __name__ == "__main__":
    sys.exit(main())
