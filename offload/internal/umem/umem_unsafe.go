// Package umem reads and writes the program's memory for transports that move data without the
// kernel: iovecs, msghdrs, mmsghdrs, socket addresses and data buffers.
//
// The kernel checks the pointers a program passes and fails a call with EFAULT; a user-space
// transport must do the same. Every function that touches program memory runs with
// debug.SetPanicOnFault set on the calling goroutine (Protect) and recovers the fault in its
// caller (see Recover): a bad pointer costs the call an EFAULT, never the process.
package umem

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Invariant for everything in this file: addresses come from the program's arguments and point
// into C memory (or are garbage). The Go garbage collector never moves or frees C memory, so
// turning an address into an unsafe.Pointer is sound for the duration of the call; a garbage
// address faults, and the fault is turned into a panic by Protect and recovered by the caller.
// Nothing here keeps a slice over program memory beyond the call that made it.

// cptr turns the address of C memory into a pointer.
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// ErrNil is the panic value of Bytes and Iovecs for a NULL buffer of non-zero length: a fault
// like any other bad address (Fault recognises it).
var ErrNil = nilBuffer{}

type nilBuffer struct{}

func (nilBuffer) Error() string { return "umem: NULL buffer" }

// Bytes returns the n bytes at p (nil when n == 0). A NULL p with n > 0 panics with ErrNil.
func Bytes(p uintptr, n int) []byte {
	if n <= 0 {
		return nil
	}
	if p == 0 {
		panic(ErrNil)
	}
	return unsafe.Slice((*byte)(cptr(p)), n)
}

// MaxIov is the most iovecs a call may pass (UIO_MAXIOV); more is EMSGSIZE, as in the kernel.
const MaxIov = 1024

// Iovecs appends the buffers of an iovec array to dst and returns it with their total length.
func Iovecs(dst [][]byte, iov uintptr, n int) ([][]byte, int) {
	total := 0
	if n <= 0 {
		return dst, 0
	}
	vec := unsafe.Slice((*unix.Iovec)(cptr(iov)), n)
	for i := range vec {
		l := int(vec[i].Len)
		if l < 0 {
			l = 0
		}
		total += l
		if l > 0 {
			if vec[i].Base == nil {
				panic(ErrNil)
			}
			dst = append(dst, unsafe.Slice(vec[i].Base, l))
		}
	}
	return dst, total
}

// IovLen is the total length of an iovec array, without looking at the buffers (MSG_TRUNC on
// TCP discards: the kernel never touches them, so they may be NULL).
func IovLen(iov uintptr, n int) int {
	if n <= 0 {
		return 0
	}
	total := 0
	for _, v := range unsafe.Slice((*unix.Iovec)(cptr(iov)), n) {
		total += max(int(v.Len), 0)
	}
	return total
}

// IovecsOrNil is Iovecs without the panic for a NULL base: it reports one instead (nil true).
func IovecsOrNil(dst [][]byte, iov uintptr, n int) (out [][]byte, null bool) {
	if n <= 0 {
		return dst, false
	}
	vec := unsafe.Slice((*unix.Iovec)(cptr(iov)), n)
	for i := range vec {
		l := int(vec[i].Len)
		if l <= 0 {
			continue
		}
		if vec[i].Base == nil {
			return dst, true
		}
		dst = append(dst, unsafe.Slice(vec[i].Base, l))
	}
	return dst, false
}

// Msghdr is the program's struct msghdr at an address.
func Msghdr(p uintptr) *unix.Msghdr { return (*unix.Msghdr)(cptr(p)) }

// mmsghdrSize is sizeof(struct mmsghdr): a msghdr, an unsigned int, padding to 8.
const mmsghdrSize = unsafe.Sizeof(unix.Msghdr{}) + 8

// Mmsghdr returns entry i of the program's mmsghdr vector: the address of its msghdr and its
// msg_len.
func Mmsghdr(vec uintptr, i int) (uintptr, *uint32) {
	base := vec + uintptr(i)*mmsghdrSize
	return base, (*uint32)(cptr(base + unsafe.Sizeof(unix.Msghdr{})))
}

