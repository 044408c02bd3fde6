#!/usr/bin/env bash
# tests/bench/veth.sh: sockperf across a veth pair between two network namespaces, kernel against
# goxio's AF_XDP transport (GOXIO_XDP) on both ends, interleaved in one run (part 6 of run.sh).
#
# Topology: namespaces goxio-bench-PID-a (client, 10.209.0.1) and -b (server, 10.209.0.2) joined
# by a veth pair, neighbours resolved before the first run. Tests: UDP ping-pong 64 B and 1400 B
# (paced at 1 M round trips/s, as on loopback), UDP throughput 64 B, and UDP ping-pong 64 B over
# IPv6 (fd00:209::1 and ::2) with pp6 (PP6: its binary; skipped without). Variants (both ends):
#   kernel             no preload
#   goxio-xdp          LD_PRELOAD + GOXIO_XDP=<the namespace's veth end>, default parameters (the
#                      steering program in native mode: veth has native XDP)
#   goxio-xdp-generic  the same with GOXIO_XDP_MODE=generic: on a veth this saves the copy of each
#                      frame into the receiving veth's page pool that native mode makes
#   goxio-xdp-poll     (only when named in BENCH_VETH_VARIANTS) the same with VMA_SPEC=latency
#   goxio-xdp-batch    goxio-xdp with GOXIO_XDP_TX_DELAY=50 (opt-in): the sends of a stream share
#                      kicks of the TX ring, and a kicker thread sends what waited 50 us
# The server runs on one CPU and the client on another (BENCH_VETH_PIN, every variant alike): a
# polling receiver and its peer on the same CPU take turns through time slices.
#
# run.sh calls it with RAW (its raw folder), GOXIO_LIB, OFFLOAD_CONF, SP_REPS, SP_TIME, PORT, PP6
# set; it appends to $RAW/veth.tsv (test variant rep client-wall client-cpu server-cpu status) and
# to $RAW/veth6.tsv (udp-pp6 variant rep avg p50 p99 p99.9 status, pp6's figures in us) and
# writes the logs to $RAW/veth/TEST-VARIANT-rREP.{client,server}.log and the commands to
# $RAW/veth-commands.txt. This part alone: BENCH_ONLY=veth make bench (report in out/REPORT.md).
# Knobs: BENCH_VETH_REPS (default BENCH_SOCKPERF_REPS), BENCH_VETH_PIN ("S,C" CPUs, default "0,1"
# with 2 CPUs or more, "" for none), BENCH_VETH_VARIANTS (names to run, space-separated, default
# kernel goxio-xdp goxio-xdp-generic goxio-xdp-batch).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
[[ -n ${RAW:-} ]] || {
	echo "bench: veth: run me through run.sh: BENCH_ONLY=veth make bench" >&2
	exit 1
}
GOXIO_LIB=${GOXIO_LIB:-$REPO/build/libgoxio.so}
SP_REPS=${BENCH_VETH_REPS:-${SP_REPS:-3}}
SP_TIME=${SP_TIME:-2}
PORT=${PORT:-17900}
PIN=${BENCH_VETH_PIN-}
if [[ -z ${BENCH_VETH_PIN+x} ]] && (($(nproc) >= 2)); then
	PIN=0,1
fi
WANT=${BENCH_VETH_VARIANTS:-kernel goxio-xdp goxio-xdp-generic goxio-xdp-batch}

vlog() {
	printf 'bench: veth: [%3ds] %s\n' "$SECONDS" "$*" >&2
}

((EUID == 0)) || {
	vlog "not root: the veth pair needs network namespaces; part 5 skipped"
	echo "not root" >"$RAW/veth-skipped.txt"
	exit 0
}
for t in ip sockperf taskset timeout; do
	command -v "$t" >/dev/null || {
		vlog "$t not found; part 5 skipped"
		echo "$t not found" >"$RAW/veth-skipped.txt"
		exit 0
	}
