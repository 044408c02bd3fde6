package shmtcp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// switched makes both directions of a pair switch: one exchange each way.
func switched(t *testing.T, c, s *end) {
	t.Helper()
	c.sendAll([]byte("x"))
	s.recvAll(1)
	s.sendAll([]byte("y"))
	c.recvAll(1)
	c.sendAll([]byte("z"))
	s.recvAll(1)
	cr, ct := c.tr.Mode()
	sr, st := s.tr.Mode()
	if !cr || !ct || !sr || !st {
		t.Fatalf("not switched: client rx %v tx %v, server rx %v tx %v", cr, ct, sr, st)
	}
}

// TestNonblockingPartialAndEAGAIN: a non-blocking send fills the ring partially, then EAGAIN;
// Writable turns true again once the peer read; a partial read returns what is there.
func TestNonblockingPartialAndEAGAIN(t *testing.T) {
	env := testEnv(t, func(p *Params) { p.RingBytes, p.MaxRingBytes = 16<<10, 16<<10 })
	c, s := pair(t, env, env)
	switched(t, c, s)
	c.nb.Store(true)
	big := stream(5, 100000)
	n, errno := c.send(big, 0)
	if errno != 0 || n != 16<<10 {
		t.Fatalf("first non-blocking send = %d, %v; want a partial %d", n, errno, 16<<10)
	}
	if _, errno := c.send(big[n:], 0); errno != unix.EAGAIN {
		t.Fatalf("send on a full ring: %v, want EAGAIN", errno)
	}
	if c.tr.Writable() {
		t.Fatalf("Writable with a full ring")
	}
	if q, ok := c.tr.OutQueue(); !ok || q != 16<<10 {
		t.Fatalf("SIOCOUTQ = %d %v", q, ok)
	}
	if q, ok := s.tr.InQueue(s.fd); !ok || q != 16<<10 {
		t.Fatalf("FIONREAD = %d %v", q, ok)
	}
	if !s.tr.Readable(s.fd) {
		t.Fatalf("not Readable with data")
	}
	got, errno := s.recv(10000, 0)
	if errno != 0 || !bytes.Equal(got, big[:10000]) {
		t.Fatalf("recv %d bytes, %v", len(got), errno)
	}
	if !c.tr.Writable() {
		t.Fatalf("not Writable after the peer read 10000 of 16384")
	}
	m, errno := c.send(big[n:], 0)
	if errno != 0 || m != 10000 {
		t.Fatalf("send after space returned = %d, %v", m, errno)
	}
	rest := s.recvAll(n + m - 10000)
	if !bytes.Equal(rest, big[10000:n+m]) {
		t.Fatalf("data differs")
	}
	s.nb.Store(true)
	if _, errno := s.recv(10, 0); errno != unix.EAGAIN {
		t.Fatalf("non-blocking recv on an empty ring: %v", errno)
	}
	if s.tr.Readable(s.fd) {
		t.Fatalf("Readable on an empty ring")
	}
}

// TestPeekWaitallDontwaitTrunc checks the receive flags on the ring against their kernel
// meaning.
func TestPeekWaitallDontwaitTrunc(t *testing.T) {
	env := testEnv(t, nil)
	c, s := pair(t, env, env)
	switched(t, c, s)
	if _, errno := s.recv(10, unix.MSG_DONTWAIT); errno != unix.EAGAIN {
		t.Fatalf("MSG_DONTWAIT on empty: %v", errno)
	}
	c.sendAll([]byte("hello world"))
	waitReadable(t, s)
	if b, _ := s.recv(5, unix.MSG_PEEK); string(b) != "hello" {
		t.Fatalf("peek %q", b)
	}
	if b, _ := s.recv(5, unix.MSG_PEEK); string(b) != "hello" {
		t.Fatalf("second peek %q", b)
	}
	// MSG_TRUNC on TCP discards.
	if n, errno := s.do(transport.OpRecvfrom, addr(s.rbuf), 6, unix.MSG_TRUNC, 0, 0); n != 6 || errno != 0 {
		t.Fatalf("MSG_TRUNC = %d %v", n, errno)
	}
	if b, _ := s.recv(100, 0); string(b) != "world" {
		t.Fatalf("after discard %q", b)
	}
	// MSG_WAITALL gathers two sends made apart.
	go func() {
		time.Sleep(20 * time.Millisecond)
		c.sendAll([]byte("abc"))
		time.Sleep(20 * time.Millisecond)
		c.sendAll([]byte("defg"))
	}()
	if b, errno := s.recv(7, unix.MSG_WAITALL); string(b) != "abcdefg" || errno != 0 {
		t.Fatalf("MSG_WAITALL %q %v", b, errno)
	}
}

