#!/usr/bin/env bash
# tests/bench/run.sh: goxio benchmarks, kernel vs goxio in one run.
#
# `make bench` runs it as GOXIO_LIB=<abs>/build/libgoxio.so GOXIO_BIN=<abs>/build ./tests/bench/run.sh.
# It measures, interleaving kernel and goxio runs (A B A B ...):
#   1. passthrough cost: ns per fcntl/getsockopt call with and without LD_PRELOAD, and in a process
#      with one idle thread (calls.c);
#   2. start-up time (hyperfine) and max RSS (/usr/bin/time) of /bin/true (no engine) and onesock.c
#      (one datagram: loads the engine), time of a script of 200 short commands (under goxio run;
#      interleaved run by run with the kernel and two decompositions, on CPU 0 and unpinned,
#      interleave.py),
#      and one exec of ls without a library, with an empty one and with libgoxio.so (execab.c);
#   3. sockperf on 127.0.0.1, both ends under the same variant: UDP ping-pong 64 B and 1400 B,
#      UDP throughput 64 B, UDP under-load, TCP ping-pong and throughput 64 B; variants kernel,
#      goxio (ring transports off: its sockets pass through once decided), goxio-shm (shared-memory UDP transport, GOXIO_SHM=1, default
#      parameters), goxio-shm-poll (the same with VMA_SPEC=latency: receive and select poll forever),
#      goxio-shm-tcp and goxio-shm-tcp-poll (the same two with GOXIO_SHM_TCP=1: TCP through rings too;
#      they run the TCP tests only, their UDP path being goxio-shm's);
#   4. the sockperf server's multiplexers (-F epoll, poll, select, recvfrom) under kernel and goxio-shm;
#   5. TCP programs, both ends under kernel or goxio-shm-tcp: iperf3 (Gbit/s), redis-server with
#      redis-benchmark (SET and GET requests/s), nginx (master + 2 workers, 1 KiB static file) with wrk
#      (requests/s, latency percentiles); a goxio_stats snapshot of the goxio server during each run
#      tells how many bytes went through rings and how many through the kernel;
#   6. sockperf across a veth pair between two network namespaces, kernel against the AF_XDP
#      transport (GOXIO_XDP) on both ends (tests/bench/veth.sh; needs root, skipped otherwise);
#   7. socket churn: a TCP connection per request and a UDP socket per request, client under the
#      kernel and under goxio, against a goxio peer and a peer without goxio (churn.py, churn.c);
#   8. multicast fan-out: 1 publisher, 8 subscriber processes, the highest loss-free rate of the
#      kernel and of goxio (fanout.py, fanout.c, in a network namespace of its own: needs root);
#   9. goxio capture (tests/bench/capture.sh): sockperf UDP ping-pong over shared memory with no
#      capture, a capture matching nothing and one matching everything, and a sustained stream
#      captured to a file (its Markdown is appended to the report);
#  10. IPv6 (ipv6.py, pp6.c): TCP and UDP ping-pong over ::1, and a Node.js HTTP server with its
#      default dual-stack listen + wrk to localhost, kernel and goxio with default parameters;
#  11. kernel-served sockets (kpass.py): one end under goxio with default parameters, the other
#      without goxio (sockperf UDP throughput and ping-pong against a server without goxio, iperf3
#      with either end without goxio), against the kernel on both ends;
#  12. VMA's extra API (zcopy.py, tests/vmaapi/zbench.c): zero-copy receive (recvfrom_zcopy +
#      free_packets) against the copying receive over shared memory, the receive alone (drain) and
#      a streaming sender, 64 B and 1400 B; with BENCH_SOCKPERF_VMA, sockperf --vmazcopyread too;
#  13. ping-pong by placement (placement.py): sockperf UDP and TCP ping-pong, both ends under goxio
#      with default parameters against the kernel, server and client on CPUs of their own (split)
#      and both on one CPU (same);
# then writes raw data under tests/bench/out/ and the report tests/bench/REPORT.md
# (report.py) with a latency plot (plot.py, tests/bench/latency.png).
#
# A run that fails (client or server exit, crash, timeout, wrk socket errors) does not stop the
# bench: it is recorded with its status and the report shows it. The shared-memory variants keep
# their segments in a private folder under /dev/shm (GOXIO_SHM_DIR), which is checked for files left
# behind after every run and removed at the end.
#
# Knobs (environment):
#   GOXIO_LIB              library to preload; "fake" builds a stand-in (fakepreload.c) and writes
#                          the report to out/REPORT.md instead of the committed one
#   GOXIO_BIN              folder holding the goxio tools (version string, goxio_stats snapshots)
#   BENCH_ONLY             sections to run, comma-separated among passthrough, startup, sockperf, mux,
#                          programs, veth, churn, fanout, capture, ipv6, kpass, zcopy, placement (default: all); the report then has only those, and goes to
#                          out/REPORT.md unless BENCH_REPORT says otherwise
#   BENCH_VARIANTS         sockperf variants to run, comma-separated, kernel included (default: all)
#   BENCH_TESTS            sockperf tests to run, comma-separated (udp-pp, udp-pp-1400, tcp-pp, udp-tp,
#                          tcp-tp, udp-ul; default: all)
#   BENCH_PROGRAMS         TCP programs to run, comma-separated among iperf3, redis, nginx (default: all)
#   BENCH_REPS             repetitions of the passthrough, start-up and RSS measures (default 5)
#   BENCH_CALLS_N          calls per passthrough run (default 1050000, 21..100000000)
#   BENCH_CALLS_REPS       passthrough runs per case and variant (default 7)
#   BENCH_SOCKPERF_REPS    repetitions of each sockperf test and of each TCP program run (default 3)
#   BENCH_SOCKPERF_TIME    seconds per sockperf client run (default 2; sockperf adds about 2 s of its own)
#   BENCH_VARIANTS_EXTRA   more sockperf rows, "name|VAR=value VAR=value;name2|..." (for example
#                          "goxio-shm-nopoll|LD_PRELOAD=/abs/libgoxio.so GOXIO_SHM=1 VMA_RX_POLL=0");
#                          they run every UDP test unless they set GOXIO_SHM_TCP=1, and the TCP tests
#                          unless they set GOXIO_SHM=1 without GOXIO_SHM_TCP=1
#   BENCH_UL_MPS           messages per second of the under-load test (default 50000, reply every 10th)
#   BENCH_UL_REPS          runs of the under-load test per variant (default 7: its average and
#                          p99.9 move by a third between runs of the same program, a median of 3
#                          lands on either side of a 1x goal)
#   BENCH_UL_TIME          seconds per under-load client run (default 6: its p99.9 is the 10th worst of
#                          the 10,000 replies of a 2 s run, where stalls of a millisecond that the
#                          kernel and goxio both see a few times a second decide it)
#   BENCH_MUX_TIME         seconds per client run of the multiplexer tests (default 1)
#   BENCH_PROG_TIME        seconds of each iperf3 (-t) and wrk (-d) client run (default 3)
#   BENCH_REDIS_N          requests per redis-benchmark test (default 100000)
#   BENCH_DEADLINE         seconds the whole run may take before it stops with an error (default 3000:
#                          a whole run took ~2,450 s on 2026-12-01, 2,320 s before its placement part;
#                          2400 stopped it before its last part)
#   BENCH_PORT             first TCP/UDP port on 127.0.0.1 the servers use (default 17100)
#   BENCH_VETH_REPS, BENCH_VETH_PIN, BENCH_VETH_VARIANTS: part 6, see tests/bench/veth.sh
#   BENCH_CHURN_ROUNDS     rounds per churn client run (default 4000)
#   BENCH_CHURN_REPS       kernel/goxio pairs of churn client runs per case (default 11)
#   BENCH_GOXIO_ENV        variables of the goxio rows of parts 7 and 8 (default: the shared-memory
#                          transports on, "GOXIO_SHM=1 GOXIO_SHM_TCP=1")
#   BENCH_REPORT           where to write the report (default tests/bench/REPORT.md)
#   BENCH_SOCKPERF_VMA     a sockperf built with --enable-vma-api (its vma_extra.h being goxio_extra.h):
#                          part 12 runs its --vmazcopyread and --vmarxfiltercb beside its plain mode
#                          (default: $GOXIO_BIN/sockperf-vma/bin/sockperf, which
#                          scripts/build-sockperf-vma.sh builds, when there; otherwise not run)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUT=$HERE/out
BIN=$OUT/bin