done
[[ -f $GOXIO_LIB ]] || {
	echo "bench: veth: library $GOXIO_LIB not found" >&2
	exit 1
}
[[ -f ${OFFLOAD_CONF:-} ]] || {
	echo "bench: veth: OFFLOAD_CONF (the rule file offloading every socket) not found" >&2
	exit 1
}

NSA=goxio-bench-$$-a
NSB=goxio-bench-$$-b
IFA=gxbva$$
IFB=gxbvb$$
ADDRA=10.209.0.1
ADDRB=10.209.0.2
ADDR6A=fd00:209::1
ADDR6B=fd00:209::2
SRV=
cleanup_veth() {
	[[ -z $SRV ]] || kill -KILL "$SRV" 2>/dev/null || true
	ip netns del "$NSA" 2>/dev/null || true
	ip netns del "$NSB" 2>/dev/null || true
}
trap cleanup_veth EXIT

ip netns add "$NSA"
ip netns add "$NSB"
ip -n "$NSA" link add "${IFA:0:15}" type veth peer name "${IFB:0:15}" netns "$NSB"
IFA=${IFA:0:15}
IFB=${IFB:0:15}
ip -n "$NSA" addr add $ADDRA/24 dev "$IFA"
ip -n "$NSB" addr add $ADDRB/24 dev "$IFB"
ip -n "$NSA" addr add $ADDR6A/64 dev "$IFA" nodad
ip -n "$NSB" addr add $ADDR6B/64 dev "$IFB" nodad
for ns in "$NSA" "$NSB"; do
	ip -n "$ns" link set lo up
done
ip -n "$NSA" link set "$IFA" up
ip -n "$NSB" link set "$IFB" up
for _ in $(seq 1 50); do
	ip -n "$NSA" -o link show "$IFA" | grep -q LOWER_UP && ip -n "$NSB" -o link show "$IFB" | grep -q LOWER_UP && break
	sleep 0.1
done
mac() { ip -n "$1" -o link show "$2" | sed -n 's#.*link/ether \([0-9a-f:]*\).*#\1#p'; }
ip -n "$NSA" neigh replace $ADDRB lladdr "$(mac "$NSB" "$IFB")" dev "$IFA" nud permanent
ip -n "$NSB" neigh replace $ADDRA lladdr "$(mac "$NSA" "$IFA")" dev "$IFB" nud permanent
ip -n "$NSA" -6 neigh replace $ADDR6B lladdr "$(mac "$NSB" "$IFB")" dev "$IFA" nud permanent
ip -n "$NSB" -6 neigh replace $ADDR6A lladdr "$(mac "$NSA" "$IFA")" dev "$IFB" nud permanent

# variant_env_of prints the environment of variant $1 in namespace $2 (veth end $3).
variant_env_of() {
	case $1 in
	kernel) ;;
	goxio-xdp) echo "LD_PRELOAD=$GOXIO_LIB VMA_CONFIG_FILE=$OFFLOAD_CONF GOXIO_XDP=$3" ;;
	goxio-xdp-generic) echo "LD_PRELOAD=$GOXIO_LIB VMA_CONFIG_FILE=$OFFLOAD_CONF GOXIO_XDP=$3 GOXIO_XDP_MODE=generic" ;;
	goxio-xdp-poll) echo "LD_PRELOAD=$GOXIO_LIB VMA_CONFIG_FILE=$OFFLOAD_CONF GOXIO_XDP=$3 VMA_SPEC=latency" ;;
	goxio-xdp-batch) echo "LD_PRELOAD=$GOXIO_LIB VMA_CONFIG_FILE=$OFFLOAD_CONF GOXIO_XDP=$3 GOXIO_XDP_TX_DELAY=50" ;;
	esac
}
: >"$RAW/veth-variants.txt"
for v in $WANT; do
	printf '%s|%s\n' "$v" "$(variant_env_of "$v" A IFACE | sed "s#$REPO/##g")" >>"$RAW/veth-variants.txt"
done

