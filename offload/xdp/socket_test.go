package xdp

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// attachOpen attaches the program to side A of tp (in its namespace) and opens and
// registers a copy-mode socket on each of queues.
func attachOpen(t *testing.T, tp *topo, opts Options, cfg Config, queues ...int) (*Program, []*Socket) {
	t.Helper()
	var p *Program
	var socks []*Socket
	inNetns(t, tp.nsA, func() {
		var err error
		p, err = Attach(nlConn(t), tp.idxA, opts)
		if err != nil {
			t.Fatalf("Attach: %v", err)
		}
		t.Cleanup(func() { p.Close() })
		for _, q := range queues {
			s, err := Open(tp.idxA, q, cfg)
			if err != nil {
				t.Fatalf("Open queue %d: %v", q, err)
			}
			t.Cleanup(func() { s.Close() })
			if err := p.Register(s); err != nil {
				t.Fatalf("Register queue %d: %v", q, err)
			}
			socks = append(socks, s)
		}
	})
	return p, socks
}

// collect receives from socks until want frames arrived or limit passes, checks each
// frame's payload with check, releases them and returns the count per socket.
func collect(t *testing.T, socks []*Socket, want int, limit time.Duration, check func([]byte)) []int {
	t.Helper()
	counts := make([]int, len(socks))
	total := 0
	frames := make([]Frame, 64)
	deadline := time.Now().Add(limit)
	for total < want && time.Now().Before(deadline) {
		got := 0
		for i, s := range socks {
			n := s.Receive(frames)
			for _, f := range frames[:n] {
				check(f.Data)
			}
			if r := s.Release(frames[:n]); r != n {
				t.Fatalf("Release took %d of %d frames", r, n)
			}
			counts[i] += n
			got += n
		}
		total += got
		if got == 0 && len(socks) == 1 {
			socks[0].Wait(10)
		} else if got == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	return counts
}

// TestReceiveSteered sends datagrams from a kernel socket in the peer namespace: those
// of the steered flow arrive in the AF_XDP socket with their exact payloads and
// count, the others reach the kernel socket, and no frame leaks.
func TestReceiveSteered(t *testing.T) {
	tp := newTopo(t, 1)
	p, socks := attachOpen(t, tp, Options{}, Config{RxFrames: 512, TxFrames: 64}, 0)
	s := socks[0]
	t.Logf("attach mode %s, zero-copy %v, need_wakeup %v", p.Mode(), s.ZeroCopy(), s.NeedWakeup())
	if p.Mode() != ModeNative {
		t.Errorf("veth: mode %s, want native", p.Mode())
	}
	if !s.NeedWakeup() {
		t.Errorf("socket bound without need_wakeup")
	}
	steered := netip.AddrPortFrom(tp.addrA, 7000)
	other := netip.AddrPortFrom(tp.addrA, 7001)
	if err := p.AddFlow(steered); err != nil {
		t.Fatal(err)
	}
	kSteered := udpSocket(t, tp.nsA, steered) // holds the port, must see nothing
	kOther := udpSocket(t, tp.nsA, other)
	sender := udpSocket(t, tp.nsB, netip.AddrPortFrom(tp.addrB, 6000))

	const rounds, batch = 40, 50 // 2000 datagrams through a 512-frame pool
	seq := 0
	var bad []string
	for r := range rounds {
		for range batch {
			sendUDP(t, sender, steered, fmt.Appendf(nil, "steered %06d %s", seq, bytes.Repeat([]byte{'x'}, seq%900)))
			seq++
		}
		first := r * batch
		next := first
		counts := collect(t, socks, batch, 5*time.Second, func(f []byte) {
			want := fmt.Appendf(nil, "steered %06d %s", next, bytes.Repeat([]byte{'x'}, next%900))
			if got := udpPayload(f); !bytes.Equal(got, want) && len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("frame %d: payload %q, want %q", next, got, want))
			}
			next++
		})
		if counts[0] != batch {
			t.Fatalf("round %d: AF_XDP socket received %d of %d datagrams", r, counts[0], batch)
		}
		checkAccounting(t, s)
	}
	for _, b := range bad {
		t.Error(b)
	}
	a := checkAccounting(t, s)
	if a.RxKernel != a.RxFrames || a.TxFree != a.TxFrames {
		t.Errorf("frames leaked: %+v", a)
	}
	// Nothing more arrives on either side for the steered flow.
	if extra := collect(t, socks, 1, 100*time.Millisecond, func([]byte) {}); extra[0] != 0 {
		t.Errorf("%d datagrams too many on the AF_XDP socket", extra[0])
	}
	if got := recvUDP(kSteered, 1, 100*time.Millisecond); len(got) != 0 {
		t.Errorf("kernel socket of the steered flow received %d datagrams", len(got))
	}
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	total := uint64(rounds * batch)
	if st.RxPackets != total || st.RxInvalid != 0 || st.KernelRxDropped != 0 || st.KernelRxRingFull != 0 {
		t.Errorf("stats %+v, want %d packets and no drops", st, total)
	}
	if hits, err := p.FlowHits(steered); err != nil || hits != total {
		t.Errorf("FlowHits = %d, %v; want %d", hits, err, total)
	}

	// Another port of the same address goes to the kernel.
	for i := range 20 {
		sendUDP(t, sender, other, fmt.Appendf(nil, "kernel %d", i))
	}
	got := recvUDP(kOther, 20, 3*time.Second)
	if len(got) != 20 {
		t.Fatalf("kernel socket received %d of 20 datagrams of the unsteered port", len(got))
	}
	for i, g := range got {
		if want := fmt.Sprintf("kernel %d", i); string(g) != want {
			t.Errorf("kernel datagram %d = %q, want %q", i, g, want)
		}
	}
	if st2, _ := s.Stats(); st2.RxPackets != total {
		t.Errorf("AF_XDP socket received %d datagrams of the unsteered port", st2.RxPackets-total)
	}

	// A steered flow whose queue has no socket goes to the kernel too; removing the
	// flow does the same.
	if err := p.Unregister(0); err != nil {
		t.Fatal(err)
	}
	sendUDP(t, sender, steered, []byte("no socket"))
	if got := recvUDP(kSteered, 1, 3*time.Second); len(got) != 1 || string(got[0]) != "no socket" {
		t.Errorf("with no socket registered the kernel got %q, want [no socket]", got)
	}
	if err := p.Register(s); err != nil {
		t.Fatal(err)
	}
	if err := p.RemoveFlow(steered); err != nil {
		t.Fatal(err)
	}
	sendUDP(t, sender, steered, []byte("removed"))
	if got := recvUDP(kSteered, 1, 3*time.Second); len(got) != 1 || string(got[0]) != "removed" {
		t.Errorf("after RemoveFlow the kernel got %q, want [removed]", got)
	}
	if st3, _ := s.Stats(); st3.RxPackets != total {
		t.Errorf("AF_XDP socket received %d datagrams it should not have", st3.RxPackets-total)
	}
}