GOXIO_LIB=${GOXIO_LIB:-$REPO/build/libgoxio.so}
GOXIO_BIN=${GOXIO_BIN:-$REPO/build}
REPS=${BENCH_REPS:-5}
CALLS_N=${BENCH_CALLS_N:-1050000}
CALLS_REPS=${BENCH_CALLS_REPS:-7}
SP_REPS=${BENCH_SOCKPERF_REPS:-3}
SP_TIME=${BENCH_SOCKPERF_TIME:-2}
UL_MPS=${BENCH_UL_MPS:-50000}
UL_TIME=${BENCH_UL_TIME:-6}
UL_REPS=${BENCH_UL_REPS:-7}
MUX_TIME=${BENCH_MUX_TIME:-1}
PROG_TIME=${BENCH_PROG_TIME:-3}
REDIS_N=${BENCH_REDIS_N:-100000}
DEADLINE=${BENCH_DEADLINE:-3000}
PORT=${BENCH_PORT:-17100}
REPORT=${BENCH_REPORT:-$HERE/REPORT.md}
SECTIONS=passthrough,startup,sockperf,mux,programs,veth,churn,fanout,capture,ipv6,kpass,zcopy,placement
ONLY=${BENCH_ONLY:-$SECTIONS}

die() {
	echo "bench: $*" >&2
	exit 1
}

log() {
	printf 'bench: [%3ds] %s\n' "$SECONDS" "$*" >&2
}

# check_deadline stops the run once it has used its time budget.
check_deadline() {
	if ((SECONDS > DEADLINE)); then
		die "time budget of ${DEADLINE}s exceeded (BENCH_DEADLINE) before: $1"
	fi
}

# section says whether section $1 runs (BENCH_ONLY).
section() {
	[[ ,$ONLY, == *,"$1",* ]]
}

# The server of the test in progress (sockperf or a TCP program), stopped on any exit.
# SERVER_PID is the timeout process that runs it, SERVER_CHILD the server itself.
SERVER_PID=
SERVER_CHILD=
SHM_DIR=
PROG_TMP=
cleanup() {
	if [[ -n $SERVER_CHILD ]]; then
		kill -KILL "$SERVER_CHILD" 2>/dev/null || true
	fi
	if [[ -n $SERVER_PID ]]; then
		kill -KILL "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	if [[ -n $SHM_DIR && -d $SHM_DIR ]]; then
		rm -rf "$SHM_DIR"
	fi
	if [[ -n $PROG_TMP && -d $PROG_TMP ]]; then
		rm -rf "$PROG_TMP"
	fi
}
trap cleanup EXIT

