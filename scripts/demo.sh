#!/usr/bin/env bash
# The main job: run a real program (sockperf, UDP ping-pong on loopback) with and without goxio,
# print both results, and show what goxio did with each socket (goxio_stats).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
lib=$(pwd)/$build/libgoxio.so
port=${DEMO_PORT:-17711}
secs=${DEMO_SECONDS:-3}

run_pair() { # $1: label, $2: LD_PRELOAD value ("" for the kernel)
	local label=$1 pre=$2 srv
	env ${pre:+LD_PRELOAD=$pre} VMA_TRACELEVEL=WARN sockperf sr -i 127.0.0.1 -p "$port" >/dev/null 2>&1 &
	srv=$!
	sleep 0.5
	echo "== $label: sockperf ping-pong, 64 B UDP, ${secs} s"
	local client=(sockperf pp -i 127.0.0.1 -p "$port" -t "$secs" -m 64)
	[ -n "$pre" ] && client=("$build/goxio" run -- "${client[@]}") # the launcher sets LD_PRELOAD
	VMA_TRACELEVEL=WARN "${client[@]}" 2>&1 |
		grep -E "avg-latency|Summary|percentile 99.900|percentile 50.000" | sed 's/\x1b\[[0-9;]*m//g'
	if [ -n "$pre" ]; then
		echo "== goxio_stats of the server (pid $srv): what goxio did with each socket"
		"$build/goxio_stats" -p "$srv" -v 1 -c 1 || true
	fi
	kill "$srv" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
}

run_pair "kernel" ""
run_pair "goxio (server: LD_PRELOAD=$lib, client: goxio run)" "$lib"
