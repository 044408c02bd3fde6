package iomux

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/internal/wait"
	"github.com/goxio/goxio/offload/transport"
)

// sel serves select and pselect over fd sets that include ring sockets: the sets become a pollfd
// array, which pollLoop serves, and the result goes back into the sets.
func (e *Mux) sel(c *transport.Call) (r int64) {
	umem.Protect()
	defer func() {
		if umem.Fault(recover()) {
			r = -int64(unix.EFAULT)
		}
	}()
	nfds := int(int32(c.A[0]))
	if nfds < 0 {
		return -int64(unix.EINVAL)
	}
	if nfds > unix.FD_SETSIZE {
		nfds = unix.FD_SETSIZE
	}
	rs, ws, es := umem.FdSet(c.A[1], nfds), umem.FdSet(c.A[2], nfds), umem.FdSet(c.A[3], nfds)
	args := umem.SelectArgsAt(c.A[4])
	if !e.anyRingSet(rs, nfds) {
		return e.kernelSelect(c, args)
	}
	ts := args.TS
	if args.TV != nil {
		if args.TV.Sec < 0 || args.TV.Usec < 0 {
			return -int64(unix.EINVAL)
		}
		t := unix.NsecToTimespec(args.TV.Sec*1e9 + args.TV.Usec*1000)
		ts = &t
	}
	var w waiter
	errno := w.init(e, ts, args.Sig)
	if errno != 0 {
		return -int64(errno)
	}
	isSet := func(set []uint64, fd int) bool { return set != nil && set[fd/64]&(1<<(fd%64)) != 0 }
	var fds []unix.PollFd
	for fd := 0; fd < nfds; fd++ {
		var ev int16
		if isSet(rs, fd) {
			ev |= unix.POLLIN
		}
		if isSet(ws, fd) {
			ev |= unix.POLLOUT
		}
		if isSet(es, fd) {
			ev |= unix.POLLPRI
		}
		if ev != 0 {
			fds = append(fds, unix.PollFd{Fd: int32(fd), Events: ev})
		}
	}
	n := w.pollLoop(fds, args.Mask)
	if args.TV != nil {
		left := w.remaining()
		if left == nil {
			left = &unix.Timespec{}
		}
		args.TV.Sec, args.TV.Usec = left.Sec, left.Nsec/1000
	}
	if n < 0 {
		return n
	}
	for _, p := range fds {
		if p.Revents&unix.POLLNVAL != 0 {
			return -int64(unix.EBADF)
		}
	}
	clearSet := func(set []uint64) {
		for i := range set {
			set[i] = 0
		}
	}
	// The words beyond nfds stay as the program passed them, as the kernel leaves them.
	clearSetTo := func(set []uint64) {
		if set == nil {
			return
		}
		last := set[len(set)-1]
		clearSet(set)
		if nfds%64 != 0 {
			set[len(set)-1] = last &^ (1<<(nfds%64) - 1)
		}
	}
	clearSetTo(rs)
	clearSetTo(ws)
	clearSetTo(es)
	total := int64(0)
	set := func(s []uint64, fd int) {
		s[fd/64] |= 1 << (fd % 64)
		total++
	}
	const in = unix.POLLIN | unix.POLLHUP | unix.POLLERR
	const out = unix.POLLOUT | unix.POLLERR
	for _, p := range fds {
		fd := int(p.Fd)
		if rs != nil && p.Events&unix.POLLIN != 0 && p.Revents&in != 0 {
			set(rs, fd)
		}
		if ws != nil && p.Events&unix.POLLOUT != 0 && p.Revents&out != 0 {
			set(ws, fd)
		}
		if es != nil && p.Events&unix.POLLPRI != 0 && p.Revents&unix.POLLPRI != 0 {
			set(es, fd)
		}
	}
	return total
}

// anyRingSet reports whether a read fd_set names a ring socket.
func (e *Mux) anyRingSet(rs []uint64, nfds int) bool {
	for fd := 0; fd < nfds && rs != nil; fd++ {
		if rs[fd/64]&(1<<(fd%64)) != 0 && (e.ringSocket(fd) != nil || e.tcpSocket(fd) != nil) {
			return true
		}
	}
	return false
}

// kernelSelect is select or pselect made by the kernel on the program's sets: pselect6, whose
// timeout the kernel updates with the time left (written back into select's timeval, as Linux's
// select does; pselect's timespec is the program's const and stays as it was).
func (e *Mux) kernelSelect(c *transport.Call, args *umem.SelectArgs) int64 {
	var ts *unix.Timespec
	if args.TV != nil {
		t := unix.NsecToTimespec(args.TV.Sec*1e9 + args.TV.Usec*1000)
		if args.TV.Sec < 0 || args.TV.Usec < 0 {
			return -int64(unix.EINVAL)
		}
		ts = &t
	} else if args.TS != nil {
		t := *args.TS
		ts = &t
	}
	var w wait.Call
	if c := umem.SigCounters(args.Sig); c != nil {
		w.StartWith(0, sigCounters(c))
	}
	var n int
	var errno syscall.Errno
	for {
		var deadline int64
		if ts != nil {
			deadline = sysc.Nanotime() + ts.Nano()
		}
		armed := w.Arm(ts) // the kernel writes the time left into it
		n, errno = sysc.Pselect6(int(int32(c.A[0])), c.A[1], c.A[2], c.A[3], armed, args.Mask)
		if ts != nil && armed != ts {
			*ts = *armed
		}
		if cut := w.Cut(n, errno); cut != errno {
			errno = cut // a handler came just before the sleep: its timeout was zeroed, not spent
			if ts != nil {
				*ts = unix.NsecToTimespec(max(deadline-sysc.Nanotime(), 0))
			}
		}
		if errno != unix.EINTR || !w.Started || w.Interrupted() {
			break
		}
		// The Go runtime's own signal, not the program's: wait on (ts holds the time left).
	}
	if args.TV != nil && ts != nil {
		args.TV.Sec, args.TV.Usec = ts.Sec, ts.Nsec/1000
	}
	return result(n, errno)
}
