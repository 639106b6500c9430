#!/usr/bin/env bash
# Decode throughput: `locationctl decode` against gpsd's own batch decoder, `gpsdecode`, on the same bytes.
#
# usage (from the package root):  Benchmarks/decode-throughput.sh
#
# Environment:
#   SCRATCH    swift build --scratch-path (default .build)
#   NMEA_LOGS  directory of gpsd captures (default ../shared/nmea-logs)
#   SIZE_MB    input size to reach, 10^6 bytes (default 30)
#   RUNS       timed runs per decoder; the best (minimum) wall time counts (default 3)
#
# Input: every $NMEA_LOGS/*.log with its '#' comment lines removed (so both decoders see identical,
# pure receiver bytes), concatenated, and the whole repeated until the file reaches SIZE_MB; it lives
# in a mktemp -d directory removed on exit. Sentences = lines starting with '$' or '!'.
#
# Commands timed (output to /dev/null, wall time of the whole process, file already in page cache):
#   locationctl decode INPUT              TPV + SKY per epoch (its defaults)
#   gpsdecode -d -j < INPUT               gpsd 3.22 (Debian package gpsd-clients). -d: decode packets
#                                         from stdin to stdout; -j: JSON dump. Both are gpsdecode's
#                                         defaults, spelled out; NMEA needs no other flag (the packet
#                                         lexer detects it). It prints the TPV/SKY/GST/ATT/AIS objects
#                                         gpsd would report for the input.
# Throughput ratio = gpsdecode time / locationctl time (same input). The project's goal is >= 10x.
set -euo pipefail
cd "$(dirname "$0")/.."

SCRATCH=${SCRATCH:-.build}
NMEA_LOGS=${NMEA_LOGS:-../shared/nmea-logs}
SIZE_MB=${SIZE_MB:-30}
RUNS=${RUNS:-3}
export LC_ALL=C

if ! command -v gpsdecode >/dev/null 2>&1; then
    echo "gpsdecode not found: apt-get install gpsd-clients" >&2
    exit 1
fi
shopt -s nullglob
logs=("$NMEA_LOGS"/*.log)
if [ ${#logs[@]} -eq 0 ]; then
    echo "no captures in $NMEA_LOGS/*.log" >&2
    exit 1
fi

swift build -c release --scratch-path "$SCRATCH" --product locationctl >&2
locationctl="$(swift build -c release --scratch-path "$SCRATCH" --show-bin-path)/locationctl"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
input="$work/input.nmea"

grep -av -h '^#' "${logs[@]}" > "$work/once.nmea"
target=$((SIZE_MB * 1000000))
: > "$input"
while [ "$(stat -c %s "$input")" -lt "$target" ]; do
    cat "$work/once.nmea" >> "$input"
done
bytes=$(stat -c %s "$input")
sentences=$(grep -ac '^[$!]' "$input")
megabytes=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }')
echo "input: ${#logs[@]} captures without '#' lines, $(stat -c %s "$work/once.nmea") bytes, repeated to $bytes bytes ($megabytes MB), $sentences sentences"

# One untimed run each: proves both decode (not an error path) and warms the page cache.
lines_ours=$("$locationctl" decode --stats "$input" 2> "$work/stats" | wc -l)
lines_gpsd=$(gpsdecode -d -j < "$input" | wc -l)
echo "output: locationctl decode $lines_ours JSON lines, gpsdecode $lines_gpsd JSON lines"
echo "locationctl decode --stats: $(cat "$work/stats")"
if [ "$lines_ours" -eq 0 ] || [ "$lines_gpsd" -eq 0 ]; then
    echo "a decoder printed nothing: the benchmark would time an error path" >&2
    exit 1
fi

# best_of COMMAND...: the minimum wall time, seconds, of $RUNS runs (stdin from $input, output to /dev/null).
TIMEFORMAT=%3R
best_of() {
    local best="" t
    for _ in $(seq "$RUNS"); do
        if ! t=$( { time "$@" < "$input" > /dev/null 2>&1; } 2>&1 ); then
            echo "failed: $*" >&2
            exit 1
        fi
        best=$(awk -v a="$t" -v b="$best" 'BEGIN { print (b == "" || a < b) ? a : b }')
    done
    echo "$best"
}

report() { # NAME SECONDS
    awk -v n="$1" -v s="$2" -v b="$bytes" -v k="$sentences" -v r="$RUNS" \
        'BEGIN { printf "%-12s %7.3f s  %8.1f MB/s  %11.0f sentences/s  (best of %d)\n", n, s, b / 1e6 / s, k / s, r }'
}

t_ours=$(best_of "$locationctl" decode "$input")
report locationctl "$t_ours"
t_gpsd=$(best_of gpsdecode -d -j)
report gpsdecode "$t_gpsd"

awk -v o="$t_ours" -v g="$t_gpsd" 'BEGIN {
    ratio = g / o
    printf "locationctl/gpsdecode throughput: %.1fx (goal >= 10x: %s)\n", ratio, (ratio >= 10 ? "met" : "NOT met")
}'
