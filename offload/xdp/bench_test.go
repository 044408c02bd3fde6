package xdp

import (
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkVethRx measures, in one run, how many 64-byte UDP datagrams per second a
// kernel sender in the peer namespace gets through the veth into (a) the AF_XDP socket
// (steered flow, copy mode) and (b) a kernel UDP socket read with recvfrom (unsteered
// port). Each phase sends for one second. Run it alone:
//
//	go test -run '^$' -bench VethRx -benchtime 1x ./offload/xdp
func BenchmarkVethRx(b *testing.B) {
	tp := newTopo(b, 1)
	var p *Program
	var s *Socket
	inNetns(b, tp.nsA, func() {
		var err error
		if p, err = Attach(nlConn(b), tp.idxA, Options{}); err != nil {
			b.Fatal(err)
		}
		if s, err = Open(tp.idxA, 0, Config{RxFrames: 4096, TxFrames: 64}); err != nil {
			b.Fatal(err)
		}
		if err := p.Register(s); err != nil {
			b.Fatal(err)
		}
	})
	defer p.Close()
	defer s.Close()
	steered := netip.AddrPortFrom(tp.addrA, 9000)
	plain := netip.AddrPortFrom(tp.addrA, 9001)
	if err := p.AddFlow(steered); err != nil {
		b.Fatal(err)
	}
	kernel := udpSocket(b, tp.nsA, plain)
	sender := udpSocket(b, tp.nsB, netip.AddrPortFrom(tp.addrB, 9002))
	payload := make([]byte, 64)
	const phase = time.Second

	// blast sends to dst for the phase's duration and returns how many it sent.
	blast := func(dst netip.AddrPort) int {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		sa := &unix.SockaddrInet4{Addr: dst.Addr().As4(), Port: int(dst.Port())}
		n := 0
		end := time.Now().Add(phase)
		for n%256 != 0 || time.Now().Before(end) {
			if unix.Sendto(sender, payload, 0, sa) == nil {
				n++
			}
		}
		return n
	}
	for range b.N {
		// AF_XDP: a receiver polls the rings while the sender blasts.
		var stop atomic.Bool
		var got int
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			frames := make([]Frame, 64)
			idle := 0
			for idle < 200 {
				n := s.Receive(frames)
				s.Release(frames[:n])
				got += n
				if n == 0 {
					if stop.Load() {
						idle++
					}
					s.Wait(1)
				}
			}
		}()
		start := time.Now()
		sentX := blast(steered)
		elapsedX := time.Since(start)
		stop.Store(true)
		wg.Wait()

		// Kernel socket: a receiver reads with recvfrom while the sender blasts.
		var gotK int
		wg.Add(1)
		stop.Store(false)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			buf := make([]byte, 2048)
			tv := unix.NsecToTimeval(int64(20 * time.Millisecond))
			unix.SetsockoptTimeval(kernel, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
			for {
				if _, _, err := unix.Recvfrom(kernel, buf, 0); err == nil {
					gotK++
				} else if stop.Load() {
					return
				}
			}
		}()
		start = time.Now()
		sentK := blast(plain)
		elapsedK := time.Since(start)
		stop.Store(true)
		wg.Wait()

		st := mustStats(b, s)
		b.ReportMetric(float64(got)/elapsedX.Seconds(), "xsk-rx/s")
		b.ReportMetric(float64(sentX)/elapsedX.Seconds(), "xsk-sent/s")
		b.ReportMetric(float64(gotK)/elapsedK.Seconds(), "kernel-rx/s")
		b.ReportMetric(float64(sentK)/elapsedK.Seconds(), "kernel-sent/s")
		b.Logf("AF_XDP (copy mode, %s attach): sent %d, received %d (ring full %d, fill empty %d, dropped %d); kernel socket: sent %d, received %d",
			p.Mode(), sentX, got, st.KernelRxRingFull, st.KernelRxFillRingEmpty, st.KernelRxDropped, sentK, gotK)
		checkAccounting(b, s)
	}
}

