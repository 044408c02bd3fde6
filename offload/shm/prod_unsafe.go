package shm

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Producer states and send gates in memory the preload library may read and write: the sends
// that skip the engine (shim/preload/rsend.c) append to an outlet's ring themselves, under the
// same lock and with the same state as Outlet.Send.
//
// Invariants:
//   - Cells are carved from private anonymous mappings that are never unmapped: a pointer to a
//     cell stays valid for the process's life, whoever holds it (the C side keeps them in its
//     per-fd routes). The memory is not Go memory; the garbage collector ignores the pointers.
//   - A cell is reused after it is freed: whoever kept its address checks the epoch (a
//     prodState) or the value (a gate) it saw when it took the address, under the state's lock
//     or before it uses anything else, so a reused cell never passes for the old one.
//   - Every field of a prodState but lock is read and written under lock; lock only through
//     sync/atomic (and the C side's __atomic builtins).

// cellSize is the size of a cell: two cache lines, so that no two states share one.
const cellSize = 128

// cellChunk is the size of each mapping cells are carved from.
const cellChunk = 64 << 10

// cellPool hands out cells of one use (producer states, or gates: a cell never changes use, so a
// gate's word never holds a state's bytes).
type cellPool struct {
	mu   sync.Mutex
	free []uintptr
}

var (
	prodCells, gateCells cellPool
	cellValue            atomic.Uint64 // the last epoch or gate value handed out
)

// newCell returns a cell of the pool and a value never handed out before (never 0).
func (cells *cellPool) newCell() (uintptr, uint64, error) {
	cells.mu.Lock()
	defer cells.mu.Unlock()
	if len(cells.free) == 0 {
		mem, err := unix.Mmap(-1, 0, cellChunk, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return 0, 0, fmt.Errorf("producer state: mmap: %w", err)
		}
		for off := cellChunk - cellSize; off >= 0; off -= cellSize {
			cells.free = append(cells.free, uintptr(unsafe.Pointer(&mem[off])))
		}
	}
	c := cells.free[len(cells.free)-1]
	cells.free = cells.free[:len(cells.free)-1]
	return c, cellValue.Add(1), nil
}

// freeCell gives c back for reuse.
func (cells *cellPool) freeCell(c uintptr) {
	cells.mu.Lock()
	cells.free = append(cells.free, c)
	cells.mu.Unlock()
}

// prodState mirrors struct goxio_prod (shim/goxio.h; TestProdLayout checks the offsets): the
// producer side of one outlet's ring, shared by the engine and the preload library.
type prodState struct {
	lock      uint32
	open      uint32 // 1 while ring and inbox are mapped and the outlet takes sends
	epoch     uint64 // unique per outlet: a cell reused for another outlet has another
	tail      uint64 // authoritative tail; published to the ring's tail word after each record
	headCache uint64 // last validated head read from the ring's head word
	pushed    uint64
	drops     uint64
	wakes     uint64
	capacity  uint64
	ring      uintptr // the ring's mapping (header page, then data)
	inbox     uintptr // the inbox's mapping (header page)
	stTx      uintptr // the statistics ring's tx packets word (tx bytes the next), 0: none
	stWake    uintptr // the statistics ring's wake-ups sent word, 0: none
	_         [4]uint64
}

// newProdState returns the state of a new outlet's producer over ring (a whole ring mapping of
// this capacity) towards the inbox mapped at ib, open.
func newProdState(ring, ib []byte, capacity uint64) (*prodState, error) {
	c, epoch, err := prodCells.newCell()
	if err != nil {
		return nil, err
	}
	s := (*prodState)(*(*unsafe.Pointer)(unsafe.Pointer(&c))) // not Go memory: vet's uintptr rule is for Go's
	s.acquire()
	s.epoch, s.tail, s.headCache, s.pushed, s.drops, s.wakes = epoch, 0, 0, 0, 0, 0
	s.capacity = capacity
	s.ring, s.inbox = Addr(ring), Addr(ib)
	s.stTx, s.stWake = 0, 0
	s.open = 1
	s.release()
	return s, nil
}

// close stops every send through s (the engine's and the library's) and frees the cell: it is
// called before the ring and the inbox are unmapped.
func (s *prodState) close() {
	s.acquire()
	s.open = 0
	s.epoch = 0
	s.stTx, s.stWake = 0, 0
	s.release()
	prodCells.freeCell(s.addr())
}

// addr is the address the C side knows the state by.
func (s *prodState) addr() uintptr { return uintptr(unsafe.Pointer(s)) }

// setStats points the state at its statistics ring's words (nil: none).
func (s *prodState) setStats(tx *[2]uint64, wake *uint64) {
	s.acquire()
	s.stTx, s.stWake = uintptr(unsafe.Pointer(tx)), uintptr(unsafe.Pointer(wake))
	s.release()
}

// count adds a datagram of n bytes sent (and a wake-up) to the statistics ring's words CountInto
// gave; s's lock is held. Every writer of those words holds it (the library's sends too), so the
// additions need no locked instruction; the stores are atomic for the readers.
func (s *prodState) count(n int, wake bool) {
	if s.stTx != 0 {
		tx := (*[2]uint64)(*(*unsafe.Pointer)(unsafe.Pointer(&s.stTx)))
		atomic.StoreUint64(&tx[0], atomic.LoadUint64(&tx[0])+1)
		atomic.StoreUint64(&tx[1], atomic.LoadUint64(&tx[1])+uint64(n))
	}
	if wake && s.stWake != 0 {
		w := (*uint64)(*(*unsafe.Pointer)(unsafe.Pointer(&s.stWake)))
		atomic.StoreUint64(w, atomic.LoadUint64(w)+1)
	}
}

// acquire takes the state's spin lock; the C side holds it for one record's copy at most.
func (s *prodState) acquire() {
	for i := 0; !atomic.CompareAndSwapUint32(&s.lock, 0, 1); i++ {
		if i > 64 {
			runtime.Gosched()
		}
	}
}

// release frees the lock: a full barrier (Store is an exchange on amd64), as the C side's.
func (s *prodState) release() { atomic.StoreUint32(&s.lock, 0) }

// Gate is a sending socket's word that the library's sends check before they use the socket's
// route (shim/preload/rsend.c): it holds a value no other gate ever held while the socket allows
// them, 0 once it does not (closed, shut for writing, back to the kernel).
type Gate struct{ p *uint64 }

// NewGate returns an open gate.
func NewGate() (Gate, error) {
	c, v, err := gateCells.newCell()
	if err != nil {
		return Gate{}, err
	}
	p := (*uint64)(*(*unsafe.Pointer)(unsafe.Pointer(&c)))
	atomic.StoreUint64(p, v)
	return Gate{p: p}, nil
}

// Addr is the gate word's address and the value it holds while open (0, 0: none or shut).
func (g Gate) Addr() (uintptr, uint64) {
	if g.p == nil {
		return 0, 0
	}
	return uintptr(unsafe.Pointer(g.p)), atomic.LoadUint64(g.p)
}

// Shut closes the gate for good; the cell stays the socket's (Free gives it back).
func (g Gate) Shut() {
	if g.p != nil {
		atomic.StoreUint64(g.p, 0)
	}
}

// Free shuts the gate and gives its cell back.
func (g Gate) Free() {
	if g.p != nil {
		g.Shut()
		gateCells.freeCell(uintptr(unsafe.Pointer(g.p)))
	}
}
