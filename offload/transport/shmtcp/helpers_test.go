package shmtcp

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	ring "github.com/goxio/goxio/offload/shm"

	"github.com/goxio/goxio/offload/transport"
)

// testEnv makes an Env whose segments live in a fresh directory under /dev/shm; at cleanup the
// directory must be empty (no segment, no temporary file left).
func testEnv(t testing.TB, mod func(*Params)) *Env {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "shmtcp-test-")
	if err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	t.Cleanup(func() {
		ring.DrainConnPool() // what the process kept for reuse goes at exit
		left, _ := os.ReadDir(dir)
		for _, f := range left {
			t.Errorf("file left in %s: %s", dir, f.Name())
		}
		_ = os.RemoveAll(dir)
	})
	p := Params{Dir: dir, RxPoll: 0, RingBytes: 64 << 10}
	if mod != nil {
		mod(&p)
	}
	e, err := NewEnv(p, nil)
	if err != nil {
		t.Fatalf("NewEnv: %v", err)
	}
	return e
}

// listen opens a kernel TCP listener on 127.0.0.1 and returns it with its port.
func listen(t testing.TB) (int, int) {
	t.Helper()
	l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	if err := unix.Bind(l, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	if err := unix.Listen(l, 1024); err != nil {
		t.Fatalf("listen: %v", err)
	}
	sa, _ := unix.Getsockname(l)
	t.Cleanup(func() { unix.Close(l) })
	return l, sa.(*unix.SockaddrInet4).Port
}

func dial(t testing.TB, port int) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port}); err != nil {
		t.Fatalf("connect: %v", err)
	}
	return fd
}

func accept(t testing.TB, l int) int {
	t.Helper()
	fd, _, err := unix.Accept4(l, unix.SOCK_CLOEXEC)
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	return fd
}

// end is one end of a test connection: its kernel fd, its transport (nil for a plain kernel
// socket), and program-like buffers outside the Go heap.
type end struct {
	t      testing.TB
	tr     *TCP
	fd     int
	nb     atomic.Bool
	wbuf   []byte
	rbuf   []byte
	scr    []byte // iovec arrays and msghdrs
	rscr   []byte
	closed bool
}

func newEnd(t testing.TB, env *Env, fd int) *end {
	e := &end{t: t, fd: fd, wbuf: cmem(t, 1<<20), rbuf: cmem(t, 1<<20), scr: cmem(t, 4096), rscr: cmem(t, 4096)}
	if env != nil {
		e.tr = env.NewTCP(e.nb.Load)
	}
	t.Cleanup(e.close)
	return e
}

// pair makes a connected pair of ends, both on the transport (env may be nil for a kernel
// end), established client first.
func pair(t testing.TB, cenv, senv *Env) (c, s *end) {
	t.Helper()
	l, port := listen(t)
	cfd := dial(t, port)
	sfd := accept(t, l)
	c, s = newEnd(t, cenv, cfd), newEnd(t, senv, sfd)
	if c.tr != nil {
		c.tr.Established(cfd, false)
	}
	if s.tr != nil {
		s.tr.Established(sfd, true)
	}
	return c, s
}

// do performs a data call through the transport, or on the kernel for a plain end.
func (e *end) do(op transport.Op, a ...uintptr) (int, syscall.Errno) {
	c := transport.Call{Op: op, FD: e.fd}
	copy(c.A[:], a)
	if e.tr == nil {
		r, _, errno := unix.Syscall6(sysno(op), uintptr(e.fd), c.A[0], c.A[1], c.A[2], c.A[3], c.A[4])
		if errno != 0 {
			return -1, errno
		}
		return int(r), 0
	}
	return e.tr.Transfer(c)
}

