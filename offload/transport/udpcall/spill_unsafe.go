package udpcall

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A spill region (written by BuildSpill before a fork, read by shim/spill.c and FromSpill) holds the datagrams a socket's rings held: u32 magic | u32 count | u32 cursor |
// u32 size | u32 offset[count], then records u32 len | u32 namelen | name[32] | data (a
// sockaddr_in or sockaddr_in6 name). Both sides
// of the fork take records by moving the cursor with compare-and-swap. The C side serves the
// receives that find a region set; the engine serves the ones that were already inside it when
// the region was made (FromSpill), so a datagram is never stranded there while a receive sleeps
// in the kernel socket.

// spillHdr is the fixed part of a region's header; spillRec that of a record.
const (
	spillHdr = 16
	spillRec = 40
)

// SpillLeft reports whether a spill region has a datagram no
// process took yet: its cursor (word 2) is below its count (word 1).
//
// Invariant: region is at least 16 bytes, 4-aligned (an mmapped region), and shared with other
// processes: the cursor is read atomically.
func SpillLeft(region []byte) bool {
	if len(region) < spillHdr {
		return false
	}
	count := atomic.LoadUint32(spillWord(region, 4))
	return atomic.LoadUint32(spillWord(region, 8)) < count
}

// spillWord is the address of the 4-aligned word at off of region (len(region) > off+3).
//
// Invariant: region is an mmapped region (page-aligned), so a 4-aligned offset is a 4-aligned
// address, as sync/atomic needs.
func spillWord(region []byte, off int) *uint32 {
	return (*uint32)(unsafe.Pointer(&region[off]))
}

// spillAt returns the record the cursor c names: its source name and payload (slices of the
// region); false when c is past the last record or the record does not lie inside the region.
func spillAt(region []byte, c uint32) (name, data []byte, ok bool) {
	le := binary.LittleEndian
	count := le.Uint32(region[4:])
	hdr := uint64(spillHdr) + 4*uint64(count)
	if c >= count || hdr > uint64(len(region)) {
		return nil, nil, false
	}
	off := uint64(le.Uint32(region[spillHdr+4*c:]))
	if off < hdr || off%8 != 0 || off+spillRec > uint64(len(region)) {
		return nil, nil, false
	}
	n, nl := uint64(le.Uint32(region[off:])), uint64(le.Uint32(region[off+4:]))
	if nl > spillRec-8 || off+spillRec+n > uint64(len(region)) {
		return nil, nil, false
	}
	return region[off+8 : off+8+nl], region[off+spillRec : off+spillRec+n], true
}

// FromSpill serves the receive rc from the region's next datagram, as the C side does: copied
// into the call, then taken by moving the cursor (a peek leaves it); when another reader took
// it meanwhile, the next one. false: no datagram is left.
func FromSpill(region []byte, rc *Rx) (int, bool) {
	if len(region) < spillHdr || binary.LittleEndian.Uint32(region) != spillMagic {
		return 0, false
	}
	cursor := spillWord(region, 8)
	for {
		c := atomic.LoadUint32(cursor)
		name, data, ok := spillAt(region, c)
		if !ok {
			return 0, false
		}
		n := rc.Deliver(name, data)
		if rc.Flags&unix.MSG_PEEK != 0 || atomic.CompareAndSwapUint32(cursor, c, c+1) {
			return n, true
		}
	}
}

// spillMagic is "SPLL" as a little-endian word.
const spillMagic = 0x4c4c5053
