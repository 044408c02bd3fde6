package xdp

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/xdp"
	"github.com/goxio/goxio/stats"
)

// readable polls fd for POLLIN for up to ms milliseconds.
func readable(t *testing.T, fd, ms int) bool {
	t.Helper()
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(p, ms)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		return n > 0
	}
}

// TestBell: the bell select, poll and epoll sleep on becomes readable when a frame arrives on
// an RX ring and stays readable while the datagram waits; Rang empties it once the queue is
// empty; while a thread polls the socket (Spin) a queued frame does not write to the wake pipe;
// Quiet empties it even with a datagram queued.
func TestBell(t *testing.T) {
	inTopo(t, func(t *testing.T, tp *topo) {
		e := newEnv(t, Params{})
		a := newArena(t)
		local := netip.AddrPortFrom(tp.addrA, 7700)
		s := newTsock(t, e, local)
		b := kernelSocket(t, tp.nsB, netip.AddrPortFrom(tp.addrB, 7701))
		bell := s.u.Bell()
		if bell < 0 {
			t.Fatalf("no bell")
		}
		if again := s.u.Bell(); again != bell {
			t.Fatalf("Bell changed: %d then %d", bell, again)
		}
		if readable(t, bell, 0) {
			t.Fatalf("bell readable before any traffic")
		}
		unix.Sendto(b, []byte("one"), 0, sa4(local))
		if !readable(t, bell, 1000) {
			t.Fatalf("bell not readable with a frame on the RX ring")
		}
		if !s.u.RingReady() {
			t.Fatalf("RingReady false after the bell rang")
		}
		s.u.Rang()
		if !readable(t, bell, 0) {
			t.Fatalf("bell emptied while the datagram waits")
		}
		if got, _, _, errno, _ := s.recvfrom(a, 100, unix.MSG_DONTWAIT); errno != 0 || string(got) != "one" {
			t.Fatalf("recv: %q %v", got, errno)
		}
		s.u.Rang()
		if readable(t, bell, 0) {
			t.Fatalf("bell readable after Rang with the queue empty")
		}

		// A poller spins: the frame it queues does not write to the wake pipe.
		s.u.Spin(true)
		unix.Sendto(b, []byte("two"), 0, sa4(local))
		if !readable(t, bell, 1000) {
			t.Fatalf("bell not readable with a frame on the RX ring (spinning)")
		}
		if !s.u.RingReady() {
			t.Fatalf("RingReady false (spinning)")
		}
		if readable(t, bell, 0) {
			t.Fatalf("bell readable while a thread spins: the queued frame wrote to the pipe")
		}
		s.u.Spin(false)
		if got, _, _, errno, _ := s.recvfrom(a, 100, unix.MSG_DONTWAIT); errno != 0 || string(got) != "two" {
			t.Fatalf("recv: %q %v", got, errno)
		}

		// Quiet: an edge was reported, the pipe is emptied although the datagram waits.
		unix.Sendto(b, []byte("three"), 0, sa4(local))
		if !readable(t, bell, 1000) || !s.u.RingReady() {
			t.Fatalf("third datagram not seen")
		}
		s.u.Quiet(true) // no other sleeper: emptied though it is news
		if readable(t, bell, 0) {
			t.Fatalf("bell readable after Quiet")
		}
		before := s.u.Arrivals(-1)
		unix.Sendto(b, []byte("four"), 0, sa4(local))
		if !readable(t, bell, 1000) || !s.u.RingReady() || s.u.Arrivals(-1) != before+1 {
			t.Fatalf("fourth datagram: no new edge (arrivals %d, was %d)", s.u.Arrivals(-1), before)
		}
		if !readable(t, bell, 0) {
			t.Fatalf("bell not readable with the fourth datagram queued")
		}
		if c := s.u.Counts(); c.Wakes != 3 {
			t.Errorf("wake pipe writes = %d, want 3 (one, three, four; not two: a thread was spinning)", c.Wakes)
		}
		s.close()
		checkNoLeak(t, e)
	})
}

