#!/usr/bin/env bash
# tests/bench/capture.sh: what goxio capture costs, in one run (issue 18):
#   1. sockperf UDP ping-pong 64 B over the shared-memory transport (GOXIO_SHM=1), interleaved:
#      no capture attached, a capture whose filter matches nothing ("udp port 1"), and one that
#      matches everything (written to a file); goxio capture --all attaches to the server and,
#      as it starts, the client;
#   2. a sustained stream (tests/capture/capgen.c flood: 64 B datagrams as fast as one sender
#      goes, received by a thread) captured to a file: datagrams sent, captured and dropped.
# It prints a Markdown report on stdout. tests/bench/run.sh runs it as section "capture"; alone:
#   GOXIO_LIB=$PWD/build/libgoxio.so GOXIO_BIN=$PWD/build tests/bench/capture.sh
# Its processes keep their statistics and segments in folders of their own, so goxio capture
# --all sees only them.
# Knobs: CAPBENCH_REPS (default 3), CAPBENCH_TIME (sockperf client seconds, default 3),
# CAPBENCH_FLOOD (flood seconds, default 3), CAPBENCH_PORT (default 17300).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB=${GOXIO_LIB:?set GOXIO_LIB to the absolute path of libgoxio.so}
BIN=${GOXIO_BIN:?set GOXIO_BIN to the folder of the goxio tools}
REPS=${CAPBENCH_REPS:-3}
SECS=${CAPBENCH_TIME:-3}
FLOOD=${CAPBENCH_FLOOD:-3}
PORT=${CAPBENCH_PORT:-17300}
WORK=$(mktemp -d /tmp/goxio-capbench.XXXXXX)
SHM=$(mktemp -d /dev/shm/goxio-capbench.XXXXXX)
trap 'rm -rf "$WORK" "$SHM"' EXIT
mkdir -p "$WORK/stats"
ENV=(LD_PRELOAD="$LIB" GOXIO_SHM=1 GOXIO_SHM_DIR="$SHM" VMA_STATS_SHMEM_DIR="$WORK/stats" VMA_TRACELEVEL=WARN)
gcc -O2 -Wall -pthread -o "$WORK/capgen" "$HERE/../capture/capgen.c"

# latency runs one ping-pong with capture mode $1 (none, nothing, everything); prints the
# average latency in microseconds.
latency() {
	local mode=$1 cap=""
	env "${ENV[@]}" sockperf server -i 127.0.0.1 -p "$PORT" >"$WORK/server.log" 2>&1 &
	local srv=$!
	sleep 0.5
	case $mode in
	nothing) "$BIN/goxio" capture -q -k "$WORK/stats" --all -w "$WORK/nothing.pcap" udp port 1 2>"$WORK/cap.log" & cap=$! ;;
	everything) "$BIN/goxio" capture -q -k "$WORK/stats" --all -w "$WORK/everything.pcap" 2>"$WORK/cap.log" & cap=$! ;;
	esac
	sleep 0.3
	# --mps 1000000: sockperf sizes its sample array for at most 1 M round trips a second and
	# aborts when a transport answers faster (the run without a capture does).
	env "${ENV[@]}" sockperf ping-pong -i 127.0.0.1 -p "$PORT" -t "$SECS" -m 64 --mps 1000000 >"$WORK/client.log" 2>&1 || true
	[[ -z $cap ]] || { kill -INT "$cap"; wait "$cap" || true; }
	kill -INT "$srv" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
	sed -n 's/.*avg-latency=\([0-9.]*\).*/\1/p' "$WORK/client.log" | tail -1
}

declare -A sum count
for r in $(seq "$REPS"); do
	for mode in none nothing everything; do
		v=$(latency "$mode")
		if [[ -n $v ]]; then
			sum[$mode]=$(awk -v a="${sum[$mode]:-0}" -v b="$v" 'BEGIN {print a + b}')
			count[$mode]=$(( ${count[$mode]:-0} + 1 ))
		fi
		echo "rep $r $mode: ${v:-failed} us" >&2
	done
done

echo "# goxio capture: cost"
echo
echo "sockperf UDP ping-pong 64 B, GOXIO_SHM=1, $REPS runs of ${SECS} s each, interleaved (average of the runs' average half round trip):"
echo
echo "| capture | avg latency (us) | added per round trip (us) |"
echo "| --- | --- | --- |"
base=$(awk -v s="${sum[none]:-0}" -v c="${count[none]:-0}" 'BEGIN {if (c) printf "%.3f", s / c; else print "nan"}')
for mode in none nothing everything; do
	avg=$(awk -v s="${sum[$mode]:-0}" -v c="${count[$mode]:-0}" 'BEGIN {if (c) printf "%.3f", s / c; else print "nan"}')
	add=$(awk -v a="$avg" -v b="$base" 'BEGIN {printf "%.3f", 2 * (a - b)}')
	echo "| $mode | $avg | $add |"
done

# Sustained stream to a file.
mkfifo "$WORK/in"
exec 3<>"$WORK/in"
env "${ENV[@]}" "$WORK/capgen" flood "$FLOOD" <&3 >"$WORK/flood.log" 2>&1 &
gen=$!
while ! grep -q ready "$WORK/flood.log"; do sleep 0.05; done
"$BIN/goxio" capture -k "$WORK/stats" -p "$gen" -w "$WORK/flood.pcap" -B 65536 udp 2>"$WORK/floodcap.log" &
cap=$!
while ! grep -q "attached to" "$WORK/floodcap.log"; do sleep 0.05; done
echo go >&3
wait "$gen" || true
kill -INT "$cap" 2>/dev/null || true  # it ends by itself once its process exited
wait "$cap" || true
echo
echo "Sustained stream, $FLOOD s of 64 B datagrams (one sender, one receiving thread), captured to a file (-B 65536):"
echo
echo '```'
cat "$WORK/flood.log" | grep -v ready
grep -E "seen|written" "$WORK/floodcap.log" | grep -v "^  fd"
echo '```'
