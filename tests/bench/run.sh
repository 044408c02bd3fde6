#!/usr/bin/env bash
# tests/bench/run.sh: goxio benchmarks, kernel vs goxio in one run.
#
# `make bench` runs it as GOXIO_LIB=<abs>/build/libgoxio.so GOXIO_BIN=<abs>/build ./tests/bench/run.sh.
# It measures, interleaving kernel and goxio runs (A B A B ...):
#   1. passthrough cost: ns per fcntl/getsockopt call with and without LD_PRELOAD, and in a process
#      with one idle thread (calls.c);
#   2. start-up time (hyperfine) and max RSS (/usr/bin/time) of /bin/true and onesock.c;
#   3. sockperf on 127.0.0.1, both ends under the same variant: UDP ping-pong 64 B and 1400 B,
#      UDP throughput 64 B, UDP under-load, TCP ping-pong and throughput 64 B; variants kernel,
#      goxio (kernel transport), goxio-shm (shared-memory transport, GOXIO_SHM=1, default
#      parameters) and goxio-shm-poll (the same with VMA_SPEC=latency: receive and select poll forever);
#   4. the sockperf server's multiplexers (-F epoll, poll, select, recvfrom) under kernel and goxio-shm;
#   5. sockperf across a veth pair between two network namespaces, kernel against the AF_XDP
#      transport (GOXIO_XDP) on both ends (tests/bench/veth.sh; needs root, skipped otherwise);
# then writes raw data under tests/bench/out/ and the report tests/bench/REPORT.md
# (report.py) with a latency plot (plot.py, tests/bench/latency.png).
#
# A sockperf run that fails (client or server exit, crash, timeout) does not stop the run: it is
# recorded with its status and the report shows it. The shared-memory variants keep their segments
# in a private folder under /dev/shm (GOXIO_SHM_DIR), which is checked for files left behind after
# every run and removed at the end.
#
# Knobs (environment):
#   GOXIO_LIB              library to preload; "fake" builds a stand-in (fakepreload.c) and writes
#                          the report to out/REPORT.md instead of the committed one
#   GOXIO_BIN              folder holding the goxio tools (for the version string)
#   BENCH_REPS             repetitions of the passthrough, start-up and RSS measures (default 5)
#   BENCH_CALLS_N          calls per passthrough run (default 1050000, 21..100000000)
#   BENCH_CALLS_REPS       passthrough runs per case and variant (default 7)
#   BENCH_SOCKPERF_REPS    repetitions of each sockperf test (default 3)
#   BENCH_SOCKPERF_TIME    seconds per sockperf client run (default 2; sockperf adds about 2 s of its own)
#   BENCH_VARIANTS_EXTRA   more sockperf rows, "name|VAR=value VAR=value;name2|..." (for example
#                          "goxio-shm-nopoll|LD_PRELOAD=/abs/libgoxio.so GOXIO_SHM=1 VMA_RX_POLL=0");
#                          they run every UDP test (and the TCP tests unless they set GOXIO_SHM=1)
#   BENCH_UL_MPS           messages per second of the under-load test (default 50000, reply every 10th)
#   BENCH_MUX_TIME         seconds per client run of the multiplexer tests (default 1)
#   BENCH_DEADLINE         seconds the whole run may take before it stops with an error (default 480)
#   BENCH_PORT             first TCP/UDP port on 127.0.0.1 the sockperf servers use (default 17100)
#   BENCH_REPORT           where to write the report (default tests/bench/REPORT.md)
#   BENCH_VETH             0 skips part 5 (default 1); BENCH_VETH_REPS, BENCH_VETH_PIN,
#                          BENCH_VETH_VARIANTS: see veth.sh
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
MUX_TIME=${BENCH_MUX_TIME:-1}
DEADLINE=${BENCH_DEADLINE:-480}
PORT=${BENCH_PORT:-17100}
REPORT=${BENCH_REPORT:-$HERE/REPORT.md}

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

# The sockperf server of the test in progress, stopped on any exit.
# SERVER_PID is the timeout process that runs it, SERVER_CHILD the server itself.
SERVER_PID=
SERVER_CHILD=
SHM_DIR=
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
	$UL_MPS =~ ^[1-9][0-9]*$ && $MUX_TIME =~ ^[1-9][0-9]*$ ]] ||
	die "BENCH_REPS, BENCH_CALLS_REPS, BENCH_SOCKPERF_REPS, BENCH_SOCKPERF_TIME, BENCH_UL_MPS and BENCH_MUX_TIME must be positive integers"