// BenchmarkVethTx measures, in one run, how many 64-byte UDP datagrams per second
// leave (a) the AF_XDP socket (copy mode, batches of 64 hand-built frames) and (b) a
// kernel UDP socket with sendto, and how many a kernel socket in the peer namespace
// receives. Each phase sends for one second.
func BenchmarkVethTx(b *testing.B) {
	tp := newTopo(b, 1)
	var s *Socket
	inNetns(b, tp.nsA, func() {
		var err error
		if s, err = Open(tp.idxA, 0, Config{RxFrames: 64, TxFrames: 2048}); err != nil {
			b.Fatal(err)
		}
	})
	defer s.Close()
	dst := netip.AddrPortFrom(tp.addrB, 9100)
	src := netip.AddrPortFrom(tp.addrA, 9101)
	recv := udpSocket(b, tp.nsB, dst)
	ksend := udpSocket(b, tp.nsA, netip.AddrPortFrom(tp.addrA, 9102))
	frame := udpFrame(frameSpec{dstMAC: tp.macB, srcMAC: tp.macA, src: src, dst: dst, payload: make([]byte, 64)})
	const phase = time.Second

	// count receives in the peer until stop is set and the socket is idle.
	count := func(stop *atomic.Bool, got *int, wg *sync.WaitGroup) {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		buf := make([]byte, 2048)
		tv := unix.NsecToTimeval(int64(20 * time.Millisecond))
		unix.SetsockoptTimeval(recv, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		for {
			if _, _, err := unix.Recvfrom(recv, buf, 0); err == nil {
				*got++
			} else if stop.Load() {
				return
			}
		}
	}
	for range b.N {
		var stop atomic.Bool
		var wg sync.WaitGroup
		var gotX, gotK int
		wg.Add(1)
		go count(&stop, &gotX, &wg)
		runtime.LockOSThread()
		frames := make([]Frame, 64)
		sentX := 0
		start := time.Now()
		for time.Since(start) < phase {
			n := s.Alloc(frames)
			for i := range frames[:n] {
				frames[i].Data = frames[i].Data[:copy(frames[i].Data, frame)]
			}
			sent, err := s.Transmit(frames[:n])
			if err != nil {
				b.Fatal(err)
			}
			s.Free(frames[sent:n])
			sentX += sent
		}
		elapsedX := time.Since(start)
		runtime.UnlockOSThread()
		stop.Store(true)
		wg.Wait()

		stop.Store(false)
		wg.Add(1)
		go count(&stop, &gotK, &wg)
		runtime.LockOSThread()
		sa := &unix.SockaddrInet4{Addr: dst.Addr().As4(), Port: int(dst.Port())}
		payload := make([]byte, 64)
		sentK := 0
		start = time.Now()
		for time.Since(start) < phase {
			for range 64 {
				if unix.Sendto(ksend, payload, 0, sa) == nil {
					sentK++
				}
			}
		}
		elapsedK := time.Since(start)
		runtime.UnlockOSThread()
		stop.Store(true)
		wg.Wait()

		st := mustStats(b, s)
		b.ReportMetric(float64(sentX)/elapsedX.Seconds(), "xsk-sent/s")
		b.ReportMetric(float64(gotX)/elapsedX.Seconds(), "xsk-peer-rx/s")
		b.ReportMetric(float64(sentK)/elapsedK.Seconds(), "kernel-sent/s")
		b.ReportMetric(float64(gotK)/elapsedK.Seconds(), "kernel-peer-rx/s")
		b.Logf("AF_XDP (copy mode): posted %d, completed %d, peer received %d, %d sendto kicks; kernel sendto: sent %d, peer received %d",
			sentX, st.TxCompleted, gotX, st.TxWakeups, sentK, gotK)
	}
}