// TestLeaveGroup: leaving a group without a source drops every membership of the group, source
// filters included, as IP_DROP_MEMBERSHIP does in the kernel.
func TestLeaveGroup(t *testing.T) {
	inTopo(t, func(t *testing.T, tp *topo) {
		e := newEnv(t, Params{})
		s := newTsock(t, e, netip.AddrPortFrom(netip.IPv4Unspecified(), 7710))
		g := netip.MustParseAddr("239.7.7.10")
		s.u.Join(s.fd, g, netip.Addr{})
		s.u.Join(s.fd, g, tp.addrB)
		s.u.Join(s.fd, netip.MustParseAddr("239.7.7.11"), netip.Addr{})
		s.u.Leave(g, netip.Addr{})
		s.u.mu.Lock()
		joins := append([]join(nil), s.u.joins...)
		s.u.mu.Unlock()
		if len(joins) != 1 || joins[0].group != netip.MustParseAddr("239.7.7.11") {
			t.Fatalf("joins after leaving %v: %+v", g, joins)
		}
		b := s.u.bind.Load()
		if b == nil || len(b.joins) != 1 {
			t.Fatalf("published binding %+v", b)
		}
	})
}

// TestGiveUpHandOver: HandOver takes what waits for the socket on the RX ring and in its queue,
// with sockaddr_in sources; GiveUp records its reason and stops the steering; Bell is -1 after.
func TestGiveUpHandOver(t *testing.T) {
	inTopo(t, func(t *testing.T, tp *topo) {
		e := newEnv(t, Params{})
		local := netip.AddrPortFrom(tp.addrA, 7720)
		s := newTsock(t, e, local)
		peer := netip.AddrPortFrom(tp.addrB, 7721)
		b := kernelSocket(t, tp.nsB, peer)
		for i := range 3 {
			unix.Sendto(b, payloadOf("h", i), 0, sa4(local))
		}
		time.Sleep(20 * time.Millisecond)
		if r := s.u.GaveUp(); r != transport.ReasonNone {
			t.Fatalf("GaveUp = %v before GiveUp", r)
		}
		recs := s.u.HandOver()
		if len(recs) != 3 {
			t.Fatalf("HandOver: %d records, want 3", len(recs))
		}
		var want [unix.SizeofSockaddrInet6]byte
		n := sysc.PutSockaddr(want[:], unix.AF_INET, peer)
		for i, r := range recs {
			if !bytes.Equal(r[0], want[:n]) || !bytes.Equal(r[1], payloadOf("h", i)) {
				t.Fatalf("record %d: %x %q", i, r[0], r[1])
			}
		}
		s.u.GiveUp(transport.ReasonForkedChild)
		if r := s.u.GaveUp(); r != transport.ReasonForkedChild {
			t.Fatalf("GaveUp = %v", r)
		}
		if bell := s.u.Bell(); bell != -1 {
			t.Fatalf("Bell = %d after GiveUp", bell)
		}
		unix.Sendto(b, []byte("kernel"), 0, sa4(local))
		a := newArena(t)
		got, _, _, errno, viaOS := s.recvfrom(a, 100, 0)
		if errno != 0 || string(got) != "kernel" || !viaOS {
			t.Fatalf("after GiveUp: %q %v viaOS=%v, want through the kernel", got, errno, viaOS)
		}
		checkNoLeak(t, e)
	})
}

// TestOnFallback: a socket bound to an address no offloaded interface has tells OnFallback once,
// with a reason that maps to "no faster path"; one on the veth does not.
func TestOnFallback(t *testing.T) {
	inTopo(t, func(t *testing.T, tp *topo) {
		e := newEnv(t, Params{})
		var got []error
		open := func(addr netip.AddrPort) *tsock {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			s := &tsock{fd: fd, u: e.NewUDP(nonblocking(false))}
			s.u.OnFallback = func(err error) { got = append(got, err) }
			t.Cleanup(s.close)
			if err := unix.Bind(fd, sa4(addr)); err != nil {
				t.Fatal(err)
			}
			s.u.Bound(fd)
			return s
		}
		open(netip.AddrPortFrom(tp.addrA, 7730))
		if len(got) != 0 {
			t.Fatalf("OnFallback for a socket on the veth: %v", got)
		}
		lo := open(netip.MustParseAddrPort("127.0.0.1:7731"))
		lo.u.Join(lo.fd, netip.MustParseAddr("239.7.7.31"), netip.Addr{}) // steered: no fallback now
		lo.u.Leave(netip.MustParseAddr("239.7.7.31"), netip.Addr{})
		if len(got) != 2 {
			t.Fatalf("OnFallback calls: %v, want 2 (bind, then the leave that lost the group)", got)
		}
		if r := FallbackReason(got[0]); r != transport.ReasonNoFasterPath {
			t.Fatalf("FallbackReason(%v) = %v", got[0], r)
		}
	})
}

