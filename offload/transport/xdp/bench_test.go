package xdp

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkVeth measures 64-byte ping-pong and one-way throughput across the veth pair: a
// kernel UDP socket in namespace A against the transport's socket in A, the peer in B a kernel
// socket either way (an echo server for ping-pong, a counting sink for throughput), in the same
// run. Run it with: go test -run '^$' -bench BenchmarkVeth -benchtime 20000x ./offload/transport/xdp
func BenchmarkVeth(b *testing.B) {
	tp := childTopo()
	if tp == nil {
		tp = newTopo(b)
		bt := "1s"
		if f := flag.Lookup("test.benchtime"); f != nil {
			bt = f.Value.String()
		}
		cmd := exec.Command("ip", "netns", "exec", tp.nsA, os.Args[0], "-test.run", "^$", "-test.bench", "^BenchmarkVeth$", "-test.benchtime", bt, "-test.benchmem=false")
		cmd.Env = tp.environ()
		out, err := cmd.CombinedOutput()
		fmt.Printf("child in %s:\n%s", tp.nsA, out)
		if err != nil {
			b.Fatalf("child: %v", err)
		}
		b.SkipNow() // the figures are the child's
	}
	payload := make([]byte, 64)
	b.Run("pingpong/kernel", func(b *testing.B) {
		echo := startEcho(b, tp, 7800)
		defer echo()
		fd := kernelSocket(b, "", netip.AddrPortFrom(tp.addrA, 0))
		dst := sa4(netip.AddrPortFrom(tp.addrB, 7800))
		buf := make([]byte, 2048)
		for range 100 {
			unix.Sendto(fd, payload, 0, dst)
			unix.Recvfrom(fd, buf, 0)
		}
		b.ResetTimer()
		for range b.N {
			unix.Sendto(fd, payload, 0, dst)
			if _, _, err := unix.Recvfrom(fd, buf, 0); err != nil {
				b.Fatalf("recv: %v", err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2/1e3, "us/half-rtt")
	})
	for _, v := range []struct {
		name string
		poll int
		port uint16
	}{{"pingpong/xdp-spin", 1_000_000, 7801}, {"pingpong/xdp-sleep", 0, 7802}} {
		b.Run(v.name, func(b *testing.B) {
			echo := startEcho(b, tp, v.port)
			defer echo()
			e := newEnv(b, Params{RxPoll: v.poll, RxUDPPollOSRatio: 100})
			a := newArena(b)
			s := newTsock(b, e, netip.AddrPortFrom(tp.addrA, v.port+10))
			tv := unix.NsecToTimeval(int64(time.Second))
			unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
			s.u.OptionSet(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
			dst := netip.AddrPortFrom(tp.addrB, v.port)
			warm(b, s, a, dst)
			c0 := s.u.Counts()
			b.ResetTimer()
			for range b.N {
				s.sendto(a, payload, dst, 0)
				if _, _, _, errno, _ := s.recvfrom(a, 2048, 0); errno != 0 {
					b.Fatalf("recv: %v", errno)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2/1e3, "us/half-rtt")
			c := s.u.Counts()
			b.ReportMetric(float64(c.XDPTx-c0.XDPTx)/float64(b.N), "ring-tx/op")
			b.ReportMetric(float64(c.XDPRx-c0.XDPRx)/float64(b.N), "ring-rx/op")
		})
	}
	b.Run("throughput/kernel", func(b *testing.B) {
		fd := kernelSocket(b, "", netip.AddrPortFrom(tp.addrA, 0))
		dst := sa4(netip.AddrPortFrom(tp.addrB, 7820))
		got, stop := startSink(b, tp, 7820)
		b.ResetTimer()
		for range b.N {
			unix.Sendto(fd, payload, 0, dst)
		}
		sinkReport(b, got, stop)
	})
	b.Run("throughput/xdp", func(b *testing.B) {
		e := newEnv(b, Params{})
		a := newArena(b)
		s := newTsock(b, e, netip.AddrPortFrom(tp.addrA, 7831))
		dst := netip.AddrPortFrom(tp.addrB, 7821)
		got, stop := startSink(b, tp, 7821)
		warm(b, s, a, dst)
		b.ResetTimer()
		for range b.N {
			s.sendto(a, payload, dst, 0)
		}
		sinkReport(b, got, stop)
		c := s.u.Counts()
		b.ReportMetric(float64(c.TxDrops), "tx-drops")
	})
}

// warm sends until the neighbour is resolved and a datagram went through the ring.
func warm(b *testing.B, s *tsock, a *arena, dst netip.AddrPort) {
	for i := 0; i < 1000 && s.u.Counts().XDPTx == 0; i++ {
		s.sendto(a, []byte("warm"), dst, 0)
		time.Sleep(time.Millisecond)
	}
	if s.u.Counts().XDPTx == 0 {
		b.Fatalf("no send through the ring: %+v", s.u.Counts())
	}
	time.Sleep(20 * time.Millisecond)
	for s.u.Counts().QueueDepth > 0 || s.u.RingReady() {
		s.recvfrom(a, 2048, unix.MSG_DONTWAIT)
	}
}

// startEcho runs a kernel echo server on port in namespace B until the returned function is
// called.
func startEcho(b *testing.B, tp *topo, port uint16) func() {
	fd := kernelSocket(b, tp.nsB, netip.AddrPortFrom(tp.addrB, port))
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		for !stop.Load() {
			n, from, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				continue
			}
			unix.Sendto(fd, buf[:n], 0, from)
		}
	}()
	return func() { stop.Store(true); wg.Wait() }
}

// startSink counts the datagrams arriving at port in namespace B.
func startSink(b *testing.B, tp *topo, port uint16) (*atomic.Int64, func()) {
	fd := kernelSocket(b, tp.nsB, netip.AddrPortFrom(tp.addrB, port))
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20)
	var got atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		for !stop.Load() {
			if _, _, err := unix.Recvfrom(fd, buf, 0); err == nil {
				got.Add(1)
			}
		}
	}()
	return &got, func() { stop.Store(true); wg.Wait() }
}

// sinkReport reports the send rate and the share the sink received (it drains for up to 1 s).
func sinkReport(b *testing.B, got *atomic.Int64, stop func()) {
	b.StopTimer()
	rate := float64(b.N) / b.Elapsed().Seconds()
	for deadline := time.Now().Add(time.Second); got.Load() < int64(b.N) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	b.ReportMetric(rate, "sent-msg/s")
	b.ReportMetric(float64(got.Load())/float64(b.N), "received/sent")
}
