#!/usr/bin/env bash
# Installs what goxio's build, demo and tests need on a Debian machine (idempotent; quiet when
# everything is there). Needs root for apt-get.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

packages=(build-essential sockperf iperf3 socat redis-server redis-tools nginx wrk curl python3 nodejs
	iproute2 hyperfine strace man-db groff-base time libc6-dev python3-matplotlib
	libpcap-dev tcpdump tshark)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# CPython's own regression suite for the system Python (tests/cpython_test.go runs its socket,
# selector and event-loop modules with and without the library).
pyver=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if ! /usr/bin/python3 -c 'import test.test_socket, test.test_asyncio.test_events' >/dev/null 2>&1; then
	echo "install-deps: installing libpython${pyver}-testsuite"
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "libpython${pyver}-testsuite" >/dev/null
fi
# sockperf with VMA's extra API for tests/vmaapi_sockperf_test.go and bench part 12 (one line and
# no failure when Debian's source package cannot be fetched; see the script).
"$(dirname "$0")/build-sockperf-vma.sh"
# Debian starts these services on install; goxio's tests start their own on free ports.
for svc in redis-server nginx; do
	service "$svc" stop >/dev/null 2>&1 || true
done
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	echo "install-deps: Go is at /usr/local/go/bin; add it to PATH" >&2
fi
