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
	// kernel read (hold_box_kread.go)
	kread uint32
	knb   uint32
	kgen  uint64
	kgenp uintptr // *uint64 in the inbox's mapping
	krx   uintptr // *[4]uint64 in the statistics slot
	// the library's wait (hold_box_kread.go)
	kwake  uintptr // *uint32 in the inbox's mapping: its wake-up word
	ktimeo int64
	kbell  int32
	ksleep int32
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

// armKernel lets the library's plain receives read the kernel socket first while *genp, the
// inbox's sender generation, is gen (hold_box_kread.go); they count into rx and, for a
// non-blocking socket, answer EAGAIN themselves; a blocking one waits there on the kernel socket
// and the doorbell bell (-1: none, the engine waits) while *wakep, the inbox's wake-up word, is 0,
// for at most timeo ns (0: no limit). m's lock is held.
//
// Invariant: genp and wakep lie in the inbox's mapping, which Close unmaps only after closeBox
// detached the box under its lock, and the library reads them only under that lock with the box
// attached; rx are statistics words that stay valid memory for the process's life
// (stats.Socket.RxKernelWords). None is Go heap memory that could move or go.
func (m *boxMem) armKernel(genp *uint64, gen uint64, rx *[4]uint64, nonblock bool, wakep *uint32, bell int, timeo int64) {
	m.kgen = gen
	m.knb = b2u(nonblock)
	m.kgenp = uintptr(unsafe.Pointer(genp))
	m.krx = uintptr(unsafe.Pointer(rx))
	m.kwake = uintptr(unsafe.Pointer(wakep))
	m.ktimeo = timeo
	m.kbell = int32(bell)
	atomic.StoreUint32(&m.kread, 1)
}
