package xdp

import (
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Frame is one UMEM frame handed to the caller, by Receive (a received Ethernet frame)
// or by Alloc (a frame to fill and transmit). Data aliases UMEM: it is valid until the
// frame is given back (Release, Transmit, Free) and never after the socket is closed.
// Its capacity ends at the frame's end, so appending cannot run into the next frame.
type Frame struct {
	// Data is the frame's bytes: for a received frame the packet, for an allocated one
	// the whole frame (FrameSize bytes), which the caller shortens to the length to send
	// (Data = Data[:n]); moving its start (Data[k:]) is refused by Transmit.
	Data []byte
	addr uint64 // UMEM offset of Data[0]
}

// Frame states, one byte per frame. RX frames move kernel -> held -> kernel; TX frames
// free -> held -> kernel -> free (or held -> free when not sent).
const (
	frameKernel uint8 = iota // fill ring, in flight, RX ring; TX ring, in flight, completion ring
	frameHeld                // handed to the caller
	frameFree                // TX only: in the free list
)

// umem is the packet memory shared with the kernel and the bookkeeping of its frames.
// Frames [0, rxFrames) form the RX pool, [rxFrames, rxFrames+txFrames) the TX pool.
// Every frame is in exactly one state; the counters follow the state bytes and can be
// read from any goroutine (Accounting).
type umem struct {
	mem       []byte
	frameSize uint64
	rxFrames  uint32
	txFrames  uint32
	rxState   []uint8 // indexed by frame number
	txState   []uint8 // indexed by frame number - rxFrames
	txFree    []uint64
	rxHeld    atomic.Int64
	txHeld    atomic.Int64
	txKernel  atomic.Int64
}

// newUMEM maps the UMEM (mapUMEM) and sets up the pools: every RX frame starts owned by
// the kernel (the socket posts them on the fill ring right away), every TX frame free.
func newUMEM(frameSize, rxFrames, txFrames uint32) (*umem, error) {
	size := int(frameSize) * int(rxFrames+txFrames)
	mem, err := mapUMEM(size)
	if err != nil {
		return nil, fmt.Errorf("mmap umem of %d bytes: %w", size, err)
	}
	u := &umem{
		mem: mem, frameSize: uint64(frameSize), rxFrames: rxFrames, txFrames: txFrames,
		rxState: make([]uint8, rxFrames), txState: make([]uint8, txFrames),
		txFree: make([]uint64, 0, txFrames),
	}
	for i := range txFrames {
		u.txState[i] = frameFree
		u.txFree = append(u.txFree, uint64(rxFrames+i)*u.frameSize)
	}
	return u, nil
}

// UMEMName names the UMEM's memory: /proc/<pid>/maps (and pmap) show each socket's UMEM
// as "/memfd:goxio-umem (deleted)", so the memory is seen to be the library's packets, and
// the payloads a zero-copy receive hands the program can be traced to it.
const UMEMName = "goxio-umem"

// mapUMEM maps size bytes of packet memory, populated: a memfd named UMEMName, mapped
// shared (a fork shares the pages instead of copying them, which pinned private pages
// would need), its descriptor closed at once; where memfd_create is refused (a seccomp
// filter), anonymous memory, unnamed.
func mapUMEM(size int) ([]byte, error) {
	const prot = unix.PROT_READ | unix.PROT_WRITE
	fd, err := unix.MemfdCreate(UMEMName, unix.MFD_CLOEXEC)
	if err != nil {
		return unix.Mmap(-1, 0, size, prot, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return nil, fmt.Errorf("size the memfd: %w", err)
	}
	return unix.Mmap(fd, 0, size, prot, unix.MAP_SHARED|unix.MAP_POPULATE)
}

// close unmaps the UMEM; every Frame handed out is invalid afterwards.
func (u *umem) close() error {
	mem := u.mem
	u.mem = nil
	if mem == nil {
		return nil
	}
	return unix.Munmap(mem)
}

// rxFrame checks a descriptor the kernel posted on the RX ring (address and length
// inside one RX frame that the kernel owns) and returns its frame number.
func (u *umem) rxFrame(addr uint64, n uint32) (uint32, bool) {
	idx := addr / u.frameSize
	if idx >= uint64(u.rxFrames) || addr%u.frameSize+uint64(n) > u.frameSize || n == 0 {
		return 0, false
	}
	return uint32(idx), u.rxState[idx] == frameKernel
}

// txFrame checks an address the kernel posted on the completion ring (the start of a
// TX frame that the kernel owns) and returns its index in the TX pool.
func (u *umem) txFrame(addr uint64) (uint32, bool) {
	idx := addr / u.frameSize
	if addr%u.frameSize != 0 || idx < uint64(u.rxFrames) || idx >= uint64(u.rxFrames+u.txFrames) {
		return 0, false
	}
	t := uint32(idx) - u.rxFrames
	return t, u.txState[t] == frameKernel
}

// heldFrame checks a Frame the caller gives back: it must be a frame of pool rx (or of
// the TX pool) that the caller holds. It returns the frame's number in the whole UMEM.
func (u *umem) heldFrame(f *Frame, rx bool) (uint32, bool) {
	idx := f.addr / u.frameSize
	if f.Data == nil || idx >= uint64(u.rxFrames+u.txFrames) {
		return 0, false
	}
	if rx {
		return uint32(idx), idx < uint64(u.rxFrames) && u.rxState[idx] == frameHeld
	}
	return uint32(idx), idx >= uint64(u.rxFrames) && u.txState[idx-uint64(u.rxFrames)] == frameHeld
}

// Accounting says where a socket's frames are. RxKernel+RxHeld = RxFrames and
// TxFree+TxHeld+TxKernel = TxFrames at every moment; a frame that is in neither sum
// would be a leak.
type Accounting struct {
	RxFrames int // size of the RX pool
	RxKernel int // RX frames in the fill ring, in the kernel or in the RX ring
	RxHeld   int // RX frames received and not yet released
	TxFrames int // size of the TX pool
	TxFree   int // TX frames ready for Alloc
	TxHeld   int // TX frames allocated and neither transmitted nor freed
	TxKernel int // TX frames in the TX ring, in the kernel or in the completion ring
}

// accounting returns the counters.
func (u *umem) accounting() Accounting {
	rxHeld, txHeld, txKernel := int(u.rxHeld.Load()), int(u.txHeld.Load()), int(u.txKernel.Load())
	return Accounting{
		RxFrames: int(u.rxFrames), RxKernel: int(u.rxFrames) - rxHeld, RxHeld: rxHeld,
		TxFrames: int(u.txFrames), TxFree: int(u.txFrames) - txHeld - txKernel, TxHeld: txHeld, TxKernel: txKernel,
	}
}

// frameData returns the bytes of frame idx from offset off (n bytes), with the
// capacity ending at the frame's end.
func (u *umem) frameData(addr uint64, n uint32) []byte {
	end := (addr/u.frameSize + 1) * u.frameSize
	return u.mem[addr : addr+uint64(n) : end]
}
