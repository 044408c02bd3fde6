package shmtcp

import (
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// Blocking calls: what a call that may sleep watches besides the data, and how it sleeps.

// waitState is one blocking call's timeout (SO_RCVTIMEO or SO_SNDTIMEO) and the thread's
// signal-handler counters at its start.
type waitState struct {
	started  bool
	begin    int64 // nanotime at start
	deadline int64 // nanotime; 0: no timeout
	sig      *transport.SigCounters
	all      uint32
	intr     uint32
}

func (w *waitState) start(timeout int64, signals func() *transport.SigCounters) {
	w.started = true
	w.begin = nanotime()
	if timeout > 0 {
		w.deadline = nanotime() + timeout
	}
	if signals != nil {
		if w.sig = signals(); w.sig != nil {
			w.all, w.intr = atomic.LoadUint32(&w.sig.All), atomic.LoadUint32(&w.sig.Interrupting)
		}
	}
}

// check returns EINTR when a handler without SA_RESTART ran on the thread (or any handler, for a
// call with a timeout: the kernel does not restart those), EAGAIN when the timeout expired.
func (w *waitState) check() syscall.Errno {
	if w.sig != nil {
		if atomic.LoadUint32(&w.sig.Interrupting) != w.intr {
			return unix.EINTR
		}
		if w.deadline != 0 && atomic.LoadUint32(&w.sig.All) != w.all {
			return unix.EINTR
		}
	}
	if w.deadline != 0 && nanotime() >= w.deadline {
		return unix.EAGAIN
	}
	return 0
}

// timeout is the next sleep's timeout: the time left, at most limit when limit > 0; nil for
// none.
func (w *waitState) timeout(limit int64) *unix.Timespec {
	if w.deadline == 0 && limit <= 0 {
		return nil
	}
	left := int64(1 << 62)
	if w.deadline != 0 {
		left = max(w.deadline-nanotime(), 0)
	}
	if limit > 0 {
		left = min(left, limit)
	}
	ts := unix.NsecToTimespec(left)
	return &ts
}

// highFD is where a sleeping call's own duplicate of its socket goes: away from the low numbers
// the program expects from its own calls meanwhile.
const highFD = 1 << 10

// sleep waits in ppoll until the kernel socket fd has something to read (data, a wake byte, EOF,
// an error) or the timeout passes. The call sleeps on its own duplicate of the socket, as a
// kernel call holds its file: another thread's close of the program's fd does not pull the
// socket from under it (Close wakes sleepers with shutdown(SHUT_RD)). EINTR is returned as is
// (waitState.check decides what it means).
func (t *TCP) sleep(fd int, events int16, ts *unix.Timespec) (int16, syscall.Errno) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, highFD)
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