# pin sets PINNED to the command prefix that pins the server ($1 = server) or the client.
PINNED=()
pin() {
	PINNED=()
	[[ -n $PIN ]] || return 0
	if [[ $1 == server ]]; then PINNED=(taskset -c "${PIN%%,*}"); else PINNED=(taskset -c "${PIN##*,}"); fi
}

: >>"$RAW/veth-commands.txt"
vrecord() {
	local line
	# shellcheck disable=SC2016 # $PORT is written literally
	line=$(printf '%s' "$*" | sed -E -e "s#$REPO/##g" -e "s#$NSA#goxio-bench-PID-a#g" -e "s#$NSB#goxio-bench-PID-b#g" \
		-e "s#$IFA#IFA#g" -e "s#$IFB#IFB#g" -e 's#-p [0-9]+#-p $PORT#')
	grep -qxF -- "$line" "$RAW/veth-commands.txt" || printf '%s\n' "$line" >>"$RAW/veth-commands.txt"
}

# cpu_of prints the user+system CPU seconds process $1 has used so far.
cpu_of() {
	awk -v tck="$(getconf CLK_TCK)" '{sub(/^.*\) /, ""); printf "%.3f\n", ($12 + $13) / tck}' "/proc/$1/stat"
}

# veth_run TEST VARIANT REP MODE SIZE EXTRA...: one server in B, one client in A.
veth_run() {
	local test=$1 name=$2 rep=$3 mode=$4 size=$5
	shift 5
	local base=$RAW/veth/$test-$name-r$rep status=ok scpu=nan cwall=nan cuser=nan csys=nan rc=0
	local senv cenv
	read -r -a senv <<<"$(variant_env_of "$name" B "$IFB")"
	read -r -a cenv <<<"$(variant_env_of "$name" A "$IFA")"
	pin server
	local srv=(ip netns exec "$NSB" "${PINNED[@]}" env "${senv[@]}" sockperf server -i "$ADDRB" -p "$PORT")
	pin client
	local cli=(ip netns exec "$NSA" "${PINNED[@]}" env "${cenv[@]}" sockperf "$mode" -i "$ADDRB" -p "$PORT"
		-t "$SP_TIME" -m "$size" "$@")
	vrecord "${srv[@]}" "&"
	vrecord "${cli[@]}"
	"${srv[@]}" >"$base.server.log" 2>&1 &
	SRV=$!
	for _ in $(seq 1 100); do
		ip netns exec "$NSB" ss -Hnul "sport = :$PORT" 2>/dev/null | grep -q . && break
		kill -0 "$SRV" 2>/dev/null || break
		sleep 0.05
	done
	if ! kill -0 "$SRV" 2>/dev/null; then
		status=server-not-listening
	else
		timeout -s KILL $((SP_TIME + 30)) /usr/bin/time -f '%e %U %S' -o "$base.time" "${cli[@]}" \
			>"$base.client.log" 2>&1 || rc=$?
		scpu=$(cpu_of "$SRV" 2>/dev/null || echo nan)
		((rc == 0)) || status=client-exit-$rc
		kill -0 "$SRV" 2>/dev/null || [[ $status != ok ]] || status=server-died
	fi
	kill -INT "$SRV" 2>/dev/null || true
	for _ in $(seq 1 30); do
		kill -0 "$SRV" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$SRV" 2>/dev/null || true
	wait "$SRV" 2>/dev/null || true
	SRV=
	if [[ -s $base.time ]] && [[ $(tail -1 "$base.time") =~ ^[0-9.]+\ [0-9.]+\ [0-9.]+$ ]]; then
		read -r cwall cuser csys < <(tail -1 "$base.time")
	fi
	[[ $status == ok ]] || vlog "$test $name r$rep: $status (see $base.*.log)"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t0\n' "$test" "$name" "$rep" "$cwall" \
		"$(awk -v u="$cuser" -v s="$csys" 'BEGIN {printf "%.3f", u + s}')" "$scpu" "$status" >>"$RAW/veth.tsv"
}

