package shm

import (
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/goxio/goxio/internal/shmseg"

	"golang.org/x/sys/unix"
)

// SweepConns removes connection segment names that processes left behind when they died:
// <name> files (goxio-tcp-*) whose creator is gone or closed, or whose side 1 is taken (the
// name only serves joining), and temporary <name>.new.<pid>.<n> files of a gone pid. A name is removed under the same lock
// and check as OpenConn's (never a fresh segment that replaced the stale one); only private
// regular files of ours whose header carries the connection magic are judged. Segments still
// mapped by a live end are unaffected (their memory goes when the last end closes). It returns
// how many names it removed. Cost: a directory read plus a few system calls and a /proc read
// per connection name: call it at start-up or now and then, not on a hot path. Stale names
// are also replaced on demand by OpenConn; the sweep only frees the memory of tuples that do
// not come back.
func SweepConns(dir string) int {
	names, ok := shmseg.Names(dir)
	if !ok {
		return 0
	}
	removed := 0
	for _, name := range names {
		if !strings.HasPrefix(name, connNamePrefix) {
			continue
		}
		path := shmseg.Join(dir, name)
		if i := strings.Index(name, ".new."); i >= 0 {
			pidStr, _, _ := strings.Cut(name[i+len(".new."):], ".")
			if pid, err := strconv.Atoi(pidStr); err == nil && !processAlive(pid, 0) && shmseg.Unlink(path) == nil {
				removed++
			}
			continue
		}
		if sweepConn(path) {
			removed++
		}
	}
	return removed
}

// sweepConn removes the connection name at path when both its ends are gone.
func sweepConn(path string) bool {
	fd, st, err := lockName(path)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != unix.Geteuid() || st.Mode&0o077 != 0 {
		return false
	}
	var hdr [cnSide1 + sideLineSize]byte
	if n, err := unix.Pread(fd, hdr[:], 0); err != nil || n != len(hdr) {
		return false
	}
	word := func(off int) uint64 { return binary.NativeEndian.Uint64(hdr[off:]) }
	if word(cnMagic) != connMagic {
		return false
	}
	// The name only serves joining: it is useless once side 1 took the segment or the creator
	// is gone or closed (the mappings of live ends are not affected by the unlink).
	tag0, tag1 := word(sideOff(0)+sdTag), word(sideOff(1)+sdTag)
	if tag1 == 0 && tag0&tagReady != 0 && processAlive(tagPID(tag0), word(sideOff(0)+sdStart)) &&
		StreamState(word(sideOff(0)+sdFlags))&StateClosed == 0 {
		return false
	}
	return removeLocked(path) == nil
}
