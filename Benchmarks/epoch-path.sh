#!/usr/bin/env bash
# Where one epoch's time goes inside the daemon, with one subscriber: locationd against the reference
# fan-out, from the kernel's system-call tracepoints.
#
# usage (from the package root, as root: perf needs the tracepoints):  Benchmarks/epoch-path.sh
#
# Environment: SCRATCH (swift build --scratch-path, default .build), NMEA_LOGS (default ../shared/nmea-logs),
# SECONDS_TRACED (default 8), LOCATIOND_BIN (a locationd binary to trace instead of building one, e.g. an
# older commit's), RECEIVER_OPTIONS (lines added to the receiver's section; default `check-date = no`, since
# the capture is from 2012 — set it empty for a binary older than that option).
#
# Each daemon runs pinned on CPU 0 with Benchmarks/fanout/harness.c on the last CPU replaying
# telit-he910.log at 10 Hz into a pty, one client subscribed (as Benchmarks/fanout-latency.sh does). After
# the warm-up, `perf record -e raw_syscalls:sys_enter,raw_syscalls:sys_exit -p PID` traces the daemon for
# SECONDS_TRACED seconds. For every epoch it prints the median and 90th percentile of:
#   wake -> read    from the return of the poll(2)/epoll_wait(2) that reported the pty readable to the
#                   start of the read(2) of the epoch (the daemon's own code: dispatching the event)
#   read -> send    from the return of that read to the start of the first sendto(2) (decoding the epoch,
#                   assembling the fix, choosing the receiver, authorizing, encoding the TPV)
#   wake -> send    the two together: the daemon's part of the 1-client delay
# All of it is user-space time between two system calls, so the tracepoints (which cost a few µs per
# system call) add nothing to it; the delays the harness measures while perf runs are not meaningful.
#
# KINDS (default "locationd reference") picks the daemons: `locationd-gpsd` (locationd's gpsd front, the client
# on TCP with `?WATCH={"enable":true,"json":true};`) and `gpsd` (gpsd -N -n -b on the pty) trace the gpsd front
# against gpsd. Both send an epoch's SKY and TPV (gpsd in two sendto(2)s, the SKY when the GSV set ends, the TPV
# at the cycle's RMC; the front in one), so for them the figure is
# traced from both the daemon's and the harness's system calls (`tpv_breakdown`): the epoch written (A), the
# daemon awake (B), its TPV's sendto(2) started (C) and returned (D: on loopback TCP the send delivers the segment
# and wakes the reader), the client's socket reported readable (E). gpsd waits in pselect6(2) and reads an epoch
# in several read(2)s; each of its system calls costs the tracepoints' few µs, so its B->C is inflated more.
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/common.sh

SCRATCH=${SCRATCH:-.build}
NMEA_LOGS=${NMEA_LOGS:-../shared/nmea-logs}
SECONDS_TRACED=${SECONDS_TRACED:-8}
capture=$NMEA_LOGS/telit-he910.log
command -v perf >/dev/null 2>&1 || { echo "perf not found: apt-get install linux-perf" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "needs at least 2 CPUs" >&2; exit 1; }

if [ -n "${LOCATIOND_BIN:-}" ]; then
    locationd=$LOCATIOND_BIN
else
    swift build -c release --scratch-path "$SCRATCH" --product locationd >&2
    locationd="$(swift build -c release --scratch-path "$SCRATCH" --show-bin-path)/locationd"
fi
receiver_options=${RECEIVER_OPTIONS-check-date = no}
work=$(mktemp -d)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
gcc -O2 -Wall -o "$work/harness" Benchmarks/fanout/harness.c -lm
gcc -O2 -Wall -o "$work/reference" Benchmarks/fanout/reference.c
last_cpu=$(($(nproc) - 1))
ulimit -n 4096

# medians: reads `perf script -F time,event,trace` and prints the three gaps.
medians() {
    awk -v label="$1" '
        function report(name, a, n,    i, j, t) {
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            if (n == 0) { printf "%-10s %-13s no epochs traced\n", label, name; return }
            k = int(n * 0.9)
            if (k < 1) k = 1
            printf "%-10s %-13s %6d %9.1f %9.1f\n", label, name, n, a[int((n + 1) / 2)], a[k]
        }
        {
            t = $1 + 0; ev = $2; nr = $4
            if (ev == "raw_syscalls:sys_exit:" && (nr == "7" || nr == "232")) { woke = t; next }
            if (ev == "raw_syscalls:sys_enter:" && nr == "0" && woke) { wr[++nwr] = (t - woke) * 1e6; start = woke; woke = 0; next }
            if (ev == "raw_syscalls:sys_exit:" && nr == "0" && $NF + 0 > 0) { readEnd = t; next }
            if (ev == "raw_syscalls:sys_enter:" && nr == "44" && readEnd) {
                rs[++nrs] = (t - readEnd) * 1e6; readEnd = 0
                if (start) { ws[++nws] = (t - start) * 1e6; start = 0 }
            }
        }
        END { report("wake -> read", wr, nwr); report("read -> send", rs, nrs); report("wake -> send", ws, nws) }'
}

