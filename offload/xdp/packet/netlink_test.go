package packet

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

func TestClosedConn(t *testing.T) {
	c, err := Open()
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	fds := c.FDs()
	if len(fds) != 1 {
		t.Fatalf("FDs = %v, want the connection's one socket", fds)
	}
	if _, err := unix.Getsockname(fds[0]); err != nil {
		t.Fatalf("FDs()[0] = %d is not a socket: %v", fds[0], err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := unix.FcntlInt(uintptr(fds[0]), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
		t.Fatalf("the socket %d is still open after Close: %v", fds[0], err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := c.LinkByIndex(1); !errors.Is(err, unix.EBADF) {
		t.Fatalf("LinkByIndex after Close: %v, want EBADF", err)
	}
}

// TestKernelErrors checks that the kernel's answers come back as errnos a caller can test.
func TestKernelErrors(t *testing.T) {
	c, err := Open()
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer c.Close()
	if _, err := c.LinkByIndex(1 << 30); !errors.Is(err, unix.ENODEV) {
		t.Errorf("LinkByIndex of a missing index: %v, want ENODEV", err)
	}
	if _, err := c.LinkByName("gxnosuchif0"); !errors.Is(err, unix.ENODEV) {
		t.Errorf("LinkByName of a missing name: %v, want ENODEV", err)
	}
	if _, err := c.NeighGet(1, a4([4]byte{127, 0, 0, 9})); !errors.Is(err, ErrNoNeighbour) || !errors.Is(err, unix.ENOENT) {
		t.Errorf("NeighGet of a missing entry: %v, want ErrNoNeighbour and ENOENT", err)
	}
	if _, err := c.RouteGet(a4([4]byte{127, 0, 0, 1}), a4([4]byte{}), 1<<30); err == nil {
		t.Errorf("RouteGet through a missing interface: no error")
	}
}
