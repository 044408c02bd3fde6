package kernel

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// TestEveryCallHasASyscall guards the table against a missing or zero-mistaken entry: each
// operation from close to ioctl reaches the kernel (EBADF on a closed fd), none answers ENOSYS.
func TestEveryCallHasASyscall(t *testing.T) {
	for op := transport.OpClose; op <= transport.OpIoctl; op++ {
		_, errno := Do(&transport.Call{Op: op, FD: -1})
		if errno != unix.EBADF {
			t.Errorf("%v on fd -1: errno %v, want EBADF", op, errno)
		}
	}
	for _, op := range []transport.Op{transport.OpSocket, transport.OpDup, transport.OpForget} {
		if _, errno := Do(&transport.Call{Op: op, FD: -1}); errno != unix.ENOSYS {
			t.Errorf("%v: errno %v, want ENOSYS (no system call of its own)", op, errno)
		}
	}
}
