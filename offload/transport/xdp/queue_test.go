package xdp

import (
	"bytes"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/transporttest"
)

// TestQueueFull: a socket that does not read holds at most QueueLen datagrams in UMEM; the rest
// are dropped and counted; closing the socket with datagrams queued gives every frame back.
func TestQueueFull(t *testing.T) {
	inTopo(t, func(t *testing.T, tp *topo) {
		e := newEnv(t, Params{QueueLen: 4})
		a := newArena(t)
		local := netip.AddrPortFrom(tp.addrA, 7500)
		s := newTsock(t, e, local)
		b := kernelSocket(t, tp.nsB, netip.AddrPortFrom(tp.addrB, 7501))
		for i := range 20 {
			unix.Sendto(b, payloadOf("q", i), 0, sa4(local))
		}
		time.Sleep(20 * time.Millisecond)
		if !s.u.RingReady() {
			t.Fatalf("RingReady false with datagrams on the RX ring")
		}
		for i := range 2 {
			got, _, _, errno, _ := s.recvfrom(a, 2048, unix.MSG_DONTWAIT)
			if errno != 0 || !bytes.Equal(got, payloadOf("q", i)) {
				t.Fatalf("datagram %d: %q %v", i, got, errno)
			}
		}
		if c := s.u.Counts(); c.RxDrops != 16 || c.QueueDepth != 2 {
			t.Fatalf("counts %+v, want 16 drops and 2 queued", c)
		}
		if n, ok := s.u.NextSize(); !ok || n != len(payloadOf("q", 2)) {
			t.Fatalf("NextSize = %d %v", n, ok)
		}
		s.close()
		checkNoLeak(t, e)
	})
}

