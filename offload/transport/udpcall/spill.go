package udpcall

import (
	"encoding/binary"
	"fmt"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// spillNameLen is the name room of a spilled record (a sockaddr_in or sockaddr_in6).
const spillNameLen = spillRec - 8

// BuildSpill lays records (source sockaddr, payload) out in a new shared anonymous mapping, in
// the layout spill_unsafe.go describes; the mapping is never unmapped (both sides of a fork read
// it while the process lives).
func BuildSpill(recs [][2][]byte) ([]byte, error) {
	hdr := spillHdr + 4*len(recs)
	size := (hdr + 7) &^ 7
	for _, r := range recs {
		size += (spillRec + len(r[1]) + 7) &^ 7
	}
	mem, err := sysc.MapShared(size)
	if err != nil {
		return nil, fmt.Errorf("spill: mmap %d bytes: %w", size, err)
	}
	le := binary.LittleEndian
	le.PutUint32(mem[0:], spillMagic)
	le.PutUint32(mem[4:], uint32(len(recs)))
	le.PutUint32(mem[8:], 0)
	le.PutUint32(mem[12:], uint32(size))
	off := (hdr + 7) &^ 7
	for i, r := range recs {
		le.PutUint32(mem[spillHdr+4*i:], uint32(off))
		name := r[0][:min(len(r[0]), spillNameLen)]
		le.PutUint32(mem[off:], uint32(len(r[1])))
		le.PutUint32(mem[off+4:], uint32(len(name)))
		copy(mem[off+8:off+spillRec], name)
		copy(mem[off+spillRec:], r[1])
		off += (spillRec + len(r[1]) + 7) &^ 7
	}
	return mem, nil
}