mkdir -p "$RAW/veth"
: >>"$RAW/veth.tsv"
TESTS=(
	"udp-pp|ping-pong|64|--mps 1000000"
	"udp-pp-1400|ping-pong|1400|--mps 1000000"
	"udp-tp|throughput|64|"
)
vlog "$SP_REPS reps x ${#TESTS[@]} tests x variants ($WANT), -t $SP_TIME, pinned ${PIN:-no}"
for rep in $(seq 1 "$SP_REPS"); do
	for t in "${TESTS[@]}"; do
		IFS='|' read -r test mode size opts <<<"$t"
		for v in $WANT; do
			PORT=$((PORT + 1))
			read -r -a xopts <<<"$opts"
			veth_run "$test" "$v" "$rep" "$mode" "$size" "${xopts[@]}"
		done
	done
done
# IPv6: UDP ping-pong 64 B over the pair's IPv6 addresses with pp6 (Debian's sockperf 3.7 rejects
# IPv6 addresses), same variants, pinning and duration; one line per run in veth6.tsv:
# test variant rep avg p50 p99 p99.9 (us, half round trip) status.
pp6_run() {
	local name=$1 rep=$2 base=$RAW/veth/udp-pp6-$1-r$2 status=ok line figures senv cenv
	read -r -a senv <<<"$(variant_env_of "$name" B "$IFB")"
	read -r -a cenv <<<"$(variant_env_of "$name" A "$IFA")"
	pin server
	local srv=(ip netns exec "$NSB" "${PINNED[@]}" env "${senv[@]}" "$PP6" server udp "$ADDR6B" "$PORT")
	pin client
	local cli=(ip netns exec "$NSA" "${PINNED[@]}" env "${cenv[@]}" "$PP6" client udp "$ADDR6B" "$PORT" "$SP_TIME" 64)
	vrecord "${srv[@]}" "&"
	vrecord "${cli[@]}"
	"${srv[@]}" >"$base.server.log" 2>&1 &
	SRV=$!
	for _ in $(seq 1 100); do
		ip netns exec "$NSB" ss -Hnul "sport = :$PORT" 2>/dev/null | grep -q . && break
		kill -0 "$SRV" 2>/dev/null || break
		sleep 0.05
	done
	if ! kill -0 "$SRV" 2>/dev/null; then
		status=server-not-listening
	elif ! timeout -s KILL $((SP_TIME + 30)) "${cli[@]}" >"$base.client.log" 2>&1; then
		status=client-failed
	fi
	kill -KILL "$SRV" 2>/dev/null || true
	wait "$SRV" 2>/dev/null || true
	SRV=
	line=$(grep -o 'avg_us=.*' "$base.client.log" | tail -1)
	[[ -n $line ]] || [[ $status != ok ]] || status=no-result
	[[ $status == ok ]] || vlog "udp-pp6 $name r$rep: $status (see $base.*.log)"
	figures=$(awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); m[kv[1]] = kv[2] } }
		END { n = split("avg_us p50_us p99_us p999_us", k, " ")
		      for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? "\t" : ""), (k[i] in m ? m[k[i]] : "nan") }' <<<"$line")
	printf 'udp-pp6\t%s\t%s\t%s\t%s\n' "$name" "$rep" "$figures" "$status" >>"$RAW/veth6.tsv"
}
if [[ -x ${PP6:-} ]]; then
	: >>"$RAW/veth6.tsv"
	vlog "IPv6: $SP_REPS reps x variants ($WANT), pp6 -t $SP_TIME"
	for rep in $(seq 1 "$SP_REPS"); do
		for v in $WANT; do
			PORT=$((PORT + 1))
			pp6_run "$v" "$rep"
		done
	done
else
	echo "pp6 not given (PP6)" >"$RAW/veth6-skipped.txt"
fi

# Each goxio-xdp server and client attached a steering program to its veth end; none may be left.
for e in "$NSA $IFA" "$NSB $IFB"; do
	read -r ns ifn <<<"$e"
	if ip -n "$ns" -d link show "$ifn" | grep -q 'prog/xdp'; then
		echo "xdp program left attached on $ifn" >>"$RAW/veth-leftovers.txt"
	fi
done