// TestConcurrentSleepers: two sockets, each with a thread blocked in receive (no spinning), get
// interleaved datagrams: whichever thread takes a frame from the RX ring queues it for the other
// socket and wakes its sleeper through the wake pipe. Every datagram reaches its socket, in order.
func TestConcurrentSleepers(t *testing.T) {
	inTopo(t, func(t *testing.T, tp *topo) {
		e := newEnv(t, Params{RxPoll: 0})
		l1, l2 := netip.AddrPortFrom(tp.addrA, 7601), netip.AddrPortFrom(tp.addrA, 7602)
		socks := []*tsock{newTsock(t, e, l1), newTsock(t, e, l2)}
		b := kernelSocket(t, tp.nsB, netip.AddrPortFrom(tp.addrB, 7600))
		const n = 300
		var wg sync.WaitGroup
		var taken [2]atomic.Int64 // datagrams each receiver took so far
		errs := make(chan string, 2)
		for k, s := range socks {
			tv := unix.NsecToTimeval(int64(2 * time.Second))
			unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
			s.u.OptionSet(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
			a := newArena(t)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range n {
					got, _, _, errno, _ := s.recvfrom(a, 2048, 0)
					if errno != 0 || !bytes.Equal(got, payloadOf(string(rune('a'+k)), i)) {
						errs <- string(got) + " " + errno.Error()
						return
					}
					taken[k].Add(1)
				}
			}()
		}
		time.Sleep(10 * time.Millisecond)
		for i := range n {
			unix.Sendto(b, payloadOf("a", i), 0, sa4(l1))
			unix.Sendto(b, payloadOf("b", i), 0, sa4(l2))
			if i%16 == 0 {
				time.Sleep(200 * time.Microsecond)
				// Never more than 64 ahead of a receiver: a socket's queue holds 128
				// frames, and a receiver slowed down (the race detector, a loaded
				// machine) would see drops, as from a full kernel receive buffer.
				for end := time.Now().Add(2 * time.Second); time.Now().Before(end) && (taken[0].Load() < int64(i-64) || taken[1].Load() < int64(i-64)); {
					time.Sleep(100 * time.Microsecond)
				}
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("receiver: %s (counts %+v; %+v)", err, socks[0].u.Counts(), socks[1].u.Counts())
		}
		for _, s := range socks {
			if c := s.u.Counts(); c.XDPRx != n || c.RxDrops != 0 {
				t.Fatalf("counts %+v", c)
			}
		}
		t.Logf("wake-ups: %d, %d", socks[0].u.Counts().Wakes, socks[1].u.Counts().Wakes)
		for _, s := range socks {
			s.close()
		}
		checkNoLeak(t, e)
	})
}

// TestEINTR: a signal handler that runs on the thread while a receive polls ends it as it ends
// a blocking kernel receive (the counters stand for shim/signal.c's): without SA_RESTART with
// EINTR; with SA_RESTART it waits on, unless the socket has a receive timeout.
func TestEINTR(t *testing.T) {
	inTopo(t, func(t *testing.T, tp *topo) {
		var sig transport.SigCounters
		e := newEnv(t, Params{RxPoll: -1, Signals: func() *transport.SigCounters { return &sig }})
		a := newArena(t)
		local := netip.AddrPortFrom(tp.addrA, 7700)
		s := newTsock(t, e, local)
		b := kernelSocket(t, tp.nsB, netip.AddrPortFrom(tp.addrB, 7701))
		// A handler that ran is a signal that arrived: it also interrupts the receive's sleep
		// (the receive sleeps at once on a crowded machine, wait.Crowded).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid := unix.Gettid()
		// later runs f after 30 ms, then kicks the thread with SIGURG every 20 ms until the
		// receive returns (stop): a kick that lands before the receive sleeps (a loaded
		// machine) would leave it asleep for good, as a signal that comes before a kernel
		// receive blocks does not interrupt it either.
		later := func(f func()) (stop func()) {
			done := make(chan struct{})
			go func() {
				time.Sleep(30 * time.Millisecond)
				f()
				for {
					_ = unix.Tgkill(unix.Getpid(), tid, unix.SIGURG)
					select {
					case <-done:
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}()
			return func() { close(done) }
		}
		stop := later(func() { atomic.AddUint32(&sig.Interrupting, 1); atomic.AddUint32(&sig.All, 1) })
		transporttest.EnterCall(&sig) // each receive is a new call into the engine
		_, _, _, errno, _ := s.recvfrom(a, 100, 0)
		stop()
		if errno != unix.EINTR {
			t.Fatalf("handler without SA_RESTART: %v, want EINTR", errno)
		}
		stop = later(func() {
			atomic.AddUint32(&sig.All, 1)
			time.Sleep(30 * time.Millisecond)
			unix.Sendto(b, []byte("after"), 0, sa4(local))
		})
		transporttest.EnterCall(&sig)
		got, _, _, errno, _ := s.recvfrom(a, 100, 0)
		stop()
		if errno != 0 || string(got) != "after" {
			t.Fatalf("handler with SA_RESTART: %q %v, want the datagram", got, errno)
		}
		tv := unix.NsecToTimeval(int64(2 * time.Second))
		unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		s.u.OptionSet(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
		stop = later(func() { atomic.AddUint32(&sig.All, 1) })
		transporttest.EnterCall(&sig)
		_, _, _, errno, _ = s.recvfrom(a, 100, 0)
		stop()
		if errno != unix.EINTR {
			t.Fatalf("handler with SA_RESTART and SO_RCVTIMEO: %v, want EINTR", errno)
		}
	})
}

// TestBeforeFork: after BeforeFork the socket's flows are no longer steered (its datagrams come
// from the kernel socket) and TakeQueued hands over what was queued, leaving no frame held.
func TestBeforeFork(t *testing.T) {
	inTopo(t, func(t *testing.T, tp *topo) {
		e := newEnv(t, Params{})
		a := newArena(t)
		local := netip.AddrPortFrom(tp.addrA, 7900)
		s := newTsock(t, e, local)
		peer := netip.AddrPortFrom(tp.addrB, 7901)
		b := kernelSocket(t, tp.nsB, peer)
		for i := range 3 {
			unix.Sendto(b, payloadOf("f", i), 0, sa4(local))
		}
		time.Sleep(20 * time.Millisecond)
		s.u.RingReady()
		e.BeforeFork()
		var got [][]byte
		if n := s.u.TakeQueued(func(p []byte, src netip.AddrPort, _ uint32) {
			if src != peer {
				t.Errorf("source %v, want %v", src, peer)
			}
			got = append(got, bytes.Clone(p))
		}); n != 3 {
			t.Fatalf("TakeQueued = %d, want 3", n)
		}
		for i, p := range got {
			if !bytes.Equal(p, payloadOf("f", i)) {
				t.Fatalf("datagram %d: %q", i, p)
			}
		}
		checkNoLeak(t, e)
		unix.Sendto(b, []byte("kernel"), 0, sa4(local))
		tv := unix.NsecToTimeval(int64(time.Second))
		unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		s.u.OptionSet(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
		if p, src, _, errno, viaOS := s.recvfrom(a, 100, 0); errno != 0 || string(p) != "kernel" || src != peer || !viaOS {
			t.Fatalf("after BeforeFork: %q from %v %v viaOS=%v, want through the kernel", p, src, errno, viaOS)
		}
	})
}
