package shm

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// BoxEntries and BoxFrees are GOXIO_ZBOX_ENTRIES and GOXIO_ZBOX_FREES (shim/goxio.h): the records
// a box queues and the deferred frees it carries.
const (
	BoxEntries = 32
	BoxFrees   = 64
)

// boxEnt mirrors struct goxio_zent.
type boxEnt struct {
	token   uint64
	data    uintptr
	len     uint32
	namelen uint32
	name    [32]byte
}

// boxMem mirrors struct goxio_zbox (shim/goxio.h), which the preload library allocates for an fd
// and never frees (TestBoxLayout checks the layout against the C one's offsets).
type boxMem struct {
	lock     uint32
	attached uint32
	epoch    uint32
	front    uint32
	head     uint32
	count    uint32
	urgent   uint32
	nfree    uint32
	freed    [BoxFrees]uint64
	ent      [BoxEntries]boxEnt
}

// boxAt returns the box at p.
//
// Invariant: p is the address of a struct goxio_zbox the preload library allocated with calloc
// (box.c) for the lifetime of the process: it is never freed, so a pointer to it stays
// valid however long the inbox keeps it; it is not Go memory, and the C side touches its fields
// only under lock (urgent and count excepted, which both sides access atomically).
func boxAt(p uintptr) *boxMem {
	return (*boxMem)(*(*unsafe.Pointer)(unsafe.Pointer(&p))) // not Go memory: vet's uintptr rule is for Go's
}

// acquire takes the box's spin lock; the C side holds it for a few loads and stores only.
func (m *boxMem) acquire() {
	for i := 0; !atomic.CompareAndSwapUint32(&m.lock, 0, 1); i++ {
		if i > 64 {
			runtime.Gosched()
		}
	}
}

func (m *boxMem) release() { atomic.StoreUint32(&m.lock, 0) }
