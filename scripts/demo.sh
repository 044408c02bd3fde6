#!/usr/bin/env bash
# The main job: run a real program (sockperf, UDP ping-pong on loopback) with and without goxio,
# with goxio's default parameters, print both results and their ratio, and show what goxio did
# with each socket (goxio_stats: transport shm, datagrams through rings).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
lib=$(pwd)/$build/libgoxio.so
port=${DEMO_PORT:-17711}
secs=${DEMO_SECONDS:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run_pair() { # $1: label, $2: LD_PRELOAD value ("" for the kernel), $3: file for the average
	local label=$1 pre=$2 avg=$3 srv
	env ${pre:+LD_PRELOAD=$pre} VMA_TRACELEVEL=WARN sockperf sr -i 127.0.0.1 -p "$port" >/dev/null 2>&1 &
	srv=$!
	sleep 0.5
	echo "== $label: sockperf ping-pong, 64 B UDP, ${secs} s"
	# Paced at 1 M round trips/s as in the bench: with its default (--mps=max) sockperf sizes its
	# sample array for at most 600 k round trips a second and aborts ("_seqN > m_maxSequenceNo")
	# when the rings answer faster (0.5 us one way on this VM on a good day).
	local client=(sockperf pp -i 127.0.0.1 -p "$port" -t "$secs" -m 64 --mps 1000000)
	[ -n "$pre" ] && client=("$build/goxio" run --lib "$lib" -- "${client[@]}") # the launcher sets LD_PRELOAD
	VMA_TRACELEVEL=WARN "${client[@]}" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >"$out/client.log" || true
	grep -E "avg-latency|percentile 99.900|percentile 50.000" "$out/client.log" || cat "$out/client.log"
	sed -n 's/.*avg-latency=\([0-9.]*\).*/\1/p' "$out/client.log" | tail -1 >"$avg"
	if [ -n "$pre" ]; then
		echo "== goxio_stats of the server (pid $srv): what goxio did with each socket"
		"$build/goxio_stats" -p "$srv" -v 1 -c 1 || true
	fi
	kill "$srv" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
}

run_pair "kernel" "" "$out/kernel"
run_pair "goxio, default parameters (server: LD_PRELOAD=$lib, client: goxio run)" "$lib" "$out/goxio"
k=$(cat "$out/kernel") g=$(cat "$out/goxio")
if [ -n "$k" ] && [ -n "$g" ]; then
	awk -v k="$k" -v g="$g" 'BEGIN { printf "== average half round trip: kernel %.2f us, goxio %.2f us (kernel/goxio %.1fx)\n", k, g, k / g }'
else
	echo "== no average latency from one of the runs (see above)"
	exit 1
fi
