package xdp

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapRing points r's producer, consumer and flags words and its entry array into mem,
// a ring mapping of an AF_XDP socket laid out as off says, after checking that every
// part lies inside mem and that the words are 4-byte aligned.
//
// Invariant for the unsafe use: mem is a MAP_SHARED mapping made by the caller with
// unix.Mmap; it is not Go heap memory, so the garbage collector neither moves nor frees
// it, and the *uint32 pointers below stay valid until the mapping is removed. The
// mapping is removed only by ring.unmap, which first clears every pointer and slice
// into it; the socket that owns the ring never uses it after that.
func (r *ring) mapRing(mem []byte, off unix.XDPRingOffset, size uint32, entSize int) error {
	need := off.Desc + uint64(size)*uint64(entSize)
	for _, o := range []uint64{off.Producer, off.Consumer, off.Flags} {
		if o%4 != 0 || o+4 > uint64(len(mem)) {
			return fmt.Errorf("ring offset %d outside mapping of %d bytes: %w", o, len(mem), unix.EINVAL)
		}
	}
	if need > uint64(len(mem)) || off.Desc%8 != 0 {
		return fmt.Errorf("ring entries at %d..%d outside mapping of %d bytes: %w", off.Desc, need, len(mem), unix.EINVAL)
	}
	r.mem = mem
	r.prod = (*uint32)(unsafe.Pointer(&mem[off.Producer]))
	r.cons = (*uint32)(unsafe.Pointer(&mem[off.Consumer]))
	r.flags = (*uint32)(unsafe.Pointer(&mem[off.Flags]))
	r.entries = mem[off.Desc:need:need]
	r.size = size
	r.mask = size - 1
	r.entSize = entSize
	r.localProd = atomic.LoadUint32(r.prod)
	r.localCons = atomic.LoadUint32(r.cons)
	return nil
}

// The kernel publishes a ring index with a release store after writing the entries
// and reads the other side's index with an acquire load; Go's sync/atomic operations
// are sequentially consistent, which is at least as strong on both sides.

// loadProd reads the producer index (acquire).
func (r *ring) loadProd() uint32 { return atomic.LoadUint32(r.prod) }

// loadCons reads the consumer index (acquire).
func (r *ring) loadCons() uint32 { return atomic.LoadUint32(r.cons) }

// storeProd publishes the producer index (release).
func (r *ring) storeProd(v uint32) { atomic.StoreUint32(r.prod, v) }

// storeCons publishes the consumer index (release).
func (r *ring) storeCons(v uint32) { atomic.StoreUint32(r.cons, v) }

// loadFlags reads the ring's flags word (XDP_RING_NEED_WAKEUP).
func (r *ring) loadFlags() uint32 { return atomic.LoadUint32(r.flags) }