if ! [[ $CALLS_N =~ ^[1-9][0-9]*$ ]] || ((CALLS_N < 21 || CALLS_N > 100000000)); then
	die "BENCH_CALLS_N must be in 21..100000000"
fi

rm -rf "$OUT/raw"
mkdir -p "$BIN" "$OUT/raw/startup" "$OUT/raw/sockperf"
RAW=$OUT/raw

CFLAGS=(-O2 -Wall -Wextra -Werror)
gcc "${CFLAGS[@]}" -pthread -o "$BIN/calls" "$HERE/calls.c"
gcc "${CFLAGS[@]}" -o "$BIN/onesock" "$HERE/onesock.c"

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
	echo "mux_time=$MUX_TIME"
} >"$RAW/meta.env"

# Each distinct command line is recorded once, in order, for the report (repetition
# number and port written as $REP and $PORT).
: >"$RAW/commands.txt"
record() {
	local line
	# shellcheck disable=SC2016 # $REP and $PORT are written literally
	line=$(printf '%s' "$*" | sed -E -e "s#$BIN/#tests/bench/out/bin/#g" -e "s#$OUT/#tests/bench/out/#g" \
		-e "s#${SHM_DIR:-/nonexistent}#/dev/shm/goxio-bench.XXXXXX#g" \
		-e 's#-r[0-9]+\.json#-r$REP.json#' -e 's#-p [0-9]+#-p $PORT#')
	grep -qxF -- "$line" "$RAW/commands.txt" || printf '%s\n' "$line" >>"$RAW/commands.txt"
}

# ---------------------------------------------------------------- 1. passthrough
# Three variants, all with the same rule file: kernel (no preload), threaded (no preload, one idle
# thread: the kernel's own extra cost for a multi-threaded process) and goxio.
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

# ---------------------------------------------------------------- 2. start-up and RSS
log "start-up: $REPS rounds of hyperfine x 2 programs x 2 variants"
for rep in $(seq 1 "$REPS"); do
	for prog in true onesock; do
		path=/bin/true
		[[ $prog == true ]] || path=$BIN/onesock
		for variant in kernel goxio; do
			check_deadline "start-up $prog"
			cmd=(env)
			[[ $variant == kernel ]] || cmd+=(LD_PRELOAD="$GOXIO_LIB")
			cmd+=("$path")
			hf=(hyperfine -N --warmup 3 --runs 20 --style basic
				--export-json "$RAW/startup/$prog-$variant-r$rep.json" "${cmd[*]}")
			record "${hf[@]}"
			timeout 120 "${hf[@]}" >>"$RAW/startup.log" 2>&1 ||
				die "hyperfine $prog ($variant) failed: see $RAW/startup.log"
		done
	done
done

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

# ---------------------------------------------------------------- 3. sockperf
# The shared-memory variants' segments live in a private folder: other goxio processes on the
# machine (tests running at the same time) neither see nor disturb them, and what a run leaves
# behind is ours to find and remove.
SHM_DIR=$(mktemp -d /dev/shm/goxio-bench.XXXXXX)
# Rows of the sockperf tables: "name|environment of both ends". A future transport is one
# more entry here or in BENCH_VARIANTS_EXTRA.
SHM_ENV="LD_PRELOAD=$GOXIO_LIB VMA_CONFIG_FILE=$OUT/offload-all.conf GOXIO_SHM=1 GOXIO_SHM_DIR=$SHM_DIR"
VARIANTS=(
	"kernel|"
	"goxio|LD_PRELOAD=$GOXIO_LIB VMA_CONFIG_FILE=$OUT/offload-all.conf"
	"goxio-shm|$SHM_ENV"
	"goxio-shm-poll|$SHM_ENV VMA_SPEC=latency"
)
if [[ -n ${BENCH_VARIANTS_EXTRA:-} ]]; then
	IFS=';' read -r -a extra <<<"$BENCH_VARIANTS_EXTRA"
	VARIANTS+=("${extra[@]}")
fi
printf '%s\n' "${VARIANTS[@]}" | sed -e "s#$OUT/#tests/bench/out/#g" -e "s#$SHM_DIR#/dev/shm/goxio-bench.XXXXXX#g" \
	>"$RAW/variants.txt"