# tpv_breakdown HARNESS DAEMON: for the gpsd kinds, from both processes' system calls, per epoch: the harness's
# write(2) of the epoch returns (A), the daemon wakes (B: its first poll/epoll/pselect return after A), starts
# the epoch's last send (C: the TPV's) and returns from it (D), and the harness's epoll_wait(2) reports the TPV's
# socket readable (E: its first report after the daemon's first send of the epoch: gpsd's SKY send wakes the
# reader, which then finds its TPV too). Medians in µs.
read -r -d '' breakdown_py <<'PY' || true
import re, statistics, sys
label, harness, daemon = sys.argv[1:4]
rx = re.compile(r"\s*(\d+)/\d+\s+([\d.]+):\s+raw_syscalls:sys_(enter|exit): NR (\d+) (.*)")
wake, send = {"7", "232", "270", "271", "281"}, {"1", "20", "44", "46"}
epochs, cur = [], None
for line in sys.stdin:
    m = rx.match(line)
    if not m: continue
    pid, t, edge, nr, rest = m.group(1), float(m.group(2)), m.group(3), m.group(4), m.group(5)
    value = int(rest.split("=")[1]) if edge == "exit" else None
    if pid == harness:
        if edge == "exit" and nr == "1" and value > 100:       # the epoch written into the pty master
            if cur: epochs.append(cur)
            cur = {"A": t}
        elif edge == "exit" and nr == "232" and value > 0 and cur and "C" in cur and "E" not in cur:
            cur["E"] = t
    elif pid == daemon and cur:
        if edge == "exit" and nr in wake and "B" not in cur: cur["B"] = t
        elif edge == "enter" and nr in send and "B" in cur: cur["C"] = t; cur.pop("D", None)
        elif edge == "exit" and nr in send and "C" in cur: cur["D"] = t
def median(a, b):
    v = [(e[b] - e[a]) * 1e6 for e in epochs if a in e and b in e]
    return "%8.1f" % statistics.median(v) if v else "       -"
n = sum(1 for e in epochs if "E" in e)
print("%-14s %6d %s %s %s %s" % (label, n, median("A", "B"), median("B", "C"), median("C", "D"), median("A", "E")))
PY
tpv_breakdown() { python3 -c "$breakdown_py" "$1" "$2" "$3"; }

trace() { # trace KIND
    local kind=$1 dir pty
    dir=$(mktemp -d "$work/$kind.XXXX")
    mkdir "$dir/state"
    local target=(--unix "$dir/daemon.sock") watch='{"class":"WATCH","enable":true}' port=""
    if [ "$kind" = gpsd ] || [ "$kind" = locationd-gpsd ]; then
        port=$(free_port)
        target=(--tcp "127.0.0.1:$port")
        watch='?WATCH={"enable":true,"json":true};'
    fi
    taskset -c "$last_cpu" "$work/harness" --capture "$capture" --pty-file "$dir/pty" --pid-file "$dir/pid" \
        "${target[@]}" --watch "$watch" --clients 1 --warmup 20 \
        --epochs $((SECONDS_TRACED * 10 + 40)) --label "$kind" > /dev/null 2> "$dir/harness.log" &
    local harness=$!
    pids+=("$harness")
    while [ ! -s "$dir/pty" ]; do
        kill -0 "$harness" 2>/dev/null || { cat "$dir/harness.log" >&2; exit 1; }
        sleep 0.05
    done
    pty=$(cat "$dir/pty")
    if [ "$kind" = locationd ] || [ "$kind" = locationd-gpsd ]; then
        local listen=""
        [ -n "$port" ] && listen="gpsd-listen = 127.0.0.1:$port"
        printf '[daemon]\nsocket = %s\nstate-directory = %s\nlog-level = warning\n%s\n[receiver gnss0]\ntype = serial\npath = %s\nspeed = 9600\n%s\n[policy]\naccess = always\naccuracy = full\n' \
            "$dir/daemon.sock" "$dir/state" "$listen" "$pty" "$receiver_options" > "$dir/locationd.conf"
        taskset -c 0 "$locationd" --config "$dir/locationd.conf" > /dev/null 2> "$dir/daemon.log" &
    elif [ "$kind" = gpsd ]; then
        taskset -c 0 "$(command -v gpsd || echo /usr/sbin/gpsd)" -N -n -b -S "$port" "$pty" > /dev/null 2> "$dir/daemon.log" &
    else
        taskset -c 0 "$work/reference" "$dir/daemon.sock" "$pty" > /dev/null 2> "$dir/daemon.log" &
    fi
    local daemon=$!
    pids+=("$daemon")
    echo "$daemon" > "$dir/pid"
    sleep 4  # connect, subscribe, 20 warm-up epochs
    local traced=$daemon
    [ -n "$port" ] && traced="$harness,$daemon"
    taskset -c "$last_cpu" perf record -q -e raw_syscalls:sys_enter,raw_syscalls:sys_exit -o "$dir/perf.data" \
        -p "$traced" -- sleep "$SECONDS_TRACED" > /dev/null 2>&1
    case $kind in
    gpsd | locationd-gpsd) perf script -i "$dir/perf.data" -F pid,tid,time,event,trace 2> /dev/null | tee "${RAW:-/dev/null}" | tpv_breakdown "$kind" "$harness" "$daemon" ;;
    *) perf script -i "$dir/perf.data" -F time,event,trace 2> /dev/null | medians "$kind" ;;
    esac
    kill "$harness" "$daemon" 2> /dev/null || true
    wait "$harness" "$daemon" 2> /dev/null || true
}


kinds=${KINDS:-locationd reference}
case " $kinds " in
*" locationd "* | *" reference "*) printf '%-10s %-13s %6s %9s %9s\n' daemon interval epochs 'p50 us' 'p90 us' ;;
esac
for kind in $kinds; do
    case $kind in
    gpsd | locationd-gpsd)
        [ -n "${header_done:-}" ] || printf '%-14s %6s %8s %8s %8s %8s   (medians, µs)\n' daemon epochs 'A->B' 'B->C' 'C->D' 'A->E'
        header_done=1 ;;
    esac
    trace "$kind"
done