# ---------------------------------------------------------------- preflight
need() {
	command -v "$1" >/dev/null 2>&1 || die "$1 not found: install the Debian package $2 (apt-get install $2)"
}
need gcc gcc
need sockperf sockperf
need hyperfine hyperfine
need ss iproute2
need timeout coreutils
for s in ${ONLY//,/ }; do
	[[ ,$SECTIONS, == *,"$s",* ]] || die "BENCH_ONLY: unknown section $s (known: $SECTIONS)"
done
if [[ -n ${BENCH_ONLY:-} && -z ${BENCH_REPORT:-} ]]; then
	REPORT=$OUT/REPORT.md
fi
PROGRAMS=${BENCH_PROGRAMS:-iperf3,redis,nginx}
for p in ${PROGRAMS//,/ }; do
	[[ $p == iperf3 || $p == redis || $p == nginx ]] || die "BENCH_PROGRAMS: unknown program $p (known: iperf3, redis, nginx)"
done
if section programs; then
	[[ ,$PROGRAMS, != *,iperf3,* ]] || need iperf3 iperf3
	if [[ ,$PROGRAMS, == *,redis,* ]]; then
		need redis-server redis-server
		need redis-benchmark redis-tools
	fi
	if [[ ,$PROGRAMS, == *,nginx,* ]]; then
		need nginx nginx
		need wrk wrk
	fi
fi
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found: install the Debian package time (apt-get install time)"
# Debian's python3 has python3-matplotlib when installed; any python3 is enough for the report.
PY=python3
if [[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
	PY=/usr/bin/python3
fi
need "$PY" python3
[[ $PY == /usr/bin/python3 ]] ||
	log "python3 has no matplotlib (apt-get install python3-matplotlib): the plot will be latency.svg, not latency.png"
[[ $REPS =~ ^[1-9][0-9]*$ && $CALLS_REPS =~ ^[1-9][0-9]*$ && $SP_REPS =~ ^[1-9][0-9]*$ && $SP_TIME =~ ^[1-9][0-9]*$ &&
	$UL_MPS =~ ^[1-9][0-9]*$ && $UL_REPS =~ ^[1-9][0-9]*$ && $UL_TIME =~ ^[1-9][0-9]*$ && $MUX_TIME =~ ^[1-9][0-9]*$ && $PROG_TIME =~ ^[1-9][0-9]*$ && $REDIS_N =~ ^[1-9][0-9]*$ ]] ||
	die "BENCH_REPS, BENCH_CALLS_REPS, BENCH_SOCKPERF_REPS, BENCH_SOCKPERF_TIME, BENCH_UL_MPS, BENCH_UL_REPS, BENCH_UL_TIME, BENCH_MUX_TIME, BENCH_PROG_TIME and BENCH_REDIS_N must be positive integers"
if ! [[ $CALLS_N =~ ^[1-9][0-9]*$ ]] || ((CALLS_N < 21 || CALLS_N > 100000000)); then
	die "BENCH_CALLS_N must be in 21..100000000"
fi

rm -rf "$OUT/raw"
mkdir -p "$BIN" "$OUT/raw/startup" "$OUT/raw/sockperf" "$OUT/raw/programs"
RAW=$OUT/raw

CFLAGS=(-O2 -Wall -Wextra -Werror)
gcc "${CFLAGS[@]}" -pthread -o "$BIN/calls" "$HERE/calls.c"
gcc "${CFLAGS[@]}" -o "$BIN/onesock" "$HERE/onesock.c"
gcc "${CFLAGS[@]}" -o "$BIN/execab" "$HERE/execab.c"
gcc "${CFLAGS[@]}" -pthread -o "$BIN/lineping" "$HERE/lineping.c"
gcc "${CFLAGS[@]}" -o "$BIN/churn" "$HERE/churn.c"
gcc "${CFLAGS[@]}" -o "$BIN/fanout" "$HERE/fanout.c"
gcc "${CFLAGS[@]}" -o "$BIN/pp6" "$HERE/pp6.c"
gcc "${CFLAGS[@]}" -o "$BIN/zbench" "$REPO/tests/vmaapi/zbench.c"
gcc "${CFLAGS[@]}" -shared -fPIC -o "$BIN/emptypreload.so" "$HERE/emptypreload.c"
# script200: a shell script of 200 short commands (none uses an inet socket: under goxio no process
# of it loads the engine).
{
	echo '#!/bin/sh'
	for i in $(seq 1 40); do
		echo 'true'
		echo 'ls / >/dev/null'
		echo 'grep -c root /etc/passwd >/dev/null'
		echo 'cat /etc/hostname >/dev/null 2>&1'
		echo 'date +%s >/dev/null'
	done
} >"$BIN/script200.sh"
chmod +x "$BIN/script200.sh"

FAKE=0
if [[ $GOXIO_LIB == fake ]]; then
	FAKE=1
	gcc "${CFLAGS[@]}" -shared -fPIC -o "$BIN/fakepreload.so" "$HERE/fakepreload.c" -ldl
	GOXIO_LIB=$BIN/fakepreload.so
	[[ -n ${BENCH_REPORT:-} ]] || REPORT=$OUT/REPORT.md
	log "GOXIO_LIB=fake: plumbing run with $GOXIO_LIB, report in $REPORT"
fi
[[ $GOXIO_LIB == /* ]] || die "GOXIO_LIB must be an absolute path, got $GOXIO_LIB"
[[ -f $GOXIO_LIB ]] || die "library $GOXIO_LIB not found: run 'make lib' first (or GOXIO_LIB=fake to test the plumbing)"
# Measure a copy, so that a rebuild of the library during the run cannot mix two builds.
GOXIO_LIB_SRC=$GOXIO_LIB
if [[ $FAKE == 0 ]]; then
	cp "$GOXIO_LIB_SRC" "$BIN/libgoxio.so"
	# the engine, which the library loads from its own folder
	eng=$(dirname "$GOXIO_LIB_SRC")/libgoxio-engine.so
	[[ -f $eng ]] || die "engine $eng not found next to $GOXIO_LIB_SRC: run 'make lib' first"
	cp "$eng" "$BIN/libgoxio-engine.so"
	GOXIO_LIB=$BIN/libgoxio.so
fi
if ! timeout 20 env LD_PRELOAD="$GOXIO_LIB" /bin/true >"$RAW/preload-check.log" 2>&1; then
	die "LD_PRELOAD=$GOXIO_LIB /bin/true failed or hung (exit $?): see $RAW/preload-check.log"
fi

# Rule files: the passthrough run excludes bound UDP sockets; sockperf offloads everything.
cat >"$OUT/os-udp.conf" <<'EOF'
# goxio bench: UDP receivers stay with the kernel (passthrough measure)
application-id * *
use os udp_receiver *:*
EOF
cat >"$OUT/offload-all.conf" <<'EOF'
# goxio bench: offload every UDP and TCP socket (sockperf measure)
application-id * *
use vma tcp_server *:*
use vma tcp_client *:*
use vma udp_receiver *:*
use vma udp_sender *:*
use vma udp_connect *:*
EOF

# ---------------------------------------------------------------- metadata
# The version of the measured library: its start-up banner, else the goxio tool, else git.
version=$(sed -n 's/^.*INFO: goxio \([^ ]*\) (libgoxio\.so.*$/\1 (library banner)/p' "$RAW/preload-check.log" | head -1)
if [[ -z $version && $FAKE == 0 && -x $GOXIO_BIN/goxio ]]; then
	version=$(timeout 10 "$GOXIO_BIN/goxio" version 2>/dev/null | head -1 || true)
	[[ -n $version ]] || version=$(timeout 10 "$GOXIO_BIN/goxio" --version 2>/dev/null | head -1 || true)
fi
[[ -n $version ]] || version="$(git -C "$REPO" describe --tags --always --dirty 2>/dev/null || echo unknown) (git describe)"
[[ $FAKE == 0 ]] || version="FAKE preload library (plumbing test), tree $version"

{
	echo "date=$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "nproc=$(nproc)"
	echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "kernel=$(uname -sr)"
	echo "cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
	echo "memory=$(awk '/^MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
	echo "lineping=$(timeout 30 "$BIN/lineping" 200000 || echo one_way_ns=n/a)"
	echo "glibc=$(ldd --version | head -1 | awk '{print $NF}')"
	echo "goxio_version=$version"
	echo "goxio_lib=$GOXIO_LIB_SRC"
	echo "goxio_lib_sha256=$(sha256sum "$GOXIO_LIB" | cut -c1-16)"
	echo "goxio_lib_size=$(stat -c %s "$GOXIO_LIB")"
	echo "fake=$FAKE"
	echo "sockperf=$(sockperf --version 2>&1 | head -1 | sed 's/^sockperf, //')"
	echo "hyperfine=$(hyperfine --version)"
	echo "gcc=$(gcc -dumpfullversion)"
	echo "reps=$REPS"
	echo "calls_n=$CALLS_N"
	echo "calls_reps=$CALLS_REPS"
	echo "sp_reps=$SP_REPS"
	echo "sp_time=$SP_TIME"
	echo "ul_mps=$UL_MPS"
	echo "ul_time=$UL_TIME"
	echo "ul_reps=$UL_REPS"
	echo "mux_time=$MUX_TIME"
	echo "prog_time=$PROG_TIME"
	echo "redis_n=$REDIS_N"
	echo "sections=$ONLY"
	if section programs; then
		[[ ,$PROGRAMS, != *,iperf3,* ]] || echo "iperf3=$(iperf3 --version 2>&1 | head -1)"
		if [[ ,$PROGRAMS, == *,redis,* ]]; then
			echo "redis=$(redis-server --version 2>&1 | head -1 | sed -n 's/.*\(v=[^ ]*\).*/\1/p')"
		fi
		if [[ ,$PROGRAMS, == *,nginx,* ]]; then
			echo "nginx=$(nginx -v 2>&1 | sed 's/^nginx version: //')"
			echo "wrk=$(wrk -v 2>&1 | head -1 | awk '{print $1, $2}')"
		fi
	fi
} >"$RAW/meta.env"

# Each distinct command line is recorded once, in order, for the report (repetition
# number and port written as $REP and $PORT).
: >"$RAW/commands.txt"
record() {
	local line a words=()
	for a in "$@"; do
		[[ -n $a ]] || a="''"
		words+=("$a")
	done
	# shellcheck disable=SC2016 # $REP and $PORT are written literally
	line=$(printf '%s' "${words[*]}" | sed -E -e "s#$BIN/#tests/bench/out/bin/#g" -e "s#$OUT/#tests/bench/out/#g" \
		-e "s#${SHM_DIR:-/nonexistent}#/dev/shm/goxio-bench.XXXXXX#g" \
		-e "s#${PROG_TMP:-/nonexistent}#/tmp/goxio-bench.XXXXXX#g" \
		-e 's#-r[0-9]+\.json#-r$REP.json#' -e 's#-p [0-9]+#-p $PORT#' -e 's#--port [0-9]+#--port $PORT#' \
		-e 's#127\.0\.0\.1:[0-9]+#127.0.0.1:$PORT#g')
	grep -qxF -- "$line" "$RAW/commands.txt" || printf '%s\n' "$line" >>"$RAW/commands.txt"
}

# ---------------------------------------------------------------- 1. passthrough
# Three variants, all with the same rule file: kernel (no preload), threaded (no preload, one idle
# thread: the kernel's own extra cost for a multi-threaded process) and goxio.
if section passthrough; then
	log "passthrough: $CALLS_REPS x 4 cases x 3 variants, $CALLS_N calls each"
	: >"$RAW/passthrough.tsv"
	for rep in $(seq 1 "$CALLS_REPS"); do
		for case in fcntl-pipe sockopt-unix sockopt-udp-os sockopt-udp; do
			for variant in kernel threaded goxio; do
				check_deadline "passthrough $case"
				cmd=(env VMA_CONFIG_FILE="$OUT/os-udp.conf")
				case $variant in
				threaded) cmd+=(CALLS_IDLE_THREAD=1) ;;
				goxio) cmd+=(LD_PRELOAD="$GOXIO_LIB") ;;
				esac
				cmd+=("$BIN/calls" "$case" "$CALLS_N")
				record "${cmd[@]}"
				if ! line=$(timeout 120 "${cmd[@]}" 2>>"$RAW/passthrough.stderr"); then
					die "passthrough $case ($variant) failed: see $RAW/passthrough.stderr"
				fi
				printf '%s\t%s\t%s\t%s\t%s\n' "$case" "$variant" "$rep" "$(awk '{print $3}' <<<"$line")" \
					"$(awk '{print $4}' <<<"$line")" >>"$RAW/passthrough.tsv"
			done
		done
	done
fi

# ---------------------------------------------------------------- 2. start-up and RSS
if section startup; then
	log "start-up: $REPS rounds of hyperfine x 2 programs x 2 variants, and of the script x 4 variants interleaved"
	for rep in $(seq 1 "$REPS"); do
		for prog in true onesock; do
			case $prog in
			true) path=/bin/true ;;
			onesock) path=$BIN/onesock ;;
			esac
			# Each round starts with another variant, so that a drift of the machine within a
			# round (caches, another tenant) does not always land on the same one.
			variants=(kernel goxio)
			first=$(((rep - 1) % ${#variants[@]}))
			variants=("${variants[@]:first}" "${variants[@]:0:first}")
			for variant in "${variants[@]}"; do
				check_deadline "start-up $prog"
				cmd=(env)
				[[ $variant == goxio ]] && cmd+=(LD_PRELOAD="$GOXIO_LIB")
				cmd+=("$path")
				hf=(hyperfine -N --warmup 3 --runs 20 --style basic
					--export-json "$RAW/startup/$prog-$variant-r$rep.json" "${cmd[*]}")
				record "${hf[@]}"
				timeout 120 "${hf[@]}" >>"$RAW/startup.log" 2>&1 ||
					die "hyperfine $prog ($variant) failed: see $RAW/startup.log"
			done
		done
		# The script (0.2 s a run, a few percent apart between variants) runs interleaved run by
		# run, on CPU 0 (script200: what each variant adds) and unpinned (script200u). Unpinned,
		# the scheduler's placement of each command and its shell on one CPU or two (a wake-up
		# across this VM's CPUs costs ~50 us, on one ~6 us; a command has several) moves the
		# script's time by more than the goal from one run to the next: the kernel is run twice
		# there (kernel, kernelagain) to show that spread. On CPU 0 the script also runs under two
		# decompositions of what goxio adds: an empty preloaded library (the preload mechanism's
		# own cost, the floor of any LD_PRELOAD library) and libgoxio.so preloaded without goxio run.
		check_deadline "start-up script200"
		run_goxio="env LD_PRELOAD=$GOXIO_LIB $BIN/script200.sh"
		if [[ -x $GOXIO_BIN/goxio && $FAKE == 0 ]]; then
			run_goxio="$GOXIO_BIN/goxio run --lib $GOXIO_LIB -- $BIN/script200.sh"
		fi
		il=(python3 "$HERE/interleave.py" --rounds 25 --out "$RAW/startup/script200"
			"kernel-r$rep=taskset -c 0 env $BIN/script200.sh"
			"emptylib-r$rep=taskset -c 0 env LD_PRELOAD=$BIN/emptypreload.so $BIN/script200.sh"
			"preload-r$rep=taskset -c 0 env LD_PRELOAD=$GOXIO_LIB $BIN/script200.sh"
			"goxio-r$rep=taskset -c 0 $run_goxio")
		record "${il[@]}"
		timeout 300 "${il[@]}" >>"$RAW/startup.log" 2>&1 || die "the script's interleaved runs failed: see $RAW/startup.log"
		il=(python3 "$HERE/interleave.py" --rounds 25 --out "$RAW/startup/script200u"
			"kernel-r$rep=env $BIN/script200.sh" "kernelagain-r$rep=env $BIN/script200.sh" "goxio-r$rep=$run_goxio")
		record "${il[@]}"
		timeout 300 "${il[@]}" >>"$RAW/startup.log" 2>&1 || die "the script's interleaved runs failed: see $RAW/startup.log"
	done

	# What one exec costs under an empty preloaded library and under libgoxio.so, interleaved exec
	# by exec (the script's rows above are whole runs of 0.5 s, a few percent apart, and this
	# machine drifts by as much from one run to the next).
	log "start-up: 300 execs of ls each without a library, with an empty one and with libgoxio.so, interleaved"
	ab=("$BIN/execab" 300 - "$BIN/emptypreload.so" "$GOXIO_LIB" -- "$(command -v ls)" /)
	record "${ab[@]}"
	timeout 300 "${ab[@]}" >"$RAW/execab.txt" 2>>"$RAW/startup.log" || die "execab failed: see $RAW/startup.log"

	log "max RSS: $REPS rounds x 2 programs x 2 variants"
	: >"$RAW/rss.tsv"
	for rep in $(seq 1 "$REPS"); do
		for prog in true onesock; do
			path=/bin/true
			[[ $prog == true ]] || path=$BIN/onesock
			for variant in kernel goxio; do
				cmd=(/usr/bin/time -f '%M %e' -o "$RAW/rss.one" env)
				[[ $variant == kernel ]] || cmd+=(LD_PRELOAD="$GOXIO_LIB")
				cmd+=("$path")
				record "${cmd[@]}"
				timeout 30 "${cmd[@]}" >>"$RAW/rss.log" 2>&1 || die "$prog ($variant) under /usr/bin/time failed: see $RAW/rss.log"
				read -r kb wall <"$RAW/rss.one"
				printf '%s\t%s\t%s\t%s\t%s\n' "$prog" "$variant" "$rep" "$kb" "$wall" >>"$RAW/rss.tsv"
			done
		done
	done
	rm -f "$RAW/rss.one"
fi

# ---------------------------------------------------------------- 3. sockperf
# The shared-memory variants' segments live in a private folder: other goxio processes on the
# machine (tests running at the same time) neither see nor disturb them, and what a run leaves
# behind is ours to find and remove.
SHM_DIR=$(mktemp -d /dev/shm/goxio-bench.XXXXXX)
# Rows of the sockperf tables: "name|environment of both ends". A future transport is one
# more entry here or in BENCH_VARIANTS_EXTRA.
SHM_ENV="LD_PRELOAD=$GOXIO_LIB VMA_CONFIG_FILE=$OUT/offload-all.conf GOXIO_SHM=1 GOXIO_SHM_DIR=$SHM_DIR"
ALL_VARIANTS=(
	"kernel|"
	"goxio|LD_PRELOAD=$GOXIO_LIB VMA_CONFIG_FILE=$OUT/offload-all.conf GOXIO_SHM=0 GOXIO_SHM_TCP=0"
	"goxio-shm|$SHM_ENV"
	"goxio-shm-poll|$SHM_ENV VMA_SPEC=latency"
	"goxio-shm-tcp|$SHM_ENV GOXIO_SHM_TCP=1"
	"goxio-shm-tcp-poll|$SHM_ENV GOXIO_SHM_TCP=1 VMA_SPEC=latency"
)
if [[ -n ${BENCH_VARIANTS_EXTRA:-} ]]; then
	IFS=';' read -r -a extra <<<"$BENCH_VARIANTS_EXTRA"
	ALL_VARIANTS+=("${extra[@]}")
fi
# The sockperf rows (BENCH_VARIANTS), kernel first: the report's ratios are against it.
VARIANTS=()
for v in "${ALL_VARIANTS[@]}"; do
	if [[ -z ${BENCH_VARIANTS:-} || ,$BENCH_VARIANTS, == *,"${v%%|*}",* ]]; then
		VARIANTS+=("$v")
	fi
done
[[ ${VARIANTS[0]%%|*} == kernel ]] || die "BENCH_VARIANTS must include kernel (the reference of every ratio)"
if [[ -n ${BENCH_VARIANTS:-} ]]; then
	for n in ${BENCH_VARIANTS//,/ }; do
		printf '%s\n' "${ALL_VARIANTS[@]%%|*}" | grep -qxF -- "$n" || die "BENCH_VARIANTS: unknown variant $n"
	done
fi
printf '%s\n' "${VARIANTS[@]}" | sed -e "s#$OUT/#tests/bench/out/#g" -e "s#$SHM_DIR#/dev/shm/goxio-bench.XXXXXX#g" \
	>"$RAW/variants.txt"
# Tests: name|sockperf mode|protocol|message size|extra client options.
# Ping-pong is paced at 1 M round trips/s: sockperf sizes its sample array for at most that
# many per second with --mps=max and aborts ("_seqN > m_maxSequenceNo") when a transport answers
# faster (goxio-shm-poll does, ~1.2 M/s, and shared-memory TCP ~0.9 M/s did); the kernel's ~30-150 k/s
# is not affected by the cap.
ALL_TESTS=(
	"udp-pp|ping-pong|udp|64|--mps 1000000"
	"udp-pp-1400|ping-pong|udp|1400|--mps 1000000"
	"tcp-pp|ping-pong|tcp|64|--mps 1000000"
	"udp-tp|throughput|udp|64|"
	"tcp-tp|throughput|tcp|64|"
	"udp-ul|under-load|udp|64|--mps $UL_MPS --reply-every 10"
)
TESTS=()
for t in "${ALL_TESTS[@]}"; do
	if [[ -z ${BENCH_TESTS:-} || ,$BENCH_TESTS, == *,"${t%%|*}",* ]]; then
		TESTS+=("$t")
	fi
done
if [[ -n ${BENCH_TESTS:-} ]]; then
	for n in ${BENCH_TESTS//,/ }; do
		printf '%s\n' "${ALL_TESTS[@]%%|*}" | grep -qxF -- "$n" || die "BENCH_TESTS: unknown test $n"
	done
fi
# Multiplexer tests: server -F with a feed file of two UDP sockets (one for recvfrom, which
# serves a single socket); the client pings the first one.
MUXES=(epoll poll select recvfrom)
MUX_VARIANTS=(kernel goxio-shm)
CLK_TCK=$(getconf CLK_TCK)

# runs_test says whether variant $2 (environment $3) runs test $1: the TCP tests run on the
# variants whose TCP goes through the kernel (no GOXIO_SHM=1: the others would repeat the goxio
# row) or through rings (GOXIO_SHM_TCP=1); the UDP tests skip the GOXIO_SHM_TCP=1 variants (their
# UDP path is the one without it); the plain goxio variant (kernel transport) skips the 1400 B and
# under-load tests for time.
runs_test() {
	case $1 in
	tcp-*) [[ $3 != *GOXIO_SHM=1* || $3 == *GOXIO_SHM_TCP=1* ]] ;;
	udp-pp-1400 | udp-ul) [[ $2 != goxio && $3 != *GOXIO_SHM_TCP=1* ]] ;;
	*) [[ $3 != *GOXIO_SHM_TCP=1* ]] ;;
	esac
}

# proc_cpu prints the user+system CPU seconds a live process has used so far.
proc_cpu() {
	awk -v tck="$CLK_TCK" '{sub(/^.*\) /, ""); printf "%.3f\n", ($12 + $13) / tck}' "/proc/$1/stat"
}

# wait_listen waits until something listens on 127.0.0.1:$2 ($1 = t or u) while process $3
# lives, at most 10 s.
wait_listen() {
	local _
	for _ in $(seq 1 100); do
		if ss -Hn"$1"l "sport = :$2" 2>/dev/null | grep -q .; then
			return 0
		fi
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# child_of prints the pid of the only child of process $1 (timeout's sockperf), waiting up to 2 s.
child_of() {
	local _ c
	for _ in $(seq 1 20); do
		c=$(cat /proc/"$1"/task/*/children 2>/dev/null | awk '{print $1; exit}')
		if [[ -n $c ]]; then
			echo "$c"
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# stop_server ends the sockperf server (SIGINT: it prints its totals), SIGKILL after 3 s.
stop_server() {
	local _
	[[ -n $SERVER_PID ]] || return 0
	kill -INT "${SERVER_CHILD:-$SERVER_PID}" 2>/dev/null || true
	for _ in $(seq 1 30); do
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	[[ -z $SERVER_CHILD ]] || kill -KILL "$SERVER_CHILD" 2>/dev/null || true
	kill -KILL "$SERVER_PID" 2>/dev/null || true
	wait "$SERVER_PID" 2>/dev/null || true
	SERVER_PID=
	SERVER_CHILD=
}

# shm_leftovers prints how many segment files (goxio.* of UDP, goxio-tcp-* of TCP) are in the
# private shm folder (none should be once both ends have exited) and removes them; the names go to
# $RAW/shm-leftovers.txt. The namespace's discovery directory (goxio.*.dir) and TCP pairing table
# (goxio.*.pairs<version>), and the user's held-wait table (goxio.*.held<version>), are shared by
# every process of the namespace or the machine and stay by design (SHM_KEEP: find's tests that
# leave them out, here and at the end of the run).
SHM_KEEP=(! -name 'goxio.*.dir' ! -name 'goxio.*.pairs[0-9]*' ! -name 'goxio.*.held[0-9]*')
shm_leftovers() {
	local n segs=(find "$SHM_DIR" -mindepth 1 -maxdepth 1 -name 'goxio*' "${SHM_KEEP[@]}")
	n=$("${segs[@]}" | wc -l)
	if ((n > 0)); then
		{
			echo "after $1:"
			"${segs[@]}" -printf '  %f %s bytes\n'
		} >>"$RAW/shm-leftovers.txt"
		"${segs[@]}" -delete
	fi
	echo "$n"
}

# sockperf_run runs one server and one client and appends a line to $RAW/sockperf.tsv:
# test variant rep client-wall client-cpu server-cpu status leftovers.
# $1 test name, $2 variant name, $3 rep, $4 client seconds, $5 l4 (t|u), then the server's
# arguments, "--", the client's arguments (both without the environment).
sockperf_run() {
	local test=$1 name=$2 rep=$3 secs=$4 l=$5 env_str base status scpu cwall cuser csys left
	shift 5
	local srv_args=() cli_args=()
	while [[ $# -gt 0 && $1 != -- ]]; do
		srv_args+=("$1")
		shift
	done
	shift
	cli_args=("$@")
	env_str=$(variant_env "$name")
	local envs=()
	read -r -a envs <<<"$env_str"
	base=$RAW/sockperf/$test-$name-r$rep
	local srv=(env "${envs[@]}" sockperf server "${srv_args[@]}")
	local cli=(env "${envs[@]}" sockperf "${cli_args[@]}")
	record "${srv[@]}" "&"
	record "${cli[@]}"
	status=ok
	scpu=nan
	timeout -s KILL $((secs + 60)) "${srv[@]}" >"$base.server.log" 2>&1 &
	SERVER_PID=$!
	SERVER_CHILD=$(child_of "$SERVER_PID" || true)
	if ! wait_listen "$l" "$PORT" "$SERVER_PID"; then
		status=server-not-listening
	else
		local rc=0
		timeout -s KILL $((secs + 30)) /usr/bin/time -f '%e %U %S' -o "$base.time" "${cli[@]}" \
			>"$base.client.log" 2>&1 || rc=$?
		if [[ -n $SERVER_CHILD ]]; then
			scpu=$(proc_cpu "$SERVER_CHILD" 2>/dev/null || echo nan)
		fi
		if ((rc != 0)); then
			status=client-exit-$rc
		elif ! kill -0 "$SERVER_PID" 2>/dev/null; then
			status=server-died
		fi
	fi
	stop_server
	cwall=nan cuser=nan csys=nan
	if [[ -s $base.time ]] && [[ $(tail -1 "$base.time") =~ ^[0-9.]+\ [0-9.]+\ [0-9.]+$ ]]; then
		read -r cwall cuser csys < <(tail -1 "$base.time")
	fi
	left=0
	[[ $env_str != *GOXIO_SHM=1* ]] || left=$(shm_leftovers "$test $name r$rep")
	[[ $status == ok ]] || log "sockperf $test $name r$rep: $status (see $base.*.log)"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$test" "$name" "$rep" "$cwall" \
		"$(awk -v u="$cuser" -v s="$csys" 'BEGIN {printf "%.3f", u + s}')" "$scpu" "$status" "$left" \
		>>"$RAW/sockperf.tsv"
}

# variant_env prints the environment of variant $1.
variant_env() {
	local v
	for v in "${ALL_VARIANTS[@]}"; do
		if [[ ${v%%|*} == "$1" ]]; then
			printf '%s\n' "${v#*|}"
			return 0
		fi
	done
	die "unknown variant $1"
}

: >"$RAW/sockperf.tsv"
: >"$RAW/shm-leftovers.txt"
section sockperf || TESTS=()
((${#TESTS[@]} == 0)) ||
	log "sockperf: $SP_REPS reps ($UL_REPS of under-load) x ${#TESTS[@]} tests x up to ${#VARIANTS[@]} variants, -t $SP_TIME (shm folder $SHM_DIR)"
for rep in $(seq 1 $((SP_REPS > UL_REPS ? SP_REPS : UL_REPS))); do
	for t in "${TESTS[@]}"; do
		IFS='|' read -r test mode proto size opts <<<"$t"
		if [[ $test == udp-ul ]]; then
			((rep <= UL_REPS)) || continue
		else
			((rep <= SP_REPS)) || continue
		fi
		for v in "${VARIANTS[@]}"; do
			name=${v%%|*}
			runs_test "$test" "$name" "${v#*|}" || continue
			check_deadline "sockperf $test $name"
			PORT=$((PORT + 1))
			pflag=()
			l=u
			if [[ $proto == tcp ]]; then
				pflag=(--tcp)
				l=t
			fi
			read -r -a xopts <<<"$opts"
			secs=$SP_TIME
			[[ $test != udp-ul ]] || secs=$UL_TIME
			sockperf_run "$test" "$name" "$rep" "$secs" "$l" -i 127.0.0.1 -p "$PORT" "${pflag[@]}" -- \
				"$mode" -i 127.0.0.1 -p "$PORT" "${pflag[@]}" -t "$secs" -m "$size" "${xopts[@]}"
		done
	done
done

# ---------------------------------------------------------------- 4. server multiplexers
section mux || MUXES=()
((${#MUXES[@]} == 0)) || log "multiplexers: ${#MUXES[@]} x ${#MUX_VARIANTS[@]} variants, -t $MUX_TIME"
for mux in "${MUXES[@]}"; do
	for name in "${MUX_VARIANTS[@]}"; do
		check_deadline "multiplexer $mux $name"
		PORT=$((PORT + 1))
		feed=$OUT/feed-$mux.txt
		if [[ $mux == recvfrom ]]; then
			printf 'U:127.0.0.1:%d\n' "$PORT" >"$feed"
		else
			printf 'U:127.0.0.1:%d\nU:127.0.0.1:%d\n' "$PORT" $((PORT + 500)) >"$feed"
		fi
		sockperf_run "mux-$mux" "$name" 1 "$MUX_TIME" u -f "$feed" -F "$mux" -- \
			ping-pong -i 127.0.0.1 -p "$PORT" -t "$MUX_TIME" -m 64
	done
done
# ---------------------------------------------------------------- 5. TCP programs
# Both ends of each program under the same variant: kernel, or goxio-shm-tcp (the connections
# between the two goxio processes go through rings). The server runs under /usr/bin/time (its CPU
# and how it ended) inside timeout; SERVER_CHILD is the program itself, which stop_server ends
# with SIGINT. A goxio_stats snapshot of the goxio server PROG_STATS_AT seconds into the client
# run gives the bytes its live connections moved through rings and through the kernel.
PROG_VARIANTS=(kernel goxio-shm-tcp)
STATS_TOOL=$GOXIO_BIN/goxio_stats
PROG_STATS_AT=1

# server_end prints how the server whose /usr/bin/time file is $1 ended: exit-N, signal-N or unknown.
server_end() {
	local n
	if [[ ! -s $1 ]]; then
		echo unknown
	elif n=$(sed -n 's/^Command terminated by signal \([0-9]*\).*/\1/p' "$1" | head -1) && [[ -n $n ]]; then
		echo "signal-$n"
	elif n=$(sed -n 's/^Command exited with non-zero status \([0-9]*\).*/\1/p' "$1" | head -1) && [[ -n $n ]]; then
		echo "exit-$n"
	else
		echo exit-0
	fi
}

# time_cpu prints the user+system seconds of a /usr/bin/time -f '%e %U %S' file $1, nan without one.
time_cpu() {
	if [[ -s $1 ]] && [[ $(tail -1 "$1") =~ ^[0-9.]+\ ([0-9.]+)\ ([0-9.]+)$ ]]; then
		awk -v u="${BASH_REMATCH[1]}" -v s="${BASH_REMATCH[2]}" 'BEGIN {printf "%.3f\n", u + s}'
	else
		echo nan
	fi
}

# prog_run runs one server and one client of TCP program $1 under variant $2 (repetition $3, client
# time limit $4 s) and appends a line to $RAW/programs.tsv: program variant rep client-wall
# client-cpu server-cpu status leftovers server-end. Then come the server's command line, "--", and
# the client's (both without the environment). The client's stdout goes to .client.log, its stderr
# to .client.err.
prog_run() {
	local prog=$1 name=$2 rep=$3 limit=$4 env_str base status rc cpid tpid left cwall
	shift 4
	local srv_args=() cli_args=()
	while [[ $# -gt 0 && $1 != -- ]]; do
		srv_args+=("$1")
		shift
	done
	shift
	cli_args=("$@")
	env_str=$(variant_env "$name")
	local envs=()
	read -r -a envs <<<"$env_str"
	base=$RAW/programs/$prog-$name-r$rep
	local srv=(env "${envs[@]}" "${srv_args[@]}")
	local cli=(env "${envs[@]}" "${cli_args[@]}")
	record "${srv[@]}" "&"
	record "${cli[@]}"
	status=ok
	timeout -s KILL $((limit + 60)) /usr/bin/time -f '%e %U %S' -o "$base.server.time" "${srv[@]}" \
		>"$base.server.log" 2>&1 &
	SERVER_PID=$!
	tpid=$(child_of "$SERVER_PID" || true)
	SERVER_CHILD=
	[[ -z $tpid ]] || SERVER_CHILD=$(child_of "$tpid" || true)
	if ! wait_listen t "$PORT" "$SERVER_PID"; then
		status=server-not-listening
	else
		rc=0
		timeout -s KILL "$limit" /usr/bin/time -f '%e %U %S' -o "$base.client.time" "${cli[@]}" \
			>"$base.client.log" 2>"$base.client.err" &
		cpid=$!
		if [[ $FAKE == 0 && $env_str == *LD_PRELOAD=* && -x $STATS_TOOL && -n $SERVER_CHILD ]]; then
			sleep "$PROG_STATS_AT"
			# The server and its children (nginx's workers, which load their own engines): one
			# JSON document per line, those with an engine.
			: >"$base.stats.json"
			for p in "$SERVER_CHILD" $(pgrep -P "$SERVER_CHILD" || true); do
				timeout 10 "$STATS_TOOL" -F -p "$p" -c 1 --json >>"$base.stats.json" 2>>"$base.stats.err" || true
			done
		fi
		wait "$cpid" || rc=$?
		if ((rc != 0)); then
			status=client-exit-$rc
		elif [[ $prog != iperf3 ]] && ! kill -0 "$SERVER_PID" 2>/dev/null; then
			# iperf3 -s -1 ends by itself after its test; the others must still be serving.
			status=server-died
		fi
	fi
	stop_server
	left=0
	[[ $env_str != *GOXIO_SHM=1* ]] || left=$(shm_leftovers "$prog $name r$rep")
	cwall=nan
	if [[ -s $base.client.time ]] && [[ $(tail -1 "$base.client.time") =~ ^([0-9.]+)\  ]]; then
		cwall=${BASH_REMATCH[1]}
	fi
	[[ $status == ok ]] || log "$prog $name r$rep: $status (see $base.*)"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$prog" "$name" "$rep" "$cwall" "$(time_cpu "$base.client.time")" \
		"$(time_cpu "$base.server.time")" "$status" "$left" "$(server_end "$base.server.time")" >>"$RAW/programs.tsv"
}

# nginx_conf writes nginx's configuration for port $1: its usual shape, a master and 2 worker
# processes (forked: under goxio each worker loads its own engine), no daemon, everything under
# the private prefix, no access log.
nginx_conf() {
	local p=$PROG_TMP/nginx user=
	[[ $(id -u) != 0 ]] || user="user root;" # workers would switch to nobody, who cannot enter $p
	cat >"$p/nginx.conf" <<EOF
$user
daemon off;
master_process on;
worker_processes 2;
pid $p/nginx.pid;
error_log $p/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $p/tmp/body;
    proxy_temp_path $p/tmp/proxy;
    fastcgi_temp_path $p/tmp/fastcgi;
    uwsgi_temp_path $p/tmp/uwsgi;
    scgi_temp_path $p/tmp/scgi;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$1;
        root $p/html;
    }
}
EOF
}

: >"$RAW/programs.tsv"
if section programs; then
	PROG_TMP=$(mktemp -d /tmp/goxio-bench.XXXXXX)
	mkdir -p "$PROG_TMP/redis" "$PROG_TMP/nginx/html" "$PROG_TMP/nginx/tmp"
	# The static file: 16 lines of 64 bytes, 1 KiB.
	awk 'BEGIN { for (i = 0; i < 16; i++) printf "%063d\n", i }' >"$PROG_TMP/nginx/html/index.html"
	for name in "${PROG_VARIANTS[@]}"; do
		printf '%s|%s\n' "$name" "$(variant_env "$name")"
	done | sed -e "s#$OUT/#tests/bench/out/#g" -e "s#$SHM_DIR#/dev/shm/goxio-bench.XXXXXX#g" >"$RAW/programs-variants.txt"
	log "TCP programs: $SP_REPS reps x ${PROGRAMS//,/ } x ${#PROG_VARIANTS[@]} variants"
	for rep in $(seq 1 "$SP_REPS"); do
		for prog in ${PROGRAMS//,/ }; do
			for name in "${PROG_VARIANTS[@]}"; do
				check_deadline "$prog $name"
				PORT=$((PORT + 1))
				case $prog in
				iperf3)
					prog_run iperf3 "$name" "$rep" $((PROG_TIME + 30)) iperf3 -s -1 -B 127.0.0.1 -p "$PORT" -- \
						iperf3 -c 127.0.0.1 -p "$PORT" -t "$PROG_TIME" --json
					;;
				redis)
					prog_run redis "$name" "$rep" 90 redis-server --port "$PORT" --bind 127.0.0.1 --save '' \
						--appendonly no --daemonize no --dir "$PROG_TMP/redis" --logfile '' -- \
						redis-benchmark -h 127.0.0.1 -p "$PORT" -t set,get -n "$REDIS_N" --csv
					;;
				nginx)
					nginx_conf "$PORT"
					prog_run nginx "$name" "$rep" $((PROG_TIME + 30)) nginx -p "$PROG_TMP/nginx" \
						-e "$PROG_TMP/nginx/error.log" -c "$PROG_TMP/nginx/nginx.conf" -- \
						wrk -t1 -c50 -d"${PROG_TIME}s" --latency --timeout 5s "http://127.0.0.1:$PORT/index.html"
					# The error log of this run only (nginx appends).
					mv "$PROG_TMP/nginx/error.log" "$RAW/programs/nginx-$name-r$rep.error.log" 2>/dev/null || true
					;;
				esac
			done
		done
	done
	rm -rf "$PROG_TMP"
	PROG_TMP=
fi

# The discovery directory, the pairing table and the held-wait table stay by design; anything else is a leftover.
find "$SHM_DIR" -mindepth 1 -maxdepth 1 "${SHM_KEEP[@]}" -printf 'at the end: %f\n' >>"$RAW/shm-leftovers.txt"
rm -rf "$SHM_DIR"
SHM_DIR=

# ---------------------------------------------------------------- 6. veth pair (AF_XDP)
if section veth; then
	check_deadline "veth"
	RAW=$RAW GOXIO_LIB=$GOXIO_LIB OFFLOAD_CONF=$OUT/offload-all.conf SP_REPS=$SP_REPS SP_TIME=$SP_TIME \
		PP6=$BIN/pp6 PORT=$((PORT + 1000)) "$HERE/veth.sh" || die "veth pair measure failed"
else
	echo "not in BENCH_ONLY" >"$RAW/veth-skipped.txt"
fi

# ---------------------------------------------------------------- 7. socket churn
GOXIO_ENV=${BENCH_GOXIO_ENV:-GOXIO_SHM=1 GOXIO_SHM_TCP=1}
if section churn; then
	check_deadline "churn"
	log "socket churn"
	"$PY" "$HERE/churn.py" --churn "$BIN/churn" --lib "$GOXIO_LIB" --env "$GOXIO_ENV VMA_TRACELEVEL=WARN" \
		--rounds "${BENCH_CHURN_ROUNDS:-4000}" --reps "${BENCH_CHURN_REPS:-11}" --port $((PORT + 500)) --out "$RAW/churn.md" \
		>"$RAW/churn.log" 2>&1 || echo "churn.py failed: $(tail -n 3 "$RAW/churn.log")" >"$RAW/churn.md"
	echo "python3 tests/bench/churn.py --churn tests/bench/out/bin/churn --lib LIB --env \"$GOXIO_ENV VMA_TRACELEVEL=WARN\" --rounds ${BENCH_CHURN_ROUNDS:-4000} --reps ${BENCH_CHURN_REPS:-11}" >>"$RAW/commands.txt"
fi

# ---------------------------------------------------------------- 8. multicast fan-out
if section fanout; then
	check_deadline "fanout"
	log "multicast fan-out"
	if [[ $(id -u) == 0 ]]; then
		unshare --net bash -c 'ip link set lo up && exec "$@"' fanout "$PY" "$HERE/fanout.py" --fanout "$BIN/fanout" \
			--lib "$GOXIO_LIB" --env "${GOXIO_ENV} VMA_TRACELEVEL=WARN" --out "$RAW/fanout.md" \
			>"$RAW/fanout.log" 2>&1 || echo "fanout.py failed: $(tail -n 3 "$RAW/fanout.log")" >"$RAW/fanout.md"
		echo "unshare --net; python3 tests/bench/fanout.py --fanout tests/bench/out/bin/fanout --lib LIB --env \"$GOXIO_ENV VMA_TRACELEVEL=WARN\"" >>"$RAW/commands.txt"
		log "multicast fan-out, IPv6"
		unshare --net bash -c 'ip link set lo up && exec "$@"' fanout "$PY" "$HERE/fanout.py" --fanout "$BIN/fanout" --ipv6 \
			--lib "$GOXIO_LIB" --env "${GOXIO_ENV} VMA_TRACELEVEL=WARN" --out "$RAW/fanout6.md" \
			>"$RAW/fanout6.log" 2>&1 || echo "fanout.py --ipv6 failed: $(tail -n 3 "$RAW/fanout6.log")" >"$RAW/fanout6.md"
		echo "unshare --net; python3 tests/bench/fanout.py --fanout tests/bench/out/bin/fanout --ipv6 --lib LIB --env \"$GOXIO_ENV VMA_TRACELEVEL=WARN\"" >>"$RAW/commands.txt"
	else
		echo "not run: needs root (a network namespace of its own)" >"$RAW/fanout.md"
		echo "not run: needs root (a network namespace of its own)" >"$RAW/fanout6.md"
	fi
fi

# ---------------------------------------------------------------- 9. goxio capture
if section capture; then
	check_deadline "capture"
	log "capture: sockperf ping-pong without and with a capture, a stream captured to a file"
	CAPBENCH_PORT=$((PORT + 2000)) CAPBENCH_REPS=$SP_REPS GOXIO_BIN=${GOXIO_BIN:-} \
		"$HERE/capture.sh" >"$RAW/capture.md" 2>"$RAW/capture.log" || log "capture measure failed (see $RAW/capture.log)"
fi

# ---------------------------------------------------------------- 10. IPv6 and dual-stack
if section ipv6; then
	check_deadline "ipv6"
	log "IPv6: ping-pong over ::1, a Node.js server with its default (dual-stack) listen"
	node_args=()
	if command -v node >/dev/null && command -v wrk >/dev/null; then
		node_args=(--node "$(command -v node)" --wrk "$(command -v wrk)")
	fi
	"$PY" "$HERE/ipv6.py" --pp6 "$BIN/pp6" --lib "$GOXIO_LIB" --env "${BENCH_GOXIO_ENV:-}" --reps "$SP_REPS" \
		--port $((PORT + 2500)) "${node_args[@]}" --out "$RAW/ipv6.md" >"$RAW/ipv6.log" 2>&1 ||
		echo "ipv6.py failed: $(tail -n 3 "$RAW/ipv6.log")" >"$RAW/ipv6.md"
	echo "python3 tests/bench/ipv6.py --pp6 tests/bench/out/bin/pp6 --lib LIB --reps $SP_REPS ${node_args[*]}" >>"$RAW/commands.txt"
fi

# pair_part runs the driver $1.py (drivers.pair_args' options) for part $1 with port offset $2:
# its Markdown in $RAW/$1.md (or why it failed), its runs' logs in $RAW/$1/.
pair_part() {
	local name=$1 off=$2 reps=${3:-$SP_REPS}
	local extra=("${@:4}") # more options of the part's script
	mkdir -p "$RAW/$name"
	"$PY" "$HERE/$name.py" --lib "$GOXIO_LIB" --env "VMA_TRACELEVEL=WARN" --reps "$reps" \
		--time "$SP_TIME" --port $((PORT + off)) --logs "$RAW/$name" --out "$RAW/$name.md" "${extra[@]}" \
		>"$RAW/$name.log" 2>&1 || echo "$name.py failed: $(tail -n 3 "$RAW/$name.log")" >"$RAW/$name.md"
	echo "python3 tests/bench/$name.py --lib LIB --env \"VMA_TRACELEVEL=WARN\" --reps $reps --time $SP_TIME${extra[*]:+ ${extra[*]}}" >>"$RAW/commands.txt"
}

# ---------------------------------------------------------------- 11. kernel-served sockets
if section kpass; then
	check_deadline "kpass"
	log "kernel-served sockets: one end without goxio"
	# 17 rounds of every case: their goals (0.95x, within 3%) are closer to 1x than a run's spread.
	# Unpinned, each run's processes land on one CPU or on two (sockperf UDP throughput moves ~1.6x
	# between the two) for the kernel alone as much as with goxio, and 5 rounds put the median ratio
	# of identical costs anywhere in 0.91-1.06x (20 rounds: 1.009x and 0.991x, 2026-11-30); 9 rounds
	# read UDP throughput 0.906x (rounds 0.68-1.38x) and iperf3 to a goxio server 0.938x where the
	# run before read 1.011x; a UDP ping-pong run's average moves by 5-10% (2026-12-01). goxio's own
	# costs there: ~1.3% of a UDP sender's CPU time, ~30 ns of a 2.7 us half round trip.
	pair_part kpass 3000 $((SP_REPS > 17 ? SP_REPS : 17))
fi

# ---------------------------------------------------------------- 13. ping-pong by placement
if section placement; then
	check_deadline "placement"
	log "ping-pong by placement: split CPUs and one CPU"
	pair_part placement 3500
fi

# ---------------------------------------------------------------- 12. VMA's extra API, zero-copy receive
if section zcopy; then
	check_deadline "zcopy"
	if [[ -z ${BENCH_SOCKPERF_VMA:-} && -x $GOXIO_BIN/sockperf-vma/bin/sockperf ]]; then
		BENCH_SOCKPERF_VMA=$GOXIO_BIN/sockperf-vma/bin/sockperf
	fi
	log "zero-copy receive: recvfrom_zcopy against recvfrom (zbench${BENCH_SOCKPERF_VMA:+, sockperf --vmazcopyread and --vmarxfiltercb})"
	zc_args=()
	if [[ -n ${BENCH_SOCKPERF_VMA:-} ]]; then
		zc_args=(--sockperf "$BENCH_SOCKPERF_VMA")
	fi
	"$PY" "$HERE/zcopy.py" --lib "$GOXIO_LIB" --env "VMA_TRACELEVEL=WARN" --zbench "$BIN/zbench" --reps "$SP_REPS" \
		--time "$SP_TIME" --port $((PORT + 3500)) "${zc_args[@]}" --out "$RAW/zcopy.md" >"$RAW/zcopy.log" 2>&1 ||
		echo "zcopy.py failed: $(tail -n 3 "$RAW/zcopy.log")" >"$RAW/zcopy.md"
	echo "python3 tests/bench/zcopy.py --lib LIB --env \"VMA_TRACELEVEL=WARN\" --zbench tests/bench/out/bin/zbench --reps $SP_REPS --time $SP_TIME${BENCH_SOCKPERF_VMA:+ --sockperf $BENCH_SOCKPERF_VMA}" >>"$RAW/commands.txt"
fi

# ---------------------------------------------------------------- report
echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$RAW/meta.env"
# The VM's vCPUs move between host cores: the hand-over floor again, so the report shows whether
# it changed during the run (every cross-CPU figure moves with it).
echo "lineping_end=$(timeout 30 "$BIN/lineping" 200000 || echo one_way_ns=n/a)" >>"$RAW/meta.env"
check_deadline "report"
log "report: $REPORT"
"$PY" "$HERE/report.py" --raw "$RAW" --report "$REPORT" --plot-dir "$(dirname "$REPORT")"
if [[ -s $RAW/capture.md ]]; then
	{
		echo
		sed 's/^# /## /' "$RAW/capture.md"
	} >>"$REPORT"
fi
# Rows base-NAME of BENCH_VARIANTS_EXTRA are an older build measured in the same run: compare each
# with the row NAME's goxio counterpart (base-shm with goxio-shm, ...), with the run-to-run noise.
pairs=()
for v in "${VARIANTS[@]}"; do
	n=${v%%|*}
	[[ $n == base-* ]] && pairs+=("goxio-${n#base-}" "$n")
done
if ((${#pairs[@]} > 0)); then
	{
		echo
		echo "## Before and after: this build against the base build, same run"
		echo
		echo "\`tests/bench/compare.py\` over this run's sockperf rows (the base rows run an older library):"
		echo
		"$PY" "$HERE/compare.py" "$RAW" "${pairs[@]}"
	} >>"$REPORT" 2>&1 || true
fi
log "done in ${SECONDS}s"
