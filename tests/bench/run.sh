#!/usr/bin/env bash
# tests/bench/run.sh: goxio benchmarks, kernel vs goxio in one run.
#
# `make bench` runs it as GOXIO_LIB=<abs>/build/libgoxio.so GOXIO_BIN=<abs>/build ./tests/bench/run.sh.
# It measures, interleaving kernel and goxio runs (A B A B ...):
#   1. passthrough cost: ns per fcntl/getsockopt call with and without LD_PRELOAD, and in a process
#      with one idle thread (calls.c);
#   2. start-up time (hyperfine) and max RSS (/usr/bin/time) of /bin/true and onesock.c;
#   3. sockperf UDP/TCP ping-pong and throughput, 64 B, on 127.0.0.1, both ends preloaded;
# then writes raw data under tests/bench/out/ and the report tests/bench/REPORT.md
# (report.py) with a latency plot (plot.py).
#
# Knobs (environment):
#   GOXIO_LIB              library to preload; "fake" builds a stand-in (fakepreload.c) and writes
#                          the report to out/REPORT.md instead of the committed one
#   GOXIO_BIN              folder holding the goxio tools (for the version string)
#   BENCH_REPS             repetitions of the passthrough, start-up and RSS measures (default 5)
#   BENCH_CALLS_N          calls per passthrough run (default 1050000, 21..100000000)
#   BENCH_CALLS_REPS       passthrough runs per case and variant (default 7)
#   BENCH_SOCKPERF_REPS    repetitions of each sockperf test (default 3)
#   BENCH_SOCKPERF_TIME    seconds per sockperf client run (default 3)
#   BENCH_VARIANTS_EXTRA   more sockperf rows, "name|VAR=value VAR=value;name2|..." (for example
#                          "goxio-shm|LD_PRELOAD=/abs/libgoxio.so GOXIO_TRANSPORT=shm")
#   BENCH_DEADLINE         seconds the whole run may take before it stops with an error (default 420)
#   BENCH_PORT             first TCP/UDP port on 127.0.0.1 the sockperf servers use (default 17100)
#   BENCH_REPORT           where to write the report (default tests/bench/REPORT.md)
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
SP_TIME=${BENCH_SOCKPERF_TIME:-3}
DEADLINE=${BENCH_DEADLINE:-420}
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
SERVER_PID=
cleanup() {
	if [[ -n $SERVER_PID ]]; then
		kill -KILL "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
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
[[ $REPS =~ ^[1-9][0-9]*$ && $CALLS_REPS =~ ^[1-9][0-9]*$ && $SP_REPS =~ ^[1-9][0-9]*$ && $SP_TIME =~ ^[1-9][0-9]*$ ]] ||
	die "BENCH_REPS, BENCH_CALLS_REPS, BENCH_SOCKPERF_REPS and BENCH_SOCKPERF_TIME must be positive integers"
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
} >"$RAW/meta.env"

# Each distinct command line is recorded once, in order, for the report (repetition
# number and port written as $REP and $PORT).
: >"$RAW/commands.txt"
record() {
	local line
	# shellcheck disable=SC2016 # $REP and $PORT are written literally
	line=$(printf '%s' "$*" | sed -E -e "s#$BIN/#tests/bench/out/bin/#g" -e "s#$OUT/#tests/bench/out/#g" \
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
# Rows of the sockperf tables: "name|environment of both ends". A future transport is one
# more entry here or in BENCH_VARIANTS_EXTRA.
VARIANTS=(
	"kernel|"
	"goxio|LD_PRELOAD=$GOXIO_LIB VMA_CONFIG_FILE=$OUT/offload-all.conf"
)
if [[ -n ${BENCH_VARIANTS_EXTRA:-} ]]; then
	IFS=';' read -r -a extra <<<"$BENCH_VARIANTS_EXTRA"
	VARIANTS+=("${extra[@]}")
fi
printf '%s\n' "${VARIANTS[@]}" | sed -e "s#$OUT/#tests/bench/out/#g" >"$RAW/variants.txt"
TESTS=(udp-pp tcp-pp udp-tp tcp-tp)
CLK_TCK=$(getconf CLK_TCK)

# proc_cpu prints the user+system CPU seconds a live process has used so far.
proc_cpu() {
	awk -v tck="$CLK_TCK" '{sub(/^.*\) /, ""); printf "%.3f\n", ($12 + $13) / tck}' "/proc/$1/stat"
}

# wait_listen waits until something listens on 127.0.0.1:$2 ($1 = t or u), at most 10 s.
wait_listen() {
	local _
	for _ in $(seq 1 100); do
		if ss -Hn"$1"l "sport = :$2" 2>/dev/null | grep -q .; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

: >"$RAW/sockperf.tsv"
log "sockperf: $SP_REPS reps x ${#TESTS[@]} tests x ${#VARIANTS[@]} variants, -t $SP_TIME"
for rep in $(seq 1 "$SP_REPS"); do
	for test in "${TESTS[@]}"; do
		for v in "${VARIANTS[@]}"; do
			name=${v%%|*}
			read -r -a envs <<<"${v#*|}"
			check_deadline "sockperf $test $name"
			PORT=$((PORT + 1))
			proto=()
			l=u
			if [[ $test == tcp-* ]]; then
				proto=(--tcp)
				l=t
			fi
			mode=ping-pong
			[[ $test == *-tp ]] && mode=throughput
			base=$RAW/sockperf/$test-$name-r$rep
			srv=(env "${envs[@]}" sockperf server -i 127.0.0.1 -p "$PORT" "${proto[@]}")
			cli=(env "${envs[@]}" sockperf "$mode" -i 127.0.0.1 -p "$PORT" "${proto[@]}" -t "$SP_TIME" -m 64)
			record "${srv[@]}" "&"
			record "${cli[@]}"
			# env execs sockperf, so $! is the server's own pid.
			"${srv[@]}" >"$base.server.log" 2>&1 &
			SERVER_PID=$!
			wait_listen "$l" "$PORT" || die "sockperf server ($test, $name) did not listen on port $PORT: see $base.server.log"
			if ! timeout $((SP_TIME + 30)) /usr/bin/time -f '%e %U %S' -o "$base.time" "${cli[@]}" >"$base.client.log" 2>&1; then
				die "sockperf client ($test, $name) failed: see $base.client.log"
			fi
			scpu=$(proc_cpu "$SERVER_PID" 2>/dev/null || echo nan)
			kill -INT "$SERVER_PID" 2>/dev/null || true
			for _ in $(seq 1 30); do
				kill -0 "$SERVER_PID" 2>/dev/null || break
				sleep 0.1
			done
			kill -KILL "$SERVER_PID" 2>/dev/null || true
			wait "$SERVER_PID" 2>/dev/null || true
			SERVER_PID=
			read -r cwall cuser csys <"$base.time"
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$test" "$name" "$rep" "$cwall" \
				"$(awk -v u="$cuser" -v s="$csys" 'BEGIN {printf "%.3f", u + s}')" "$scpu" >>"$RAW/sockperf.tsv"
		done
	done
done

# ---------------------------------------------------------------- report
echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$RAW/meta.env"
check_deadline "report"
log "report: $REPORT"
"$PY" "$HERE/report.py" --raw "$RAW" --report "$REPORT" --plot-dir "$(dirname "$REPORT")"
log "done in ${SECONDS}s"
