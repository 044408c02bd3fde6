package stats

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// socketInode reads a socket's inode from /proc as fstat gives it, and 0 for anything else.
func TestSocketInode(t *testing.T) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	if got := socketInode(os.Getpid(), fd); got != st.Ino {
		t.Errorf("socketInode = %d, fstat says %d", got, st.Ino)
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	for _, c := range []struct{ pid, fd int }{{os.Getpid(), p[0]}, {os.Getpid(), 1 << 20}, {0, fd}, {os.Getpid(), -1}} {
		if got := socketInode(c.pid, c.fd); got != 0 {
			t.Errorf("socketInode(%d, %d) = %d, want 0", c.pid, c.fd, got)
		}
	}
}