func sysno(op transport.Op) uintptr {
	switch op {
	case transport.OpRead:
		return unix.SYS_READ
	case transport.OpReadv:
		return unix.SYS_READV
	case transport.OpRecvfrom:
		return unix.SYS_RECVFROM
	case transport.OpRecvmsg:
		return unix.SYS_RECVMSG
	case transport.OpWrite:
		return unix.SYS_WRITE
	case transport.OpWritev:
		return unix.SYS_WRITEV
	case transport.OpSendto:
		return unix.SYS_SENDTO
	case transport.OpSendmsg:
		return unix.SYS_SENDMSG
	}
	panic("no syscall for " + op.String())
}

// send sends b (copied into the end's write buffer) with sendto and flags.
func (e *end) send(b []byte, flags int) (int, syscall.Errno) {
	copy(e.wbuf, b)
	return e.do(transport.OpSendto, addr(e.wbuf), uintptr(len(b)), uintptr(flags), 0, 0)
}

// sendAll sends b completely with blocking sends.
func (e *end) sendAll(b []byte) {
	e.t.Helper()
	for len(b) > 0 {
		n, errno := e.send(b[:min(len(b), len(e.wbuf))], unix.MSG_NOSIGNAL)
		if errno != 0 {
			e.t.Fatalf("send: %v", errno)
		}
		b = b[n:]
	}
}

// recv receives up to n bytes with recvfrom and flags; the bytes are copied out.
func (e *end) recv(n, flags int) ([]byte, syscall.Errno) {
	r, errno := e.do(transport.OpRecvfrom, addr(e.rbuf), uintptr(n), uintptr(flags), 0, 0)
	if errno != 0 {
		return nil, errno
	}
	return append([]byte(nil), e.rbuf[:r]...), 0
}

// recvAll receives exactly n bytes (or fails the test).
func (e *end) recvAll(n int) []byte {
	e.t.Helper()
	var out []byte
	deadline := time.Now().Add(20 * time.Second)
	for len(out) < n {
		b, errno := e.recv(min(n-len(out), len(e.rbuf)), 0)
		if errno != 0 {
			e.t.Fatalf("recv after %d of %d bytes: %v", len(out), n, errno)
		}
		if len(b) == 0 {
			e.t.Fatalf("recv: EOF after %d of %d bytes", len(out), n)
		}
		out = append(out, b...)
		if time.Now().After(deadline) {
			e.t.Fatalf("recvAll: too slow")
		}
	}
	return out
}

// close closes the end as the engine would: the transport first, then the kernel fd.
func (e *end) close() {
	if e.closed {
		return
	}
	e.closed = true
	if e.tr != nil {
		e.tr.Close(e.fd)
	}
	unix.Close(e.fd)
}

// fdCount is the number of open fds of the process.
func fdCount(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("fds: %v", err)
	}
	return len(ents)
}

// mappingsOf counts the process's mappings of files in dir.
func mappingsOf(t testing.TB, dir string) int {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatalf("maps: %v", err)
	}
	return strings.Count(string(b), dir)
}

const (
	opRead  = transport.OpRead
	opWrite = transport.OpWrite
)

func call(op transport.Op, fd int, a ...uintptr) transport.Call {
	c := transport.Call{Op: op, FD: fd}
	copy(c.A[:], a)
	return c
}

func unixClose(fd int) { unix.Close(fd) }

// debugState describes a socket's receive-side bookkeeping (for a hung test's message).
func (t *TCP) debugState() string {
	if !t.rxmu.TryLock() {
		return "rxmu held"
	}
	defer t.rxmu.Unlock()
	s := fmt.Sprintf("side %d tx %v flags %#x kTx %d withdrew %v ", t.side, t.tx.phase(), t.tx.w.Load()&^phaseMask, t.kTx, t.withdrew.Load())
	s += fmt.Sprintf("rx %v flags %#x rxK %d kRx %d kConsumed %d end %#x est %d early %d",
		t.rx.phase(), t.rx.w.Load()&^phaseMask, t.rxK, t.kRx, t.kConsumed, t.end.w.Load(), t.est.Load(), t.early.Load())
	if c := t.conn.Load(); c != nil {
		k, ok := c.ReaderSwitch()
		s += fmt.Sprintf(" peerK %d,%v wakePending %v", k, ok, c.WakePending())
	}
	return s
}
