package shm

import (
	"encoding/binary"
	"strings"

	"github.com/goxio/goxio/internal/shmseg"
)

// SweepDir removes segments that processes left behind when they died without closing: inbox
// files whose owner is gone, and ring files whose sender is gone and whose inbox is gone or
// closed or owned by a dead process. Only regular files owned by our effective uid whose
// header carries one of our magics are considered; headers are read with pread (never mapped),
// so a file truncated under us costs nothing (internal/shmseg.Sweep). It returns how many files
// it removed. Cost: a directory read plus an open, pread and /proc read per segment: call it at
// start-up or now and then, not on a hot path.
func SweepDir(dir string) int {
	return shmseg.Sweeper{HeaderBytes: headerBytes, Judge: func(name string, b []byte) bool {
		hdr := headerWords(b)
		switch hdr[0] {
		case inboxMagic:
			return !processAlive(int(hdr[ibPID/8]), hdr[ibStart/8])
		case ringMagic:
			if processAlive(int(hdr[rgPID/8]), hdr[rgStart/8]) {
				return false
			}
			// <inbox>.<pid>.<n>: the inbox is the name without its last two dot fields.
			inbox := name
			for range 2 {
				if i := strings.LastIndexByte(inbox, '.'); i > 0 {
					inbox = inbox[:i]
				}
			}
			var ib [headerBytes]byte
			if shmseg.ReadHeader(shmseg.Join(dir, inbox), ib[:]) {
				ih := headerWords(ib[:])
				if ih[0] == inboxMagic && ih[ibClosed/8] == 0 && processAlive(int(ih[ibPID/8]), ih[ibStart/8]) {
					return false // a live receiver drains and removes it
				}
			}
			return true
		}
		return false
	}}.Sweep(dir)
}

// headerBytes is how much of a segment the sweep reads: the words naming its owner.
const headerBytes = 48

// headerWords reads a segment's first headerBytes as words.
func headerWords(b []byte) (words [headerBytes / 8]uint64) {
	for i := range words {
		words[i] = binary.NativeEndian.Uint64(b[i*8:])
	}
	return words
}
