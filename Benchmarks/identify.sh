#!/usr/bin/env bash
# Identification cost (issue 32): how long the daemon takes to identify N connections opened at once by one
# process, on the native socket and on the gpsd front. Each connection is identified from the kernel (every
# holder of its socket, of any user, and the clean load of each holder's program) before it is greeted, so
# the time until the last greeting is the time to identify them all. Run as root from the package root
# (root's connections are not held to the per-user limits):
#
#   Benchmarks/identify.sh [BINARY]        # default: .build/release/locationd (`make build`)
#
# Environment: CLIENTS (default "1000"), FRONTS (default "unix gpsd"), ROUNDS (default 3).
# Prints, per front and round: seconds from the first connect to the last greeting, and the daemon's CPU
# seconds over that time (/proc/PID/stat utime+stime).
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/common.sh

binary=${1:-.build/release/locationd}
clients=${CLIENTS:-1000}
fronts=${FRONTS:-unix gpsd}
rounds=${ROUNDS:-3}
work=$(mktemp -d /tmp/locationd-identify.XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# Opens argv[2] connections to argv[1] (a Unix socket path, or HOST:PORT) without waiting, then waits for
# each one's first line; prints the seconds from the first connect to the last first line.
cat > "$work/clients.py" <<'PY'
import selectors, socket, sys, time
target, n = sys.argv[1], int(sys.argv[2])
sel = selectors.DefaultSelector()
start = time.monotonic()
for _ in range(n):
    if target.startswith("/"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(target)
    else:
        host, port = target.rsplit(":", 1)
        s = socket.create_connection((host, int(port)))
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
waiting, last = n, start
while waiting and time.monotonic() - start < 120:
    for key, _ in sel.select(timeout=1):
        data = key.fileobj.recv(4096)
        sel.unregister(key.fileobj)
        if data:
            waiting -= 1
            last = time.monotonic()
print(f"{last - start:.3f} {waiting}")
PY

cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
ticks=$(getconf CLK_TCK)
printf '%-6s %7s %5s %10s %8s %8s\n' front clients round "seconds" "missing" "cpu s"
for front in $fronts; do
    for round in $(seq "$rounds"); do
        port=$(free_port)
        cat > "$work/locationd.conf" <<CONF
[daemon]
socket = $work/locationd.sock
state-directory = $work/state
log-level = warning
max-clients = $((clients + 64))
gpsd-listen = 127.0.0.1:$port
[receiver replay]
type = replay
file = $PWD/Demo/haicom-305N.log
rate = 1
loop = yes
[policy]
access = always
accuracy = reduced
CONF
        "$binary" --config "$work/locationd.conf" 2> "$work/locationd.log" &
        pid=$!
        for _ in $(seq 200); do [ -S "$work/locationd.sock" ] && break; sleep 0.05; done
        target=$work/locationd.sock
        [ "$front" = gpsd ] && target=127.0.0.1:$port
        before=$(cpu "$pid")
        read -r seconds missing < <(/usr/bin/python3 "$work/clients.py" "$target" "$clients")
        after=$(cpu "$pid")
        printf '%-6s %7s %5s %10s %8s %8.2f\n' "$front" "$clients" "$round" "$seconds" "$missing" "$(echo "($after - $before) / $ticks" | bc -l)"
        kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
        rm -rf "$work/state" "$work/locationd.sock"
    done
done
