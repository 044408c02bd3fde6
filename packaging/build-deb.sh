#!/usr/bin/env bash
# packaging/build-deb.sh: build the goxio .deb (and .rpm) from this tree, then check them.
#
#   packaging/build-deb.sh            # build/pkg/goxio_<version>-1_<arch>.deb and goxio-<version>-1.<arch>.rpm
#
# Steps: stage `make install DESTDIR=<stage> PREFIX=/usr SYSCONFDIR=/etc` (in its own build folder, with
# the package version stamped into the binaries), strip the binaries, add the gzipped man pages of
# packaging/man, README, ARCHITECTURE, a Debian changelog entry and lintian overrides, then let nfpm (packaging/nfpm.yaml, pinned version, installed from the Go module proxy into
# build/pkg/tools on first use) write the packages. Each .deb is checked: its file list (library in
# /usr/lib, tools in /usr/bin, /etc/libvma.conf as a conffile, man pages), its control fields, and a
# smoke test of the extracted files (the library preloads into /bin/true, `goxio version` prints the
# package version, every man page renders without warnings).
#
# Environment:
#   PKG_VERSION   package version (default: from `git describe` for a vX.Y.Z tag, else
#                 <internal/version base>~git<commit date>.<commit>)
#   PKG_FORMATS   packages to build, "deb rpm" by default ("deb" alone needs no rpm tooling)
#   PKG_OUT       output folder (default build/pkg)
#   NFPM          an nfpm binary to use instead of the pinned one
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
OUT=${PKG_OUT:-$REPO/build/pkg}
STAGE=$OUT/stage
FORMATS=${PKG_FORMATS:-deb rpm}
NFPM_MODULE=github.com/goreleaser/nfpm/v2/cmd/nfpm
NFPM_VERSION=v2.43.0 # newer releases need modules the Go module proxy does not serve
GO=${GO:-go}

die() {
	echo "build-deb: $*" >&2
	exit 1
}

log() {
	echo "build-deb: $*" >&2
}

for tool in make gzip dpkg-deb objdump strip man "$GO"; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool not found (Debian packages: make gzip dpkg binutils man-db golang)"
done

# ---------------------------------------------------------------- version
commit_epoch=$(git -C "$REPO" log -1 --format=%ct 2>/dev/null || date +%s)
if [[ -n ${PKG_VERSION:-} ]]; then
	version=$PKG_VERSION
elif tag=$(git -C "$REPO" describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null); then
	version=${tag#v}
else
	base=$(sed -n 's/^var Version = "\([0-9][0-9.]*\).*"$/\1/p' "$REPO/internal/version/version.go")
	[[ -n $base ]] || base=0.0.0
	sha=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo local)
	version="$base~git$(date -u -d "@$commit_epoch" +%Y%m%d).$sha"
