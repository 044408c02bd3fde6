package shm

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/wait"
)

// A doorbell wakes a receiver that sleeps in the kernel: an abstract AF_UNIX datagram socket
// per inbox, named "\x00" + the inbox name (abstract names are per network namespace, like the
// transport). The receiver sleeps in ppoll/epoll on its kernel socket and its doorbell; a sender
// that must wake it (wake protocol, offload/shm) sends one byte to the doorbell from the
// process's ringer socket. The doorbell is the library's own fd (internal, invisible to the
// program); the program's kernel socket never sees a wake-up.

// bellAddr is the sockaddr_un of an inbox's doorbell.
type bellAddr struct {
	sa  [unix.SizeofSockaddrUnix]byte
	len int
}

func newBellAddr(inbox string) *bellAddr {
	a := &bellAddr{}
	putUint16(a.sa[:], unix.AF_UNIX)
	// sun_path[0] = 0: abstract; the name follows.
	n := copy(a.sa[3:], inbox)
	a.len = 2 + 1 + n
	return a
}

func putUint16(b []byte, v uint16) { b[0], b[1] = byte(v), byte(v>>8) }

// openBell makes the doorbell of an inbox.
func openBell(inbox string) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	a := newBellAddr(inbox)
	if e := bindRaw(fd, a); e != 0 {
		unix.Close(fd)
		return -1, e
	}
	return fd, nil
}

// bellBatch is how many rings of a doorbell one system call takes.
const bellBatch = 32

// drainBell takes every pending ring of a doorbell: usually one, in one system call (a batch
// that comes back short emptied it; no second call to see EAGAIN).
func drainBell(fd int) {
	for i := 0; i < 1024/bellBatch; i++ {
		n, e := drainRaw(fd)
		if e == unix.EINTR {
			continue
		}
		if e != 0 || n < bellBatch {
			return
		}
	}
}

// ringBell sends one byte to a doorbell; a full doorbell already has a wake-up pending.
func ringBell(ringer int, a *bellAddr) syscall.Errno {
	for i := 0; i < 3; i++ {
		if e := sendBellRaw(ringer, a); e != unix.EINTR {
			if e == 0 {
				wait.Woke()
			}
			return e
		}
	}
	return unix.EINTR
}
