package shmtcp

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// Blocking calls: what a call that may sleep watches besides the data, and how it sleeps.

// sleep waits in ppoll until the kernel socket fd has something to read (data, a wake byte, EOF,
// an error) or the timeout passes. The call sleeps on its own duplicate of the socket, as a
// kernel call holds its file: another thread's close of the program's fd does not pull the
// socket from under it (Close wakes sleepers with shutdown(SHUT_RD)). EINTR is returned as is
// (wait.Call.Check decides what it means).
func (t *TCP) sleep(fd int, events int16, ts *unix.Timespec) (int16, syscall.Errno) {
	dup, err := sysc.DupHigh(fd) // one system call, where AdoptFD leaves it
	if err != nil {
		dup = -1
	} else if t.env.p.AdoptFD != nil {
		dup = t.env.p.AdoptFD(dup)
	}
	sfd := fd
	if dup >= 0 {
		sfd = dup
	}
	t.sleepers.Add(1)
	var rev int16
	var errno syscall.Errno
	if !t.end.closed() {
		rev, errno = ppoll1(sfd, events, ts)
	}
	t.sleepers.Add(-1)
	if dup >= 0 {
		if t.env.p.ReleaseFD != nil {
			t.env.p.ReleaseFD(dup)
		}
		unix.Close(dup)
	}
	return rev, errno
}