func waitReadable(t *testing.T, e *end) {
	t.Helper()
	for i := 0; !e.tr.Readable(e.fd); i++ {
		if i > 2000 {
			t.Fatalf("never readable")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRcvTimeo: SO_RCVTIMEO ends a blocking receive on an empty ring with EAGAIN in time.
func TestRcvTimeo(t *testing.T) {
	env := testEnv(t, nil)
	c, s := pair(t, env, env)
	switched(t, c, s)
	tv := unix.Timeval{Usec: 50000}
	if err := unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	s.tr.OptionSet(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
	t0 := time.Now()
	_, errno := s.recv(10, 0)
	el := time.Since(t0)
	if errno != unix.EAGAIN || el < 45*time.Millisecond || el > 2*time.Second {
		t.Fatalf("recv = %v after %v; want EAGAIN after about 50ms", errno, el)
	}
	// A blocking send waiting for space times out the same way with SO_SNDTIMEO.
	if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	c.tr.OptionSet(c.fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO)
	big := make([]byte, len(c.wbuf))
	total := 0
	t0 = time.Now()
	for i := 0; i < 100; i++ {
		n, errno := c.send(big, 0)
		if errno == unix.EAGAIN {
			break
		}
		if errno != 0 {
			t.Fatalf("send: %v", errno)
		}
		total += n
	}
	if el := time.Since(t0); el < 45*time.Millisecond || el > 5*time.Second {
		t.Fatalf("send timed out after %v (sent %d)", el, total)
	}
}

// TestShutdownWriteEOF: data then EOF after shutdown(SHUT_WR); the other direction still works;
// a send after SHUT_WR fails with EPIPE.
func TestShutdownWriteEOF(t *testing.T) {
	env := testEnv(t, nil)
	c, s := pair(t, env, env)
	switched(t, c, s)
	data := stream(6, 300000)
	go func() {
		c.sendAll(data)
		c.tr.Shutdown(c.fd, unix.SHUT_WR)
		_ = unix.Shutdown(c.fd, unix.SHUT_WR)
	}()
	if got := s.recvAll(len(data)); !bytes.Equal(got, data) {
		t.Fatalf("data differs")
	}
	if b, errno := s.recv(10, 0); len(b) != 0 || errno != 0 {
		t.Fatalf("after shutdown: %q %v, want EOF", b, errno)
	}
	if !s.tr.Readable(s.fd) {
		t.Fatalf("EOF not Readable")
	}
	s.sendAll([]byte("reply"))
	if b := c.recvAll(5); string(b) != "reply" {
		t.Fatalf("reply %q", b)
	}
	if _, errno := c.send([]byte("x"), unix.MSG_NOSIGNAL); errno != unix.EPIPE {
		t.Fatalf("send after SHUT_WR: %v", errno)
	}
}

// closeUnread runs the same script on a pair: the server leaves data unread and closes; it
// returns what the client's recv and then two sends get.
func closeUnread(t *testing.T, c, s *end) (recvErr, send1, send2 unix.Errno) {
	c.sendAll([]byte("unread data"))
	time.Sleep(20 * time.Millisecond)
	s.close()
	time.Sleep(20 * time.Millisecond)
	_, recvErr = c.recv(10, 0)
	_, send1 = c.send([]byte("x"), unix.MSG_NOSIGNAL)
	time.Sleep(10 * time.Millisecond)
	_, send2 = c.send([]byte("x"), unix.MSG_NOSIGNAL)
	return
}

// TestCloseWithUnreadDataResets compares the ring pair with a kernel pair: close with unread
// data resets the connection.
func TestCloseWithUnreadDataResets(t *testing.T) {
	kc, ks := pair(t, nil, nil)
	kr, k1, k2 := closeUnread(t, kc, ks)
	env := testEnv(t, nil)
	c, s := pair(t, env, env)
	switched(t, c, s)
	r, s1, s2 := closeUnread(t, c, s)
	t.Logf("kernel: recv %v, send %v, send %v; rings: recv %v, send %v, send %v", kr, k1, k2, r, s1, s2)
	if r != unix.ECONNRESET || kr != unix.ECONNRESET {
		t.Fatalf("recv after the peer's close with unread data: rings %v, kernel %v; want ECONNRESET", r, kr)
	}
	if s1 != k1 || s2 != k2 {
		t.Fatalf("sends after reset: %v, %v", s1, s2)
	}
}

// TestSoLingerZeroResets: close with SO_LINGER 0 resets even with everything read.
func TestSoLingerZeroResets(t *testing.T) {
	env := testEnv(t, nil)
	c, s := pair(t, env, env)
	switched(t, c, s)
	if err := unix.SetsockoptLinger(s.fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1}); err != nil {
		t.Fatal(err)
	}
	s.tr.OptionSet(s.fd, unix.SOL_SOCKET, unix.SO_LINGER)
	s.close()
	if _, errno := c.recv(10, 0); errno != unix.ECONNRESET {
		t.Fatalf("recv after SO_LINGER 0 close: %v", errno)
	}
}

// TestCloseWithoutUnreadEOF: a plain close gives the peer its data then EOF; as with the kernel,
// the peer's first send after that is accepted (and answered with a reset), the next fail with
// EPIPE.
func TestCloseWithoutUnreadEOF(t *testing.T) {
	env := testEnv(t, nil)
	c, s := pair(t, env, env)
	switched(t, c, s)
	s.sendAll([]byte("bye"))
	s.close()
	if b := c.recvAll(3); string(b) != "bye" {
		t.Fatalf("%q", b)
	}
	if b, errno := c.recv(10, 0); len(b) != 0 || errno != 0 {
		t.Fatalf("after close: %q %v, want EOF", b, errno)
	}
	if n, errno := c.send([]byte("x"), unix.MSG_NOSIGNAL); n != 1 || errno != 0 {
		t.Fatalf("first send to a closed peer: %d %v, want 1 as the kernel's", n, errno)
	}
	time.Sleep(50 * time.Millisecond) // the reset comes back
	if _, errno := c.send([]byte("x"), unix.MSG_NOSIGNAL); errno != unix.EPIPE {
		t.Fatalf("send after the reset: %v, want EPIPE", errno)
	}
}

// TestCloseWakesBlocked: a receive and a send blocked in the transport return when another
// thread closes the socket.
func TestCloseWakesBlocked(t *testing.T) {
	env := testEnv(t, func(p *Params) { p.RingBytes, p.MaxRingBytes = 16<<10, 16<<10 })
	c, s := pair(t, env, env)
	switched(t, c, s)
	type res struct {
		n     int
		errno unix.Errno
	}
	rc := make(chan res, 1)
	go func() {
		b, errno := s.recv(10, 0)
		rc <- res{len(b), errno}
	}()
	time.Sleep(30 * time.Millisecond)
	s.close()
	select {
	case r := <-rc:
		if r.n != 0 || r.errno != 0 {
			t.Fatalf("blocked recv woke with %d, %v; want 0", r.n, r.errno)
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("close did not wake the blocked recv")
	}
	c.close()
	c, s = pair(t, env, env) // a peer that stays open and does not read
	switched(t, c, s)
	wc := make(chan res, 1)
	big := make([]byte, 100000)
	go func() {
		n, errno := c.send(big, unix.MSG_NOSIGNAL)
		wc <- res{n, errno}
	}()
	time.Sleep(30 * time.Millisecond)
	c.close()
	select {
	case r := <-wc:
		t.Logf("blocked send woke with %d, %v", r.n, r.errno)
		if r.errno == 0 && r.n == len(big) {
			t.Fatalf("send completed into a full ring nobody reads")
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("close did not wake the blocked send")
	}
}

// TestTCPOptionsHidden: after the switch the kernel socket has TCP_NODELAY on and TCP_CORK off
// (wake bytes must leave at once), while the program's values are kept for getsockopt.
func TestTCPOptionsHidden(t *testing.T) {
	env := testEnv(t, nil)
	c, s := pair(t, env, env)
	if _, ok := c.tr.TCPOption(unix.TCP_NODELAY); ok {
		t.Fatalf("option taken before the switch")
	}
	switched(t, c, s)
	if v, ok := c.tr.TCPOption(unix.TCP_NODELAY); !ok || v != 0 {
		t.Fatalf("program's TCP_NODELAY = %d %v, want 0", v, ok)
	}
	if v, _ := unix.GetsockoptInt(c.fd, unix.IPPROTO_TCP, unix.TCP_NODELAY); v == 0 {
		t.Fatalf("kernel TCP_NODELAY off after the switch")
	}
	_ = unix.SetsockoptInt(c.fd, unix.IPPROTO_TCP, unix.TCP_CORK, 1)
	c.tr.OptionSet(c.fd, unix.IPPROTO_TCP, unix.TCP_CORK)
	if v, ok := c.tr.TCPOption(unix.TCP_CORK); !ok || v != 1 {
		t.Fatalf("program's TCP_CORK = %d %v, want 1", v, ok)
	}
	if v, _ := unix.GetsockoptInt(c.fd, unix.IPPROTO_TCP, unix.TCP_CORK); v != 0 {
		t.Fatalf("kernel TCP_CORK on")
	}
	// Wake-ups still travel at once: a sleeping receiver gets a message promptly.
	go func() { time.Sleep(10 * time.Millisecond); c.sendAll([]byte("hi")) }()
	t0 := time.Now()
	if b := s.recvAll(2); string(b) != "hi" || time.Since(t0) > time.Second {
		t.Fatalf("%q after %v", b, time.Since(t0))
	}
}

// TestSignalInterruptsBlockedRecv: a handler without SA_RESTART that ran on the sleeping thread
// (its counter moved, and the signal interrupted ppoll) ends the receive with EINTR; with
// SA_RESTART only (no timeout) it keeps waiting.
func TestSignalInterruptsBlockedRecv(t *testing.T) {
	var ctr transport.SigCounters
	env := testEnv(t, func(p *Params) { p.Signals = func() *transport.SigCounters { return &ctr } })
	c, s := pair(t, env, env)
	switched(t, c, s)
	type res struct {
		n     int
		errno unix.Errno
	}
	tids := make(chan int, 1)
	out := make(chan res, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tids <- unix.Gettid()
		b, errno := s.recv(10, 0)
		out <- res{len(b), errno}
	}()
	tid := <-tids
	time.Sleep(30 * time.Millisecond)
	atomic.AddUint32(&ctr.All, 1) // an SA_RESTART handler ran
	_ = unix.Tgkill(unix.Getpid(), tid, unix.SIGURG)
	select {
	case r := <-out:
		t.Fatalf("restartable signal ended the receive: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
	atomic.AddUint32(&ctr.All, 1)
	atomic.AddUint32(&ctr.Interrupting, 1)
	_ = unix.Tgkill(unix.Getpid(), tid, unix.SIGURG)
	select {
	case r := <-out:
		if r.errno != unix.EINTR {
			t.Fatalf("receive ended with %+v, want EINTR", r)
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("signal did not interrupt the receive")
	}
}

// TestShutdownWakesBlockedSend: shutdown(SHUT_WR) from another thread ends a send blocked on a
// full ring with EPIPE (or the count sent), as the kernel's does.
func TestShutdownWakesBlockedSend(t *testing.T) {
	env := testEnv(t, func(p *Params) { p.RingBytes, p.MaxRingBytes = 16<<10, 16<<10 })
	c, s := pair(t, env, env)
	switched(t, c, s)
	out := make(chan unix.Errno, 1)
	go func() {
		_, errno := c.send(make([]byte, 100000), unix.MSG_NOSIGNAL)
		if errno == 0 {
			_, errno = c.send([]byte("x"), unix.MSG_NOSIGNAL)
		}
		out <- errno
	}()
	time.Sleep(30 * time.Millisecond)
	c.tr.Shutdown(c.fd, unix.SHUT_WR)
	_ = unix.Shutdown(c.fd, unix.SHUT_WR)
	select {
	case errno := <-out:
		if errno != unix.EPIPE {
			t.Fatalf("send after shutdown: %v", errno)
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("shutdown did not end the blocked send")
	}
	// The peer reads what fitted, then EOF.
	got := 0
	for {
		b, errno := s.recv(len(s.rbuf), 0)
		if errno != 0 {
			t.Fatalf("recv: %v", errno)
		}
		if len(b) == 0 {
			break
		}
		got += len(b)
	}
	if got != 16<<10 {
		t.Fatalf("peer read %d bytes, want the ring's %d", got, 16<<10)
	}
}

// TestSendfileThroughRing: sendfile after the switch reads the file at the offset and moves
// only what the ring took; the peer gets the file's bytes.
func TestSendfileThroughRing(t *testing.T) {
	env := testEnv(t, nil)
	c, s := pair(t, env, env)
	switched(t, c, s)
	data := stream(12, 300000)
	f, err := os.CreateTemp(t.TempDir(), "sendfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	off := cmem(t, 8)
	binary.NativeEndian.PutUint64(off, 1000)
	done := make(chan error, 1)
	go func() {
		n, errno := c.tr.Transfer(call(transport.OpSendfile, c.fd, f.Fd(), addr(off), 250000))
		if errno != 0 || n != 250000 {
			done <- fmt.Errorf("sendfile = %d, %v", n, errno)
			return
		}
		done <- nil
	}()
	got := s.recvAll(250000)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data[1000:251000]) {
		t.Fatalf("file bytes differ")
	}
	if v := binary.NativeEndian.Uint64(off); v != 251000 {
		t.Fatalf("offset = %d, want 251000", v)
	}
	if st := c.tr.Stats(); st.RingTx < 250000 {
		t.Fatalf("sendfile not through the ring: %+v", st)
	}
}

// TestDeadPeerWithUnreadWakeByte: a peer that dies (no close through the transport) with one of
// our wake bytes unread in its kernel socket makes its kernel reset the connection, where the
// kernel of a plain connection would have ended it with a FIN (nothing of ours was unread): the
// receive reports EOF, the first send is accepted as the kernel's first send to a closed peer
// is, and only the next one fails with EPIPE (it used to fail at once, with SIGPIPE).
func TestDeadPeerWithUnreadWakeByte(t *testing.T) {
	env := testEnv(t, nil)
	c, s := pair(t, env, env)
	switched(t, c, s)
	// A byte beyond K on the kernel connection is a wake byte: the peer dies before reading it.
	if _, err := unix.Write(c.fd, []byte{1}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	unix.Close(s.fd)
	s.closed = true // its transport never hears of it, as in a killed process
	time.Sleep(50 * time.Millisecond)
	if b, errno := c.recv(10, 0); len(b) != 0 || errno != 0 {
		t.Fatalf("recv after the peer died: %q %v, want EOF", b, errno)
	}
	if n, errno := c.send([]byte("x"), unix.MSG_NOSIGNAL); n != 1 || errno != 0 {
		t.Fatalf("first send to the dead peer: %d %v, want 1 as the kernel's", n, errno)
	}
	if _, errno := c.send([]byte("x"), unix.MSG_NOSIGNAL); errno != unix.EPIPE {
		t.Fatalf("second send: %v, want EPIPE", errno)
	}
}