# Tests: name|sockperf mode|protocol|message size|extra client options.
# UDP ping-pong is paced at 1 M round trips/s: sockperf sizes its sample array for at most that
# many per second with --mps=max and aborts ("_seqN > m_maxSequenceNo") when a transport answers
# faster (goxio-shm-poll does, ~1.2 M/s); the kernel's ~30-150 k/s is not affected by the cap.
TESTS=(
	"udp-pp|ping-pong|udp|64|--mps 1000000"
	"udp-pp-1400|ping-pong|udp|1400|--mps 1000000"
	"tcp-pp|ping-pong|tcp|64|"
	"udp-tp|throughput|udp|64|"
	"tcp-tp|throughput|tcp|64|"
	"udp-ul|under-load|udp|64|--mps $UL_MPS --reply-every 10"
)
# Multiplexer tests: server -F with a feed file of two UDP sockets (one for recvfrom, which
# serves a single socket); the client pings the first one.
MUXES=(epoll poll select recvfrom)
MUX_VARIANTS=(kernel goxio-shm)
CLK_TCK=$(getconf CLK_TCK)

# runs_test says whether variant $2 (environment $3) runs test $1: the shared-memory transport
# carries UDP only, and the plain goxio variant (kernel transport) skips the 1400 B and under-load
# tests for time.
runs_test() {
	case $1 in
	tcp-*) [[ $3 != *GOXIO_SHM=1* ]] ;;
	udp-pp-1400 | udp-ul) [[ $2 != goxio ]] ;;
	*) true ;;
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

# shm_leftovers prints how many segment files are in the private shm folder (none should be
# once both ends have exited) and removes them; the names go to $RAW/shm-leftovers.txt.
shm_leftovers() {
	local n
	n=$(find "$SHM_DIR" -mindepth 1 -maxdepth 1 -name 'goxio.*' ! -name '*.dir' | wc -l)
	if ((n > 0)); then
		{
			echo "after $1:"
			find "$SHM_DIR" -mindepth 1 -maxdepth 1 -name 'goxio.*' ! -name '*.dir' -printf '  %f %s bytes\n'
		} >>"$RAW/shm-leftovers.txt"
		find "$SHM_DIR" -mindepth 1 -maxdepth 1 -name 'goxio.*' ! -name '*.dir' -delete
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
	for v in "${VARIANTS[@]}"; do
		if [[ ${v%%|*} == "$1" ]]; then
			printf '%s\n' "${v#*|}"
			return 0
		fi
	done
	die "unknown variant $1"
}

: >"$RAW/sockperf.tsv"
: >"$RAW/shm-leftovers.txt"
log "sockperf: $SP_REPS reps x ${#TESTS[@]} tests x up to ${#VARIANTS[@]} variants, -t $SP_TIME (shm folder $SHM_DIR)"
for rep in $(seq 1 "$SP_REPS"); do
	for t in "${TESTS[@]}"; do
		IFS='|' read -r test mode proto size opts <<<"$t"
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
			sockperf_run "$test" "$name" "$rep" "$SP_TIME" "$l" -i 127.0.0.1 -p "$PORT" "${pflag[@]}" -- \
				"$mode" -i 127.0.0.1 -p "$PORT" "${pflag[@]}" -t "$SP_TIME" -m "$size" "${xopts[@]}"
		done
	done
done

# ---------------------------------------------------------------- 4. server multiplexers
log "multiplexers: ${#MUXES[@]} x ${#MUX_VARIANTS[@]} variants, -t $MUX_TIME"
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
# The discovery table (goxio.*.dir) stays by design; anything else is a leftover.
find "$SHM_DIR" -mindepth 1 -maxdepth 1 ! -name 'goxio.*.dir' -printf 'at the end: %f\n' >>"$RAW/shm-leftovers.txt"
rm -rf "$SHM_DIR"
SHM_DIR=

# ---------------------------------------------------------------- 5. veth pair (AF_XDP)
if [[ ${BENCH_VETH:-1} != 0 ]]; then
	check_deadline "veth"
	RAW=$RAW GOXIO_LIB=$GOXIO_LIB OFFLOAD_CONF=$OUT/offload-all.conf SP_REPS=$SP_REPS SP_TIME=$SP_TIME \
		PORT=$((PORT + 1000)) "$HERE/veth.sh" || die "veth pair measure failed"
else
	echo "BENCH_VETH=0" >"$RAW/veth-skipped.txt"
fi

# ---------------------------------------------------------------- report
echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$RAW/meta.env"
check_deadline "report"
log "report: $REPORT"
"$PY" "$HERE/report.py" --raw "$RAW" --report "$REPORT" --plot-dir "$(dirname "$REPORT")"
log "done in ${SECONDS}s"
