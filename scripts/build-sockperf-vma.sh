#!/usr/bin/env bash
# Builds sockperf with VMA's extra API (issue 19) against goxio's own header, for the tests
# (tests/vmaapi_test.go, TestIntegrationVMASockperf) and the benchmarks (tests/bench part 12):
#
#   $BUILD/sockperf-vma/bin/sockperf      (BUILD: the environment's, default ./build of the repository)
#
# Steps: Debian's source package of sockperf (apt-get source, through a deb-src entry made for the
# configured Debian mirror: the URIs, suites and components of /etc/apt's entries for this release),
# the packages its binary's build needs (autoconf, automake, g++, make: the .deb's own debhelper and
# doxygen make the package and its documentation, not the binary), then its autogen.sh, configure
# --enable-vma-api with the include path holding mellanox/vma_extra.h, a link to shim/goxio_extra.h
# (which declares VMA's vma_get_api() too), make and make install into that folder.
#
# The deb-src entry lives in a private apt configuration in a temporary folder (its own source list,
# package lists kept in $BUILD/sockperf-vma/apt to make the next update quick): /etc/apt and the
# system's package lists are never changed, and the entry goes with the folder whatever happens.
#
# Never fails the caller: when the source cannot be fetched or the build fails it prints one line
# saying why ("sockperf with VMA API: ...; its tests and bench rows are not run") and exits 0.
# Quiet and quick when the binary is there, built with the same header and script (from either
# source).
#
# Called from scripts/install-deps.sh (it needs root for apt-get, as that script does, and the
# network; a test should do neither, nor spend a minute building).
#
# Environment:
#   BUILD                 build folder (default: build of the repository)
#   GOXIO_SOCKPERF_SRC    test hook: an unpacked sockperf source tree (upstream's or Debian's, 3.x) to
#                         build instead of fetching Debian's; it is copied, never changed
#   GOXIO_SOCKPERF_FORCE  1: build again even when the binary is up to date
set -uo pipefail
export DEBIAN_FRONTEND=noninteractive
export LC_ALL=C

REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
[[ $BUILD == /* ]] || BUILD=$REPO/$BUILD
OUT=$BUILD/sockperf-vma
BIN=$OUT/bin/sockperf
HEADER=$REPO/shim/goxio_extra.h

# skip prints the one line that says why, and ends without failing the caller.
skip() {
	[[ -z ${WORK:-} ]] || rm -rf "$WORK" # a build that did not finish leaves nothing
	if [[ -x ${BIN:-} ]]; then
		echo "sockperf with VMA API: $*; $BIN built before stays"
	else
		echo "sockperf with VMA API: $*; its tests and bench rows are not run"
	fi
	exit 0
}

[[ -r $HEADER ]] || skip "no $HEADER"
stamp="header $(sha256sum "$HEADER" | cut -d' ' -f1) script $(sha256sum "$0" | cut -d' ' -f1)"
if [[ ${GOXIO_SOCKPERF_FORCE:-0} != 1 && -x $BIN && -r $OUT/stamp && $(cat "$OUT/stamp") == "$stamp" ]]; then
	exit 0
fi
mkdir -p "$OUT" || skip "cannot create $OUT"
LOG=$OUT/build.log
: >"$LOG"

TMP=$(mktemp -d) || skip "mktemp failed"
trap 'rm -rf "$TMP"' EXIT

# debian_deb_src writes a deb-src entry (deb822) for each entry of /etc/apt that serves this
# release's suites (bookworm, bookworm-updates, bookworm-security, ...), the other repositories left
# out.
debian_deb_src() {
	local codename
	codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
	[[ -n $codename ]] || return 1
	{
		# deb822 .sources files: one entry per paragraph
		for f in /etc/apt/sources.list.d/*.sources; do
			[[ -r $f ]] || continue
			awk -v cn="$codename" '
				function flush() {
					if (types ~ /(^| )deb( |$)/ && enabled != "no" && uris != "") {
						n = split(suites, s, " "); keep = ""
						for (i = 1; i <= n; i++) if (s[i] == cn || index(s[i], cn "-") == 1) keep = keep " " s[i]
						if (keep != "") {
							print "Types: deb-src"; print "URIs: " uris; print "Suites:" keep
							print "Components: " comps
							if (signed != "") print "Signed-By: " signed
							print ""
						}
					}
					types = uris = suites = comps = signed = enabled = ""
				}
				/^[ \t]*#/ { next }
				/^[ \t]*$/ { flush(); next }
				{
					key = tolower($1); sub(/:$/, "", key); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
					if (key == "types") types = val; else if (key == "uris") uris = val
					else if (key == "suites") suites = val; else if (key == "components") comps = val
					else if (key == "signed-by") signed = val; else if (key == "enabled") enabled = tolower(val)
				}
				END { flush() }' "$f"
		done
		# one-line .list files: "deb [options] URI SUITE COMPONENTS..."
		for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
			[[ -r $f ]] || continue
			awk -v cn="$codename" -v out="$TMP/apt/sources.list" '$1 == "deb" {
				opts = ""; i = 2
				if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) { opts = opts " " $i; i++ }; opts = opts " " $i; i++ }
				if ($(i+1) == cn || index($(i+1), cn "-") == 1) {
					line = "deb-src" opts
					for (; i <= NF; i++) line = line " " $i
					print line >> out
				}
			}' "$f"
		done
	} >"$TMP/apt/parts/debian-src.sources"
	[[ -s $TMP/apt/parts/debian-src.sources || -s $TMP/apt/sources.list ]]
}

# fetch_debian unpacks Debian's source package of sockperf into $1.
fetch_debian() {
	local dest=$1
	command -v apt-get >/dev/null || skip "no apt-get (not a Debian system) to fetch Debian's source package"
	mkdir -p "$TMP/apt/parts" "$OUT/apt/lists/partial" "$TMP/get"
	: >"$TMP/apt/sources.list"
	debian_deb_src || skip "no Debian entry in /etc/apt to make a deb-src entry from"
	local apt=(apt-get -q -o "Dir::Etc::SourceList=$TMP/apt/sources.list" -o "Dir::Etc::SourceParts=$TMP/apt/parts"
		-o "Dir::State::Lists=$OUT/apt/lists" -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
		-o "APT::Sandbox::User=root")
	# Bounded: a mirror that does not answer must not hold up the set-up (CI).
	if ! timeout 300 "${apt[@]}" update >>"$LOG" 2>&1; then
		skip "Debian's source index is not reachable (apt-get update of a deb-src entry failed, see $LOG)"
	fi
	if ! (cd "$TMP/get" && timeout 600 "${apt[@]}" source sockperf) >>"$LOG" 2>&1; then
		if grep -q '404' "$LOG"; then
			skip "Debian's source tarballs are not reachable (404)"
		fi
		skip "apt-get source sockperf failed: $(grep -E '^(E|W):' "$LOG" | tail -1)"
	fi
	local tree
	tree=$(find "$TMP/get" -mindepth 1 -maxdepth 1 -type d -name 'sockperf-*' | head -1)
	[[ -n $tree ]] || skip "apt-get source sockperf unpacked no sockperf-* folder"
	cp -a "$tree/." "$dest/"
}

# build_deps installs what the binary's build needs (root only; otherwise says what is missing).
build_deps() {
	local missing=()
	command -v autoreconf >/dev/null || missing+=(autoconf)
	command -v automake >/dev/null || missing+=(automake)
	command -v g++ >/dev/null || missing+=(g++)
	command -v make >/dev/null || missing+=(make)
	[[ ${#missing[@]} -eq 0 ]] && return 0
	[[ $(id -u) == 0 ]] || skip "its build needs ${missing[*]} (run as root to install them)"
	if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$LOG" 2>&1; then
		apt-get update -qq >>"$LOG" 2>&1
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$LOG" 2>&1 ||
			skip "cannot install its build dependencies ${missing[*]} (see $LOG)"
	fi
}

# Built in $OUT/work and moved into place when it works: a failed build keeps the binary there was.
WORK=$OUT/work
rm -rf "$WORK"
mkdir -p "$WORK/src" "$WORK/include/mellanox"
if [[ -n ${GOXIO_SOCKPERF_SRC:-} ]]; then
	[[ -r $GOXIO_SOCKPERF_SRC/configure.ac ]] || skip "GOXIO_SOCKPERF_SRC=$GOXIO_SOCKPERF_SRC holds no configure.ac"
	cp -a "$GOXIO_SOCKPERF_SRC/." "$WORK/src/"
else
	fetch_debian "$WORK/src"
fi
grep -q 'vma-api' "$WORK/src/configure.ac" || skip "this sockperf's configure has no --enable-vma-api"
build_deps

# sockperf includes <mellanox/vma_extra.h>: goxio's header under that name
ln -s "$HEADER" "$WORK/include/mellanox/vma_extra.h"
# autogen.sh and configure as its README says (Debian's quilt patches are applied by apt-get
# source); configure stops when it finds no mellanox/vma_extra.h, and config.h must say it is on
(
	cd "$WORK/src" &&
		./autogen.sh &&
		./configure --prefix="$WORK/prefix" --enable-vma-api CPPFLAGS="-I$WORK/include" &&
		grep -q '^#define USING_VMA_EXTRA_API 1' config.h &&
		make -j"$(nproc)" &&
		make install
) >>"$LOG" 2>&1 || skip "its build failed: $(grep -iE 'error' "$LOG" | tail -1) (see $LOG)"
"$WORK/prefix/bin/sockperf" --version >>"$LOG" 2>&1 || skip "the built sockperf does not run (see $LOG)"
mkdir -p "$OUT/bin" && mv -f "$WORK/prefix/bin/sockperf" "$BIN" || skip "cannot install $BIN"
rm -rf "$WORK"
echo "$stamp" >"$OUT/stamp"
from="Debian's source package"
[[ -z ${GOXIO_SOCKPERF_SRC:-} ]] || from=$GOXIO_SOCKPERF_SRC
echo "sockperf with VMA API: built $BIN (from $from)"
