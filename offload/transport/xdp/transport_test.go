package xdp

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/xdp"
	"github.com/goxio/goxio/offload/xdp/packet"
)

// kernelRecv reads one datagram from a kernel socket (its receive timeout bounds the wait).
func kernelRecv(t testing.TB, fd int) ([]byte, netip.AddrPort) {
	t.Helper()
	buf := make([]byte, 2048)
	for range 10 {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatalf("kernel recvfrom: %v", err)
		}
		return buf[:n], addrOf(from)
	}
	t.Fatalf("kernel recvfrom: interrupted")
	return nil, netip.AddrPort{}
}

func payloadOf(tag string, i int) []byte {
	return fmt.Appendf(nil, "%s-%05d-%s", tag, i, bytes.Repeat([]byte{byte(i)}, i%97))
}

// TestUnicastRoundTrip: an unbound transport socket sends to a kernel socket across the veth.
// The first datagram goes through the kernel (no neighbour yet, the kernel resolves it), later
// ones through the TX ring once ARP resolved; the kernel peer answers every source it saw and
// the answers come back through the RX ring. Payloads and counts are exact, no frame is held.
func TestUnicastRoundTrip(t *testing.T) {
	inTopo(t, func(t *testing.T, tp *topo) {
		e := newEnv(t, Params{RxPoll: 100, RxUDPPollOSRatio: 10})
		a := newArena(t)
		s := newTsock(t, e, netip.AddrPort{})
		tv := unix.NsecToTimeval(int64(time.Second))
		unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		s.u.OptionSet(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
		peer := netip.AddrPortFrom(tp.addrB, 7000)
		b := kernelSocket(t, tp.nsB, peer)

		if n, errno, viaOS := s.sendto(a, payloadOf("u", 0), peer, 0); n != len(payloadOf("u", 0)) || errno != 0 || !viaOS {
			t.Fatalf("first send: %d %v viaOS=%v, want through the kernel", n, errno, viaOS)
		}
		if c := s.u.Counts(); c.OSTxWhy[WhyUnresolved] != 1 {
			t.Fatalf("first send: %+v, want one kernel send for an unresolved neighbour", c)
		}
		local := s.local()
		if local.Port() == 0 {
			t.Fatalf("socket not bound by its first send")
		}
		got, src := kernelRecv(t, b)
		if !bytes.Equal(got, payloadOf("u", 0)) || src != netip.AddrPortFrom(tp.addrA, local.Port()) {
			t.Fatalf("peer got %q from %v, want %q from %v:%d", got, src, payloadOf("u", 0), tp.addrA, local.Port())
		}
		// Until the neighbour is resolved sends go through the kernel; one at a time, bounded.
		sent := 1
		deadline := time.Now().Add(3 * time.Second)
		for s.u.Counts().XDPTx == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no send through the ring after 3 s: %+v", s.u.Counts())
			}
			p := payloadOf("u", sent)
			if _, errno, _ := s.sendto(a, p, peer, 0); errno != 0 {
				t.Fatalf("send %d: %v", sent, errno)
			}
			if got, src := kernelRecv(t, b); !bytes.Equal(got, p) || src.Port() != local.Port() {
				t.Fatalf("peer got %q from %v, want %q", got, src, p)
			}
			sent++
			time.Sleep(time.Millisecond)
		}
		const burst = 300
		for i := range burst {
			p := payloadOf("u", sent+i)
			if n, errno, viaOS := s.sendto(a, p, peer, 0); n != len(p) || errno != 0 || viaOS {
				t.Fatalf("send %d: %d %v viaOS=%v, want through the ring", sent+i, n, errno, viaOS)
			}
			if got, src := kernelRecv(t, b); !bytes.Equal(got, p) || src != netip.AddrPortFrom(tp.addrA, local.Port()) {
				t.Fatalf("peer got %q from %v, want %q", got, src, p)
			}
		}
		sent += burst
		c := s.u.Counts()
		if c.OSTx+c.XDPTx != uint64(sent) || c.XDPTx < burst || c.TxDrops != 0 {
			t.Fatalf("counts %+v, want %d sends, at least %d through the ring", c, sent, burst)
		}
		t.Logf("sent %d: %d through the kernel (unresolved neighbour), %d through the ring", sent, c.OSTx, c.XDPTx)

		// The peer answers; the answers come back through the RX ring.
		for i := range sent {
			if err := unix.Sendto(b, payloadOf("r", i), 0, sa4(netip.AddrPortFrom(tp.addrA, local.Port()))); err != nil {
				t.Fatalf("peer send: %v", err)
			}
			got, src, n, errno, viaOS := s.recvfrom(a, 2048, 0)
			if errno != 0 || !bytes.Equal(got, payloadOf("r", i)) || n != len(got) || src != peer || viaOS {
				t.Fatalf("answer %d: %q from %v (%d, %v, viaOS=%v), want %q from %v through the ring\nenv %+v\nrings %+v\nsocket %+v", i, got, src, n, errno, viaOS, payloadOf("r", i), peer, e.Counts(), e.RingStats(), s.u.Counts())
			}
		}
		if c := s.u.Counts(); c.XDPRx != uint64(sent) || c.OSRx != 0 || c.RxDrops != 0 {
			t.Fatalf("receive counts %+v, want %d through the ring", c, sent)
		}
		s.close()
		checkNoLeak(t, e)
	})
}