// TestFallbackReason maps the interface errors to reasons.
func TestFallbackReason(t *testing.T) {
	for _, c := range []struct {
		err  error
		want transport.Reason
	}{
		{nil, transport.ReasonNone},
		{fmt.Errorf("offload x: %w", &xdp.BusyError{Ifname: "x"}), transport.ReasonInterfaceBusy},
		{fmt.Errorf("offload x: %w cap_bpf: %w", ErrNoCapabilities, ErrNotOffloaded), transport.ReasonNoCapabilities},
		{fmt.Errorf("attach: %w", unix.EPERM), transport.ReasonNoCapabilities},
		{fmt.Errorf("attach: %w", xdp.ErrNotSupported), transport.ReasonNoXDP},
		{fmt.Errorf("offload d0: %w", noXDP(fmt.Errorf("native mode: %w", unix.EOPNOTSUPP))), transport.ReasonNoXDP},
		{noXDP(fmt.Errorf("attach: %w", unix.EPERM)), transport.ReasonNoCapabilities},
		{fmt.Errorf("offload lo: not Ethernet: %w", ErrNotOffloaded), transport.ReasonNoFasterPath},
		{errors.New("other"), transport.ReasonNoFasterPath},
	} {
		if r := FallbackReason(c.err); r != c.want {
			t.Errorf("FallbackReason(%v) = %v, want %v", c.err, r, c.want)
		}
	}
}

// TestRingStats: each AF_XDP socket has a ring in the statistics segment with the frames it
// carried, refreshed by PublishStats, and frees it at Close.
func TestRingStats(t *testing.T) {
	inTopo(t, func(t *testing.T, tp *topo) {
		dir := t.TempDir()
		w, err := stats.Create(dir, 16, stats.ProcessInfo{Cmdline: os.Args})
		if err != nil {
			t.Fatalf("stats: %v", err)
		}
		defer w.Close()
		e, err := NewEnv(Params{Stats: w}, nil)
		if err != nil {
			t.Fatal(err)
		}
		a := newArena(t)
		local := netip.AddrPortFrom(tp.addrA, 7740)
		s := newTsock(t, e, local)
		b := kernelSocket(t, tp.nsB, netip.AddrPortFrom(tp.addrB, 7741))
		for i := range 5 {
			unix.Sendto(b, payloadOf("s", i), 0, sa4(local))
			if got, _, _, errno, _ := s.recvfrom(a, 100, 0); errno != 0 || !bytes.Equal(got, payloadOf("s", i)) {
				t.Fatalf("recv %d: %q %v", i, got, errno)
			}
		}
		e.PublishStats()
		seg, err := stats.OpenSegment(w.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer seg.Close()
		snap, err := seg.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		var rx uint64
		for _, r := range snap.Rings {
			if r.Transport != stats.TransportXDP || len(r.Name) < 4 || r.Name[:4] != "xdp:" {
				t.Errorf("ring %+v", r)
			}
			rx += r.RxPackets
		}
		if len(snap.Rings) == 0 || rx != 5 {
			t.Fatalf("rings %+v: %d frames received, want 5", snap.Rings, rx)
		}
		s.close()
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if snap, err = seg.Snapshot(); err != nil || len(snap.Rings) != 0 {
			t.Fatalf("rings after Close: %+v %v", snap, err)
		}
	})
}