// TestQueueOwnership checks that a queue has one socket at a time (the second Open
// fails with EBUSY) and that a queue closed just before can be opened again at once
// (Open waits out the kernel's deferred release).
func TestQueueOwnership(t *testing.T) {
	tp := newTopo(t, 1)
	inNetns(t, tp.nsA, func() {
		cfg := Config{RxFrames: 32, TxFrames: 32}
		s, err := Open(tp.idxA, 0, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Open(tp.idxA, 0, cfg); !errors.Is(err, unix.EBUSY) {
			t.Errorf("second socket on queue 0: %v, want EBUSY", err)
		}
		if _, err := Open(tp.idxA, 1, cfg); err == nil {
			t.Errorf("socket on queue 1 of a 1-queue interface succeeded")
		}
		for i := range 5 {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(tp.idxA, 0, cfg); err != nil {
				t.Fatalf("reopen %d right after Close: %v", i, err)
			}
		}
		s.Close()
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
}

// TestReceiveMulticast sends to two multicast groups from the peer namespace: the group
// in the map (on its port, and another group on any port) arrives in the AF_XDP
// socket; a group that is not in the map does not.
func TestReceiveMulticast(t *testing.T) {
	tp := newTopo(t, 1)
	p, socks := attachOpen(t, tp, Options{}, Config{RxFrames: 128, TxFrames: 16}, 0)
	run(t, "ip", "-n", tp.nsB, "route", "add", "224.0.0.0/4", "dev", tp.ifB)
	groupPort := netip.MustParseAddrPort("239.7.7.7:7700")
	anyPort := netip.MustParseAddr("239.7.7.8")
	other := netip.MustParseAddrPort("239.7.7.9:7700")
	if err := p.AddGroup(groupPort.Addr(), groupPort.Port()); err != nil {
		t.Fatal(err)
	}
	if err := p.AddGroup(anyPort, 0); err != nil {
		t.Fatal(err)
	}
	sender := udpSocket(t, tp.nsB, netip.AddrPortFrom(tp.addrB, 7701))
	dsts := []netip.AddrPort{groupPort, netip.AddrPortFrom(anyPort, 1234), netip.AddrPortFrom(anyPort, 4321), other, netip.AddrPortFrom(groupPort.Addr(), 7701)}
	for i, d := range dsts {
		sendUDP(t, sender, d, fmt.Appendf(nil, "mc %d", i))
	}
	var got []string
	collect(t, socks, 3, 3*time.Second, func(f []byte) { got = append(got, string(udpPayload(f))) })
	collect(t, socks, 1, 100*time.Millisecond, func(f []byte) { got = append(got, string(udpPayload(f))) })
	if want := []string{"mc 0", "mc 1", "mc 2"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("AF_XDP socket received %q, want %q", got, want)
	}
	if hits, err := p.GroupHits(anyPort, 0); err != nil || hits != 2 {
		t.Errorf("GroupHits(any port) = %d, %v; want 2", hits, err)
	}
	checkAccounting(t, socks[0])
}
