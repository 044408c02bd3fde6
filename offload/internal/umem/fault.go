package umem

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Protect makes a fault on a bad address in the calling goroutine a recoverable panic instead of
// a crash. The engine's goroutines are the program's threads calling in; the setting stays on
// them, so calling it at the start of every data call costs one store.
func Protect() { debug.SetPanicOnFault(true) }

// Fault reports whether r, a value from recover(), is a memory fault (or a nil dereference) of
// program memory. Any other panic is re-raised: it is a bug, not bad input.
func Fault(r any) bool {
	if r == nil {
		return false
	}
	if r == ErrNil {
		return true
	}
	if e, ok := r.(runtime.Error); ok {
		msg := e.Error()
		if strings.Contains(msg, "fault address") || strings.Contains(msg, "invalid memory address") ||
			strings.Contains(msg, "unsafe.Slice: ptr is nil") {
			return true
		}
	}
	panic(r)
}

// Scatter copies src into the buffers of dst in order and returns the bytes copied.
func Scatter(dst [][]byte, src []byte) int {
	n := 0
	for _, b := range dst {
		if len(src) == 0 {
			break
		}
		c := copy(b, src)
		src = src[c:]
		n += c
	}
	return n
}