// MsgIov returns the iovec array address and count of a msghdr.
func MsgIov(m *unix.Msghdr) (uintptr, int) {
	return uintptr(unsafe.Pointer(m.Iov)), int(m.Iovlen)
}

// MsgName returns the address and length of a msghdr's name buffer.
func MsgName(m *unix.Msghdr) (uintptr, uint32) {
	return uintptr(unsafe.Pointer(m.Name)), m.Namelen
}

// MsgControl returns the address and length of a msghdr's control buffer.
func MsgControl(m *unix.Msghdr) (uintptr, uint64) {
	return uintptr(unsafe.Pointer(m.Control)), m.Controllen
}

// Int32 returns a pointer to the program's C int at p.
func Int32(p uintptr) *int32 { return (*int32)(cptr(p)) }

// Uint32 returns a pointer to the program's 32-bit value at p (a socklen_t).
func Uint32(p uintptr) *uint32 { return (*uint32)(cptr(p)) }

// Timespec returns the program's struct timespec at p.
func Timespec(p uintptr) *unix.Timespec { return (*unix.Timespec)(cptr(p)) }

// Pollfds is the program's struct pollfd array.
func Pollfds(p uintptr, n int) []unix.PollFd {
	if n <= 0 {
		return nil
	}
	return unsafe.Slice((*unix.PollFd)(cptr(p)), n)
}

// FdSet is the program's fd_set as 64-bit words, enough for n fds (nil for a NULL set).
func FdSet(p uintptr, n int) []uint64 {
	if p == 0 || n <= 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(cptr(p)), (n+63)/64)
}

// EpollEventSize is sizeof(struct epoll_event) (packed on x86-64).
const EpollEventSize = int(unsafe.Sizeof(unix.EpollEvent{}))

// epollDataOffset is where the data member starts in struct epoll_event.
const epollDataOffset = EpollEventSize - 8

// EpollEvents is the program's epoll_event array as bytes (EpollEventSize per event).
func EpollEvents(p uintptr, n int) []byte { return Bytes(p, n*EpollEventSize) }

// EpollEvent reads event i of an epoll_event array.
func EpollEvent(b []byte, i int) (events uint32, data uint64) {
	e := b[i*EpollEventSize:]
	return binary.NativeEndian.Uint32(e), binary.NativeEndian.Uint64(e[epollDataOffset:])
}

// PutEpollEvent writes event i of an epoll_event array.
func PutEpollEvent(b []byte, i int, events uint32, data uint64) {
	e := b[i*EpollEventSize:]
	binary.NativeEndian.PutUint32(e, events)
	binary.NativeEndian.PutUint64(e[epollDataOffset:], data)
}

// Addr is the address of the first byte of b (0 when empty); b is C memory or a Go value the
// caller keeps alive across the system call it is passed to.
func Addr(b []byte) uintptr {
	if len(b) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&b[0]))
}

// SelectArgs is shim/goxio.h's struct goxio_select_args.
type SelectArgs struct {
	TV   *unix.Timeval
	TS   *unix.Timespec
	Mask uintptr
	Sig  uintptr // the thread's struct goxio_sig_counters
}

// SigWords is the size of struct goxio_sig_counters (shim/goxio.h) in 32-bit words: six counters
// and a struct timespec.
const SigWords = 10

// SigCounters is the thread's struct goxio_sig_counters at p (shim/signal.c), laid out as
// transport.SigCounters; nil for 0. The counters live in the calling thread's TLS for the call.
func SigCounters(p uintptr) *[SigWords]uint32 {
	if p == 0 {
		return nil
	}
	return (*[SigWords]uint32)(cptr(p))
}

// SelectArgsAt reads the struct goxio_select_args the select trampoline passed.
func SelectArgsAt(p uintptr) *SelectArgs { return (*SelectArgs)(cptr(p)) }