// TestReceiveSemantics: datagrams from kernel peers arrive through the ring with their sources;
// MSG_PEEK, MSG_TRUNC, MSG_DONTWAIT and SO_RCVTIMEO behave as the kernel's; a connected socket
// takes datagrams from its peer only; local traffic (not through the interface) arrives through
// the kernel socket.
func TestReceiveSemantics(t *testing.T) {
	inTopo(t, func(t *testing.T, tp *topo) {
		e := newEnv(t, Params{RxPoll: 50, RxUDPPollOSRatio: 4})
		a := newArena(t)
		local := netip.AddrPortFrom(tp.addrA, 7100)
		s := newTsock(t, e, local)
		if err := s.u.Fallback(); err != nil {
			t.Fatalf("socket not steered: %v", err)
		}
		p1 := netip.AddrPortFrom(tp.addrB, 7101)
		p2 := netip.AddrPortFrom(tp.addrB, 7102)
		b1 := kernelSocket(t, tp.nsB, p1)
		b2 := kernelSocket(t, tp.nsB, p2)

		unix.Sendto(b1, []byte("hello"), 0, sa4(local))
		got, src, _, errno, viaOS := s.recvfrom(a, 100, 0)
		if errno != 0 || string(got) != "hello" || src != p1 || viaOS {
			t.Fatalf("recv: %q from %v %v viaOS=%v", got, src, errno, viaOS)
		}
		// MSG_PEEK keeps the datagram; MSG_TRUNC reports its real length.
		unix.Sendto(b2, []byte("peek-me-please"), 0, sa4(local))
		got, src, _, errno, _ = s.recvfrom(a, 100, unix.MSG_PEEK)
		if errno != 0 || string(got) != "peek-me-please" || src != p2 {
			t.Fatalf("peek: %q from %v %v", got, src, errno)
		}
		got, _, n, errno, _ := s.recvfrom(a, 4, unix.MSG_TRUNC)
		if errno != 0 || n != len("peek-me-please") || string(got) != "peek" {
			t.Fatalf("trunc: %q n=%d %v", got, n, errno)
		}
		// MSG_DONTWAIT on an empty socket; SO_RCVTIMEO on a blocking one.
		if _, _, _, errno, _ := s.recvfrom(a, 100, unix.MSG_DONTWAIT); errno != unix.EAGAIN {
			t.Fatalf("dontwait on empty: %v, want EAGAIN", errno)
		}
		tv := unix.NsecToTimeval(int64(50 * time.Millisecond))
		unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		s.u.OptionSet(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
		start := time.Now()
		if _, _, _, errno, _ := s.recvfrom(a, 100, 0); errno != unix.EAGAIN || time.Since(start) < 45*time.Millisecond || time.Since(start) > time.Second {
			t.Fatalf("SO_RCVTIMEO: %v after %v, want EAGAIN after 50 ms", errno, time.Since(start))
		}
		// A blocking receive sleeps and is woken by a datagram arriving later.
		go func() {
			time.Sleep(20 * time.Millisecond)
			unix.Sendto(b1, []byte("late"), 0, sa4(local))
		}()
		tv = unix.NsecToTimeval(int64(2 * time.Second))
		unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		s.u.OptionSet(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
		if got, _, _, errno, viaOS := s.recvfrom(a, 100, 0); errno != 0 || string(got) != "late" || viaOS {
			t.Fatalf("sleeping receive: %q %v viaOS=%v", got, errno, viaOS)
		}
		// Local traffic does not cross the interface: it comes from the kernel socket.
		l := kernelSocket(t, "", netip.AddrPortFrom(tp.addrA, 7103))
		unix.Sendto(l, []byte("local"), 0, sa4(local))
		got, src, _, errno, viaOS = s.recvfrom(a, 100, 0)
		if errno != 0 || string(got) != "local" || src.Port() != 7103 || !viaOS {
			t.Fatalf("local: %q from %v %v viaOS=%v, want through the kernel", got, src, errno, viaOS)
		}
		// Connected to p1: p2's datagrams are not for the socket (the kernel drops them too).
		if err := unix.Connect(s.fd, sa4(p1)); err != nil {
			t.Fatalf("connect: %v", err)
		}
		s.u.Connected(s.fd, p1)
		unix.Sendto(b2, []byte("not-for-you"), 0, sa4(local))
		unix.Sendto(b1, []byte("for-you"), 0, sa4(local))
		got, src, _, errno, _ = s.recvfrom(a, 100, 0)
		if errno != 0 || string(got) != "for-you" || src != p1 {
			t.Fatalf("connected: %q from %v %v, want for-you from %v", got, src, errno, p1)
		}
		time.Sleep(10 * time.Millisecond)
		if got, _, _, errno, _ := s.recvfrom(a, 100, unix.MSG_DONTWAIT); errno != unix.EAGAIN {
			t.Fatalf("connected: got %q %v, want EAGAIN", got, errno)
		}
		s.close()
		checkNoLeak(t, e)
	})
}

// TestMulticast: a wildcard-bound socket that joined a group (kernel join, then Join) receives
// the group's datagrams from a kernel sender across the veth through the ring; a group it did
// not join reaches nobody. Sending to a group goes through the kernel with IP_MULTICAST_LOOP on
// and through the ring with it off, and the kernel member across the veth receives both.
func TestMulticast(t *testing.T) {
	inTopo(t, func(t *testing.T, tp *topo) {
		e := newEnv(t, Params{RxPoll: 50, RxUDPPollOSRatio: 4})
		a := newArena(t)
		s := newTsock(t, e, netip.AddrPortFrom(netip.IPv4Unspecified(), 7200))
		tv := unix.NsecToTimeval(int64(time.Second))
		unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		s.u.OptionSet(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
		group := netip.MustParseAddr("239.1.2.3")
		mreq := &unix.IPMreq{Multiaddr: group.As4(), Interface: tp.addrA.As4()}
		if err := unix.SetsockoptIPMreq(s.fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, mreq); err != nil {
			t.Fatalf("join: %v", err)
		}
		s.u.Join(s.fd, group, netip.Addr{})
		b := kernelSocket(t, tp.nsB, netip.AddrPortFrom(tp.addrB, 7201))
		if err := unix.SetsockoptInet4Addr(b, unix.IPPROTO_IP, unix.IP_MULTICAST_IF, tp.addrB.As4()); err != nil {
			t.Fatalf("IP_MULTICAST_IF: %v", err)
		}
		const n = 100
		for i := range n {
			if err := unix.Sendto(b, payloadOf("m", i), 0, sa4(netip.AddrPortFrom(group, 7200))); err != nil {
				t.Fatalf("group send: %v", err)
			}
		}
		unix.Sendto(b, []byte("other group"), 0, sa4(netip.AddrPortFrom(netip.MustParseAddr("239.1.2.4"), 7200)))
		for i := range n {
			got, src, _, errno, viaOS := s.recvfrom(a, 2048, 0)
			if errno != 0 || !bytes.Equal(got, payloadOf("m", i)) || src != netip.AddrPortFrom(tp.addrB, 7201) || viaOS {
				t.Fatalf("group datagram %d: %q from %v %v viaOS=%v", i, got, src, errno, viaOS)
			}
		}
		time.Sleep(10 * time.Millisecond)
		if got, _, _, errno, _ := s.recvfrom(a, 100, unix.MSG_DONTWAIT); errno != unix.EAGAIN {
			t.Fatalf("unjoined group: got %q %v, want EAGAIN", got, errno)
		}

		// Sending: B joins the group on its side.
		bm := kernelSocket(t, tp.nsB, netip.AddrPortFrom(netip.IPv4Unspecified(), 7202))
		if err := unix.SetsockoptIPMreq(bm, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, &unix.IPMreq{Multiaddr: group.As4(), Interface: tp.addrB.As4()}); err != nil {
			t.Fatalf("B join: %v", err)
		}
		unix.SetsockoptInet4Addr(s.fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF, tp.addrA.As4())
		s.u.OptionSet(s.fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF)
		dst := netip.AddrPortFrom(group, 7202)
		if _, errno, viaOS := s.sendto(a, []byte("loop-on"), dst, 0); errno != 0 || !viaOS {
			t.Fatalf("group send with loop on: %v viaOS=%v, want through the kernel", errno, viaOS)
		}
		if got, _ := kernelRecv(t, bm); string(got) != "loop-on" {
			t.Fatalf("B got %q", got)
		}
		unix.SetsockoptInt(s.fd, unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP, 0)
		s.u.OptionSet(s.fd, unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP)
		for i := range n {
			if _, errno, viaOS := s.sendto(a, payloadOf("g", i), dst, 0); errno != 0 || viaOS {
				t.Fatalf("group send %d with loop off: %v viaOS=%v, want through the ring", i, errno, viaOS)
			}
			got, src := kernelRecv(t, bm)
			if !bytes.Equal(got, payloadOf("g", i)) || src != netip.AddrPortFrom(tp.addrA, 7200) {
				t.Fatalf("B got %q from %v", got, src)
			}
		}
		c := s.u.Counts()
		if c.XDPRx != n || c.XDPTx != n || c.OSTxWhy[WhyMulticastLoop] != 1 {
			t.Fatalf("counts %+v", c)
		}
		s.close()
		checkNoLeak(t, e)
	})
}

// TestBusyInterface: an interface that already has an XDP program stays with the kernel, with
// the reason; the socket's traffic goes through its kernel socket both ways.
func TestBusyInterface(t *testing.T) {
	inTopo(t, func(t *testing.T, tp *topo) {
		nl, err := packet.Open()
		if err != nil {
			t.Fatalf("netlink: %v", err)
		}
		defer nl.Close()
		l, err := xdp.LinkByName(nl, tp.ifA)
		if err != nil {
			t.Fatalf("link: %v", err)
		}
		other, err := xdp.Attach(nl, l.Index, xdp.Options{})
		if err != nil {
			t.Fatalf("attach the other program: %v", err)
		}
		defer other.Close()
		e := newEnv(t, Params{RxPoll: 10, RxUDPPollOSRatio: 2})
		a := newArena(t)
		local := netip.AddrPortFrom(tp.addrA, 7300)
		s := newTsock(t, e, local)
		tv := unix.NsecToTimeval(int64(time.Second))
		unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		s.u.OptionSet(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
		var busy *xdp.BusyError
		if err := s.u.Fallback(); !errors.As(err, &busy) || busy.ProgID != other.ID() {
			t.Fatalf("Fallback = %v, want a BusyError naming program %d", err, other.ID())
		}
		if err := e.InterfaceState(l.Index); !errors.Is(err, xdp.ErrBusy) {
			t.Fatalf("InterfaceState = %v, want ErrBusy", err)
		}
		t.Logf("reason: %v", s.u.Fallback())
		peer := netip.AddrPortFrom(tp.addrB, 7301)
		b := kernelSocket(t, tp.nsB, peer)
		for i := range 20 {
			if _, errno, viaOS := s.sendto(a, payloadOf("k", i), peer, 0); errno != 0 || !viaOS {
				t.Fatalf("send: %v viaOS=%v", errno, viaOS)
			}
			if got, _ := kernelRecv(t, b); !bytes.Equal(got, payloadOf("k", i)) {
				t.Fatalf("peer got %q", got)
			}
			unix.Sendto(b, payloadOf("K", i), 0, sa4(local))
			if got, src, _, errno, viaOS := s.recvfrom(a, 2048, 0); errno != 0 || !bytes.Equal(got, payloadOf("K", i)) || src != peer || !viaOS {
				t.Fatalf("recv: %q from %v %v viaOS=%v", got, src, errno, viaOS)
			}
		}
		if c := s.u.Counts(); c.OSTxWhy[WhyNotOffloaded] != 20 || c.OSRx != 20 || c.XDPTx+c.XDPRx != 0 {
			t.Fatalf("counts %+v", c)
		}
		if len(e.RingStats()) != 0 {
			t.Fatalf("AF_XDP sockets opened on a busy interface")
		}
	})
}
