#!/usr/bin/env bash
# Memory of the daemon (issue 16): RSS, PSS and anonymous memory of locationd serving N watching
# clients, fed by the bundled capture replayed at 10 Hz. Run as root from the package root:
#
#   Benchmarks/memory.sh [LABEL=BINARY ...]
#
# Default: the binary `make` builds (.build/release/locationd: Swift runtime linked statically),
# stripped as `make install` and the package install it. Name others to compare, e.g.
#   Benchmarks/memory.sh static=/tmp/locationd-static dynamic=/tmp/locationd-dynamic
#
# Environment: CLIENTS (default "1 50 1000"); POLICY (default always; ask: see below); SETTLE seconds after every client has its first TPV (which
# "ready s" says took) before sampling (default 5); SAMPLES taken 100 ms apart after that (default 20; the largest counts).
# Figures are from /proc/PID/smaps_rollup: Rss, Pss, and Anonymous (the daemon's own heap and stacks).
# Each run starts with the binary out of the page cache (posix_fadvise DONTNEED), as after a boot.
set -euo pipefail
cd "$(dirname "$0")/.."

clients=${CLIENTS:-1 50 1000}
# POLICY=ask: the default rule asks an agent and root's clients are allowed by a rule of their own, so
# that the daemon watches logind and loads libsystemd for it (When In Use), as under the shipped config.
policy=${POLICY:-always}
rule=""
[ "$policy" = always ] || rule=$'[client root]\nuser = root\naccess = always\naccuracy = full'
settle=${SETTLE:-5}
samples=${SAMPLES:-20}
work=$(mktemp -d /tmp/locationd-memory.XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

binaries=("$@")
if [ ${#binaries[@]} -eq 0 ]; then
    strip -o "$work/locationd" .build/release/locationd
    binaries=("static-stripped=$work/locationd")
fi

printf '%-18s %8s %9s %9s %9s %9s %9s\n' binary clients "RSS MiB" "PSS MiB" "anon MiB" "file MiB" "ready s"
for entry in "${binaries[@]}"; do
    label=${entry%%=*} binary=${entry#*=}
    for n in $clients; do
        dir=$work/run-$label-$n
        mkdir -p "$dir"
        cat > "$dir/locationd.conf" <<EOF
[daemon]
socket = $dir/locationd.sock
state-directory = $dir/state
log-level = warning
max-clients = $((n + 64))
[receiver replay]
type = replay
file = $PWD/Demo/haicom-305N.log
rate = 10
loop = yes
[policy]
access = $policy
accuracy = full
$rule
EOF
        # The binary's pages leave the page cache first, so that every run maps them from a cold start as
        # a booted machine does: how a file came into the cache (written by strip or cp, read ahead, faulted
        # in by an earlier run) changes how much of it a page fault maps around the page asked for, and
        # moved the same binary's RSS by up to 0.8 MiB between runs.
        python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$binary"
        "$binary" --config "$dir/locationd.conf" 2> "$dir/log" &
        pid=$!
        for _ in $(seq 100); do [ -S "$dir/locationd.sock" ] && break; sleep 0.05; done
        python3 - "$dir/locationd.sock" "$n" "$pid" "$settle" "$samples" "$label" <<'EOF'
import os, select, socket, sys, time
path, n, pid, settle, samples, label = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
conns = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(b'{"class":"WATCH","enable":true}\n')
    s.setblocking(False)
    conns.append(s)
poller = select.epoll()
for s in conns:
    poller.register(s.fileno(), select.EPOLLIN)
received = 0
streaming = set()
def drain(until, all_streaming=False):
    global received
    while time.monotonic() < until and not (all_streaming and len(streaming) == n):
        for fd, _ in poller.poll(0.05):
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            received += len(data)
            if b'"class":"TPV"' in data:
                streaming.add(fd)
def rollup():
    values = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0].endswith(":"):
                values[parts[0][:-1]] = int(parts[1])
    return values
# Every client identified and streaming first (identifying 1000 connections of one process takes the
# daemon seconds: it reads the descriptors of the user's processes), then SETTLE seconds.
started = time.monotonic()
drain(started + 120, all_streaming=True)
if len(streaming) < n:
    sys.exit(f"{label} at {n} clients: {len(streaming)} streaming after 120 s")
ready = time.monotonic() - started
drain(time.monotonic() + settle)
best = {}
for _ in range(samples):
    values = rollup()
    for key in ("Rss", "Pss", "Anonymous"):
        best[key] = max(best.get(key, 0), values.get(key, 0))
    drain(time.monotonic() + 0.1)
mib = lambda kib: kib / 1024
if received == 0:
    sys.exit(f"{label} at {n} clients: no client received anything")
print(f"{label:<18} {n:>8} {mib(best['Rss']):>9.1f} {mib(best['Pss']):>9.1f} {mib(best['Anonymous']):>9.1f} "
      f"{mib(best['Rss'] - best['Anonymous']):>9.1f} {ready:>9.1f}")
EOF
        kill -KILL "$pid"; wait "$pid" 2>/dev/null || true; pid=""
    done
done