fi
[[ $version =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || die "package version $version must start with a digit and use only [A-Za-z0-9.+~]"
arch=$($GO env GOARCH)
log "version $version, arch $arch, formats: $FORMATS"

# ---------------------------------------------------------------- stage
rm -rf "$STAGE"
rm -f "$OUT"/goxio_*.deb "$OUT"/goxio-*.rpm
mkdir -p "$STAGE"
make -C "$REPO" --no-print-directory BUILD="$OUT/build" VERSION="$version" \
	DESTDIR="$STAGE" PREFIX=/usr SYSCONFDIR=/etc install >&2

declare -a MANPAGES=()
for page in "$HERE"/man/*.[1-8]; do
	name=$(basename "$page")
	section=${name##*.}
	mkdir -p "$STAGE/usr/share/man/man$section"
	# Debian ships man pages compressed: replace the plain copy `make install` may have put there.
	# -n: no name or time stamp in the gzip header, so the package is reproducible.
	rm -f "$STAGE/usr/share/man/man$section/$name"
	gzip -9n -c "$page" >"$STAGE/usr/share/man/man$section/$name.gz"
	MANPAGES+=("usr/share/man/man$section/$name.gz")
done
((${#MANPAGES[@]} > 0)) || die "no man pages in $HERE/man"

mkdir -p "$STAGE/usr/share/doc/goxio"
for doc in README.md ARCHITECTURE.md; do
	if [[ -f $REPO/$doc ]]; then
		install -m 0644 "$REPO/$doc" "$STAGE/usr/share/doc/goxio/$doc"
	fi
done
if [[ -f $REPO/LICENSE ]]; then
	install -m 0644 "$REPO/LICENSE" "$STAGE/usr/share/doc/goxio/copyright"
fi
# Debian wants a changelog in every package: one entry for this build.
{
	echo "goxio ($version-1) unstable; urgency=medium"
	echo
	echo "  * Built from commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)."
	echo
	echo " -- goxio developers <goxio@users.noreply.github.com>  $(date -u -R -d "@$commit_epoch")"
} | gzip -9n >"$STAGE/usr/share/doc/goxio/changelog.Debian.gz"
# The tools are static: the Go ones as Go programs are, goxio (a C front end) so that `goxio run`
# costs an exec and no loader work.
mkdir -p "$STAGE/usr/share/lintian/overrides"
printf '%s\n' "goxio: statically-linked-binary [usr/bin/goxio]" \
	"goxio: statically-linked-binary [usr/bin/goxio_stats]" \
	"goxio: statically-linked-binary [usr/lib/goxio/goxio-tool]" >"$STAGE/usr/share/lintian/overrides/goxio"
# Symbols are for debugging builds; the Go runtime keeps its own tables for stack traces.
strip --strip-unneeded "$STAGE/usr/lib/libgoxio.so" "$STAGE/usr/lib/libgoxio-engine.so"
strip "$STAGE/usr/bin/goxio" "$STAGE/usr/bin/goxio_stats" "$STAGE/usr/lib/goxio/goxio-tool"

# The lowest glibc the binaries link against (goxio, goxio-tool and goxio_stats are static: none;
# goxio-bpf links libc and libpcap).
libc_min=$(for f in "$STAGE/usr/lib/libgoxio.so" "$STAGE/usr/lib/libgoxio-engine.so" "$STAGE/usr/bin/"* "$STAGE/usr/lib/goxio/"*; do
	objdump -T "$f" 2>/dev/null || true # a static program has no dynamic symbols
done | { grep -o 'GLIBC_[0-9][0-9.]*' || true; } | sed 's/GLIBC_//' | sort -uV | tail -1)
[[ -n $libc_min ]] || die "no GLIBC symbol versions found in $STAGE/usr/lib/libgoxio.so"
log "needs glibc >= $libc_min"

# ---------------------------------------------------------------- nfpm
nfpm=${NFPM:-$OUT/tools/nfpm}
if [[ ! -x $nfpm ]]; then
	log "installing nfpm $NFPM_VERSION into $OUT/tools"
	mkdir -p "$OUT/tools"
	GOBIN=$OUT/tools GOFLAGS=-mod=mod "$GO" install "$NFPM_MODULE@$NFPM_VERSION" >&2 ||
		die "cannot install nfpm $NFPM_VERSION from the Go module proxy (set NFPM to an nfpm binary)"
fi

export PKG_STAGE=$STAGE PKG_DEB_VERSION=$version PKG_ARCH=$arch PKG_LIBC_MIN=$libc_min
export SOURCE_DATE_EPOCH=$commit_epoch
declare -a PACKAGES=()
for format in $FORMATS; do
	case $format in
	deb) pkg=$OUT/goxio_${version}-1_$arch.deb ;;
	rpm) pkg=$OUT/goxio-${version}-1.$(uname -m).rpm ;;
	*) die "unknown format $format (deb or rpm)" ;;
	esac
	rm -f "$pkg"
	"$nfpm" package --config "$HERE/nfpm.yaml" --packager "$format" --target "$pkg" >&2
	[[ -s $pkg ]] || die "nfpm wrote no $pkg"
	PACKAGES+=("$pkg")
done

# ---------------------------------------------------------------- checks
# check_deb verifies the file list, the control fields and the extracted files of one .deb.
check_deb() {
	local deb=$1 list x
	list=$(dpkg-deb -c "$deb" | awk '{print $1, $NF}')
	for want in "-rw-r--r-- ./usr/lib/libgoxio.so" "-rw-r--r-- ./usr/lib/libgoxio-engine.so" "-rwxr-xr-x ./usr/bin/goxio" \
		"-rwxr-xr-x ./usr/bin/goxio_stats" "-rwxr-xr-x ./usr/lib/goxio/goxio-bpf" "-rwxr-xr-x ./usr/lib/goxio/goxio-tool" "-rw-r--r-- ./etc/libvma.conf"; do
		grep -qxF -- "$want" <<<"$list" || die "$deb: missing or wrong mode: $want"
	done
	for page in "${MANPAGES[@]}"; do
		grep -qxF -- "-rw-r--r-- ./$page" <<<"$list" || die "$deb: missing man page /$page"
	done
	[[ $(dpkg-deb -f "$deb" Package) == goxio ]] || die "$deb: Package is not goxio"
	[[ $(dpkg-deb -f "$deb" Version) == "$version-1" ]] || die "$deb: Version is not $version-1"
	dpkg-deb -f "$deb" Depends | grep -qF "libc6 (>= $libc_min)" || die "$deb: Depends lacks libc6 (>= $libc_min)"
	dpkg-deb -I "$deb" conffiles | grep -qx /etc/libvma.conf || die "$deb: /etc/libvma.conf is not a conffile"

	x=$(mktemp -d)
	dpkg-deb -x "$deb" "$x"
	timeout 20 env LD_PRELOAD="$x/usr/lib/libgoxio.so" /bin/true ||
		die "$deb: LD_PRELOAD of the packaged library into /bin/true failed"
	# the engine loads from next to the library at the first data call on an inet socket
	timeout 20 env LD_PRELOAD="$x/usr/lib/libgoxio.so" python3 -c \
		"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', 9))" 2>&1 |
		grep -qF "goxio INFO" || die "$deb: the packaged library did not load its engine (no banner)"
	timeout 10 "$x/usr/bin/goxio" version 2>&1 | grep -qF -- "$version" ||
		die "$deb: '$x/usr/bin/goxio version' does not print $version"
	for page in "${MANPAGES[@]}"; do
		warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings=all -l "$x/$page" 2>&1 >/dev/null)
		[[ -z $warnings ]] || die "$deb: /$page renders with warnings: $warnings"
	done
	rm -rf "$x"
	log "checked $deb"
}

for pkg in "${PACKAGES[@]}"; do
	case $pkg in
	*.deb)
		check_deb "$pkg"
		dpkg-deb -c "$pkg"
		;;
	*.rpm)
		if command -v rpm >/dev/null 2>&1; then
			rpm -qp --qf '%{NAME} %{VERSION}-%{RELEASE} %{ARCH}\n' "$pkg"
			rpm -qplv "$pkg"
			rpm -qpc "$pkg" | grep -qx /etc/libvma.conf || die "$pkg: /etc/libvma.conf is not a config file"
		fi
		;;
	esac
	echo "$pkg"
done
