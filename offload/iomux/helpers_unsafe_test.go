package iomux

import (
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/umem"
)

// Invariant for this file: the addresses handed to the code under test are of Go heap values
// that stay referenced for the rest of the test binary's life (pinned: escaping into pinned,
// they are never on a goroutine stack, which moves, and the garbage collector does not move heap
// values), as the program's C memory is to the engine.

var (
	pinMu  sync.Mutex
	pinned []any
)

// pin keeps v (a pointer or a slice) referenced and on the heap.
func pin(v any) {
	pinMu.Lock()
	pinned = append(pinned, v)
	pinMu.Unlock()
}

func pollfdsAddr(fds []unix.PollFd) uintptr {
	pin(fds)
	return uintptr(unsafe.Pointer(&fds[0]))
}

func timespecAddr(ts *unix.Timespec) uintptr {
	if ts == nil {
		return 0
	}
	pin(ts)
	return uintptr(unsafe.Pointer(ts))
}

func selectArgsAddr(a *umem.SelectArgs) uintptr {
	pin(a)
	return uintptr(unsafe.Pointer(a))
}

func setAddr(s []uint64) uintptr {
	pin(s)
	return uintptr(unsafe.Pointer(&s[0]))
}

func bytesAddr(b []byte) uintptr {
	pin(b)
	return umem.Addr(b)
}
