#!/usr/bin/env python3
"""Regenerates the gpsd goldens: what the real gpsd (3.22, Debian 12) sends a watcher for a shared capture.

usage: regenerate.py CAPTURE [CAPTURE ...]   (names in ../shared/nmea-logs, e.g. skytraq-dgps.log)

For each capture: starts `gpsfake -1 -S -P PORT -c 0.2 CAPTURE` (gpsd on a pty, one pass, slow start), connects,
sends ?WATCH={"enable":true,"json":true}; and writes every line gpsd sends, byte for byte (CR LF kept), after a
header naming how it was made, to CAPTURE.gpsd. Run from this directory.
"""
import os, socket, subprocess, sys, time

here = os.path.dirname(os.path.abspath(__file__))
logs = os.path.join(here, "..", "..", "..", "..", "shared", "nmea-logs")

def run(name, port):
    fake = subprocess.Popen(["gpsfake", "-1", "-S", "-q", "-P", str(port), "-c", "0.02", os.path.join(logs, name)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                s = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise SystemExit("gpsd did not start for " + name)
        s.sendall(b'?WATCH={"enable":true,"json":true};\n')
        s.settimeout(5)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            data += chunk
        s.close()
    finally:
        fake.wait(timeout=60)
    version = subprocess.run(["gpsd", "-V"], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(here, name + ".gpsd"), "wb") as out:
        out.write(("# What %s sent a watcher for ../shared/nmea-logs/%s, byte for byte (CR LF kept).\n"
                   "# Made by Tests/NMEATests/GpsdGoldens/regenerate.py: gpsfake -1 -S -c 0.02, then\n"
                   "# ?WATCH={\"enable\":true,\"json\":true}; over TCP. Device paths, activation times and the year gpsd guesses for undated captures vary per run.\n"
                   % (version, name)).encode())
        out.write(data)

if __name__ == "__main__":
    for i, name in enumerate(sys.argv[1:]):
        run(name, 29500 + i)
