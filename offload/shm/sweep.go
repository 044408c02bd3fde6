package shm

import (
	"encoding/binary"
	"strings"

	"golang.org/x/sys/unix"
)

// SweepDir removes segments that processes left behind when they died without closing: inbox
// files whose owner is gone, and ring files whose sender is gone and whose inbox is gone or
// closed or owned by a dead process. Only regular files owned by our effective uid whose
// header carries one of our magics are considered; headers are read with pread (never mapped),
// so a file truncated under us costs nothing. It returns how many files it removed.
// Cost: a directory read plus an open, pread and /proc read per segment: call it at start-up
// or now and then, not on a hot path.
func SweepDir(dir string) int {
	names, ok := dirNames(dir)
	if !ok {
		return 0
	}
	removed := 0
	for _, name := range names {
		path := joinPath(dir, name)
		magic, hdr, ok := readHeader(path)
		if !ok {
			continue
		}
		switch magic {
		case inboxMagic:
			if !processAlive(int(hdr[ibPID/8]), hdr[ibStart/8]) && unlink(path) == nil {
				removed++
			}
		case ringMagic:
			if processAlive(int(hdr[rgPID/8]), hdr[rgStart/8]) {
				continue
			}
			// <inbox>.<pid>.<n>: the inbox is the name without its last two dot fields.
			inbox := name
			for range 2 {
				if i := strings.LastIndexByte(inbox, '.'); i > 0 {
					inbox = inbox[:i]
				}
			}
			if m, ih, ok := readHeader(joinPath(dir, inbox)); ok && m == inboxMagic && ih[ibClosed/8] == 0 &&
				processAlive(int(ih[ibPID/8]), ih[ibStart/8]) {
				continue // a live receiver drains and removes it
			}
			if unlink(path) == nil {
				removed++
			}
		}
	}
	return removed
}

// readHeader reads the first 48 bytes of a segment as words, when path is a private regular
// file of ours.
func readHeader(path string) (magic uint64, words [6]uint64, ok bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, words, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != unix.Geteuid() {
		return 0, words, false
	}
	var b [48]byte
	if n, err := unix.Pread(fd, b[:], 0); err != nil || n != len(b) {
		return 0, words, false
	}
	for i := range words {
		words[i] = binary.NativeEndian.Uint64(b[i*8:])
	}
	return words[0], words, true
}
