#!/usr/bin/env bash
# tests/bench/tail.sh: where the slow round trips of a sockperf UDP ping-pong come from.
#
# Runs one sockperf UDP ping-pong on 127.0.0.1 (both ends under the same variant, as run.sh's
# udp-pp test) with `--full-log` (every round trip's send and receive time) while `perf record -a`
# records scheduler switches, interrupts, softirqs, TLB flushes and timer expiries on every CPU,
# and counts /proc/interrupts and /proc/softirqs over the run; then tail.py matches each slow
# round trip (latency above TAIL_SLOW_US) with what happened on the CPUs of the two polling
# threads during it, and prints the share of round trips each cause explains.
#
# Usage: tests/bench/tail.sh VARIANT [SIZE] [SECONDS]
#   VARIANT  kernel | goxio-shm | goxio-shm-poll (VMA_SPEC=latency)
# Environment: GOXIO_LIB (default <repo>/build/libgoxio.so), TAIL_OUT (folder for the raw files,
# default tests/bench/out/tail), TAIL_SLOW_US (default 4), TAIL_ENV (more VAR=value words for
# both ends, e.g. "GOXIO_SHM_SYSMON=normal"). Needs root (perf -a) and sockperf. Run it under the
# benchmark lock: flock /tmp/goxio-bench.lock tests/bench/tail.sh goxio-shm
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
VARIANT=${1:?usage: tail.sh kernel|goxio-shm|goxio-shm-poll [SIZE] [SECONDS]}
SIZE=${2:-64}
SECS=${3:-3}
LIB=${GOXIO_LIB:-$REPO/build/libgoxio.so}
OUT=${TAIL_OUT:-$HERE/out/tail}
PORT=$((17900 + RANDOM % 400))
mkdir -p "$OUT"
for tool in sockperf perf python3; do
	command -v "$tool" >/dev/null || {
		echo "tail.sh: $tool not found" >&2
		exit 1
	}
done

SHM_DIR=$(mktemp -d /dev/shm/goxio-tail.XXXXXX)
CONF=$OUT/offload-all.conf
printf 'application-id * *\nuse vma udp_receiver *:*\nuse vma udp_sender *:*\nuse vma udp_connect *:*\n' >"$CONF"
ENVS=()
case $VARIANT in
kernel) ;;
goxio-shm) ENVS=(LD_PRELOAD="$LIB" VMA_CONFIG_FILE="$CONF" GOXIO_SHM=1 GOXIO_SHM_DIR="$SHM_DIR") ;;
goxio-shm-poll) ENVS=(LD_PRELOAD="$LIB" VMA_CONFIG_FILE="$CONF" GOXIO_SHM=1 GOXIO_SHM_DIR="$SHM_DIR" VMA_SPEC=latency) ;;
*)
	echo "tail.sh: unknown variant $VARIANT" >&2
	exit 1
	;;
esac
if [[ -n ${TAIL_ENV:-} ]]; then
	read -r -a extra <<<"$TAIL_ENV"
	ENVS+=("${extra[@]}")
fi
[[ $VARIANT == kernel || -f $LIB ]] || {
	echo "tail.sh: no library at $LIB (make first)" >&2
	exit 1
}

BASE=$OUT/$VARIANT-$SIZE
SERVER=
cleanup() {
	[[ -z $SERVER ]] || kill -INT "$SERVER" 2>/dev/null || true
	[[ -z $SERVER ]] || wait "$SERVER" 2>/dev/null || true
	rm -rf "$SHM_DIR"
}
trap cleanup EXIT

env "${ENVS[@]}" sockperf server -i 127.0.0.1 -p "$PORT" >"$BASE.server.log" 2>&1 &
SERVER=$!
for _ in $(seq 1 50); do
	ss -Hnul "sport = :$PORT" | grep -q . && break
	sleep 0.1
done
cut -d' ' -f1-3 /proc/loadavg >"$BASE.load"
cat /proc/interrupts >"$BASE.irq0"
cat /proc/softirqs >"$BASE.softirq0"
perf record -q -a -k CLOCK_MONOTONIC -o "$BASE.perf.data" \
	-e sched:sched_switch -e irq_vectors:local_timer_entry -e irq_vectors:reschedule_entry \
	-e irq_vectors:call_function_entry -e irq_vectors:call_function_single_entry \
	-e irq:irq_handler_entry -e irq:softirq_entry -e timer:hrtimer_expire_entry -e tlb:tlb_flush -- \
	env "${ENVS[@]}" sockperf ping-pong -i 127.0.0.1 -p "$PORT" -t "$SECS" -m "$SIZE" --mps 1000000 \
	--full-log "$BASE.csv" >"$BASE.client.log" 2>&1
cat /proc/interrupts >"$BASE.irq1"
cat /proc/softirqs >"$BASE.softirq1"
perf script -i "$BASE.perf.data" -F comm,pid,tid,cpu,time,event,trace >"$BASE.events" 2>/dev/null
echo "$VARIANT $SIZE B, load average $(cat "$BASE.load") at start; raw files $BASE.*"
python3 "$HERE/tail.py" "$BASE" "${TAIL_SLOW_US:-4}"
