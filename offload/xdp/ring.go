package xdp

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// ring is one of a socket's four rings, shared with the kernel. Each has exactly one
// producer and one consumer: this process produces the fill and TX rings and consumes
// the RX and completion rings; the kernel does the other side. The size is a power of
// two; the indices are free-running 32-bit counters (entry i is at i & mask), so
// prod - cons is the number of entries in the ring even across wrap-around.
//
// Ownership of the words: the producer alone writes prod, the consumer alone writes
// cons; flags are written by the kernel. localProd and localCons are this process's
// copies: the index it owns (ahead of or equal to the published one) and the last value
// it read of the other side's (refreshed only when the cached one is not enough).
// Every value read from the kernel's index is checked against the ring size before
// use, so a wrong index can stall the ring but never index outside it.
type ring struct {
	mem       []byte // the whole mapping (munmap)
	prod      *uint32
	cons      *uint32
	flags     *uint32
	entries   []byte // size * entSize bytes
	size      uint32
	mask      uint32
	entSize   int
	localProd uint32
	localCons uint32
}

// Entry sizes: fill and completion entries are a 64-bit UMEM address, RX and TX
// entries a struct xdp_desc (64-bit address, 32-bit length, 32-bit options).
const (
	addrEntrySize = 8
	descEntrySize = 16
)

// free returns how many entries the producer can write now (producer rings), at most
// want; it reads the kernel's consumer index only when the cached one leaves fewer
// than want free.
func (r *ring) free(want uint32) uint32 {
	n := r.size - (r.localProd - r.localCons)
	if n >= want {
		return want
	}
	c := r.loadCons()
	if used := r.localProd - c; used <= r.size {
		r.localCons = c
		n = r.size - used
	}
	return min(n, want)
}

// submit publishes n entries written at localProd..localProd+n-1.
func (r *ring) submit(n uint32) {
	r.localProd += n
	r.storeProd(r.localProd)
}

// pending returns how many entries the producer published that the kernel has not
// consumed yet (producer rings).
func (r *ring) pending() uint32 {
	if used := r.localProd - r.loadCons(); used <= r.size {
		return used
	}
	return 0
}

// available returns how many entries the consumer can read now (consumer rings), at
// most want; it reads the kernel's producer index only when the cached one has fewer
// than want.
func (r *ring) available(want uint32) uint32 {
	n := r.localProd - r.localCons
	if n >= want {
		return want
	}
	p := r.loadProd()
	if avail := p - r.localCons; avail <= r.size {
		r.localProd = p
		n = avail
	}
	return min(n, want)
}

// release gives n read entries (at localCons..localCons+n-1) back to the kernel.
func (r *ring) release(n uint32) {
	r.localCons += n
	r.storeCons(r.localCons)
}

// needWakeup reports whether the kernel asks for a system call to make progress on this
// ring (XDP_RING_NEED_WAKEUP).
func (r *ring) needWakeup() bool { return r.loadFlags()&unix.XDP_RING_NEED_WAKEUP != 0 }

// addrAt returns the address in entry i of a fill or completion ring.
func (r *ring) addrAt(i uint32) uint64 {
	o := int(i&r.mask) * addrEntrySize
	return binary.NativeEndian.Uint64(r.entries[o : o+8])
}

// setAddrAt writes address a in entry i of a fill or completion ring.
func (r *ring) setAddrAt(i uint32, a uint64) {
	o := int(i&r.mask) * addrEntrySize
	binary.NativeEndian.PutUint64(r.entries[o:o+8], a)
}

// descAt returns the address and length in entry i of an RX or TX ring.
func (r *ring) descAt(i uint32) (uint64, uint32) {
	o := int(i&r.mask) * descEntrySize
	e := r.entries[o : o+descEntrySize]
	return binary.NativeEndian.Uint64(e[0:]), binary.NativeEndian.Uint32(e[8:])
}

// setDescAt writes address a, length n and no options in entry i of an RX or TX ring.
func (r *ring) setDescAt(i uint32, a uint64, n uint32) {
	o := int(i&r.mask) * descEntrySize
	e := r.entries[o : o+descEntrySize]
	binary.NativeEndian.PutUint64(e[0:], a)
	binary.NativeEndian.PutUint32(e[8:], n)
	binary.NativeEndian.PutUint32(e[12:], 0)
}

// unmap removes the ring's mapping; the ring must not be used afterwards.
func (r *ring) unmap() error {
	mem := r.mem
	*r = ring{}
	if mem == nil {
		return nil
	}
	return unix.Munmap(mem)
}
