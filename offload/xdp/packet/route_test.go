package packet

import (
	"errors"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

func TestLinks(t *testing.T) {
	tp := newTopo(t)
	c := connIn(t, tp.nsA)
	l, err := c.LinkByName(tp.ifA)
	if err != nil {
		t.Fatalf("LinkByName: %v", err)
	}
	if l.Name != tp.ifA || l.Index <= 1 || l.MAC != tp.macA || l.MTU != 1400 || !l.Up() || !l.Ethernet() {
		t.Fatalf("LinkByName(%s) = %+v", tp.ifA, l)
	}
	byIndex, err := c.LinkByIndex(l.Index)
	if err != nil || byIndex != l {
		t.Fatalf("LinkByIndex(%d) = %+v, %v; want %+v", l.Index, byIndex, err, l)
	}
	lo, err := c.LinkByIndex(1)
	if err != nil || lo.Name != "lo" || lo.Ethernet() || lo.Encap != "loopback" || lo.Flags&unix.IFF_LOOPBACK == 0 {
		t.Fatalf("LinkByIndex(1) = %+v, %v", lo, err)
	}
	// The peer's interface is in the other namespace.
	if _, err := c.LinkByName(tp.ifB); !errors.Is(err, unix.ENODEV) {
		t.Fatalf("LinkByName of the other namespace's interface: %v, want ENODEV", err)
	}
	if _, err := c.LinkByIndex(99999); !errors.Is(err, unix.ENODEV) {
		t.Fatalf("LinkByIndex(99999): %v, want ENODEV", err)
	}
	if _, err := c.LinkByName("a-name-too-long-for-linux"); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("LinkByName(long): %v, want EINVAL", err)
	}
	run(t, "ip", "-n", tp.nsA, "link", "set", tp.ifA, "down")
	if down, err := c.LinkByIndex(l.Index); err != nil || down.Up() || down.Flags&unix.IFF_UP != 0 {
		t.Fatalf("after link down: %+v, %v", down, err)
	}
}

func TestRouteGet(t *testing.T) {
	tp := newTopo(t)
	run(t, "ip", "-n", tp.nsA, "addr", "add", "10.99.0.11/24", "dev", tp.ifA)
	run(t, "ip", "-n", tp.nsA, "route", "add", "10.98.0.0/24", "via", "10.99.0.2", "mtu", "1280")
	run(t, "ip", "-n", tp.nsA, "route", "add", "224.0.0.0/4", "dev", tp.ifA)
	c := connIn(t, tp.nsA)
	ifA, err := c.LinkByName(tp.ifA)
	if err != nil {
		t.Fatalf("LinkByName: %v", err)
	}
	zero := [4]byte{}
	cases := []struct {
		name        string
		dst, src    [4]byte
		oif         int
		typ         RouteType
		ifindex     int
		wantSrc, gw [4]byte
		mtu         int
		routeMTU    int
		nextHop     [4]byte
	}{
		{"on-link", tp.ipB, zero, 0, RouteUnicast, ifA.Index, tp.ipA, zero, 1400, 0, tp.ipB},
		{"on-link with oif", tp.ipB, zero, ifA.Index, RouteUnicast, ifA.Index, tp.ipA, zero, 1400, 0, tp.ipB},
		{"source hint", tp.ipB, [4]byte{10, 99, 0, 11}, 0, RouteUnicast, ifA.Index, [4]byte{10, 99, 0, 11}, zero, 1400, 0, tp.ipB},
		{"via gateway", [4]byte{10, 98, 0, 5}, zero, 0, RouteUnicast, ifA.Index, tp.ipA, tp.ipB, 1280, 1280, tp.ipB},
		{"local", tp.ipA, zero, 0, RouteLocal, 1, tp.ipA, zero, 65536, 0, tp.ipA},
		{"multicast", [4]byte{239, 1, 2, 3}, zero, 0, RouteMulticast, ifA.Index, tp.ipA, zero, 1400, 0, [4]byte{239, 1, 2, 3}},
		{"broadcast", [4]byte{10, 99, 0, 255}, zero, 0, RouteBroadcast, ifA.Index, tp.ipA, zero, 1400, 0, [4]byte{10, 99, 0, 255}},
	}
	for _, tc := range cases {
		r, err := c.RouteGet(a4(tc.dst), a4(tc.src), tc.oif)
		if err != nil {
			t.Errorf("%s: RouteGet: %v", tc.name, err)
			continue
		}
		if r.Type != tc.typ || r.Ifindex != tc.ifindex || r.Src != a4(tc.wantSrc) || r.Gateway != a4(tc.gw) ||
			r.MTU != tc.mtu || r.RouteMTU != tc.routeMTU || r.NextHop() != a4(tc.nextHop) || r.Dst != a4(tc.dst) ||
			r.Link.Index != tc.ifindex || r.OnLink() != (tc.gw == zero) {
			t.Errorf("%s: %+v (type %v)", tc.name, r, r.Type)
		}
		if tc.ifindex == ifA.Index && r.Link.MAC != tp.macA {
			t.Errorf("%s: link MAC %v", tc.name, r.Link.MAC)
		}
	}
	// No default route in the namespace: other destinations are unreachable.
	if _, err := c.RouteGet(a4([4]byte{192, 0, 2, 1}), netip.Addr{}, 0); !errors.Is(err, unix.ENETUNREACH) {
		t.Errorf("unroutable destination: %v, want ENETUNREACH", err)
	}
	// A source hint that is not a local address is refused by the kernel.
	if _, err := c.RouteGet(a4(tp.ipB), a4([4]byte{10, 99, 0, 77}), 0); !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENETUNREACH) {
		t.Errorf("non-local source hint: %v, want EINVAL or ENETUNREACH", err)
	} else {
		t.Logf("non-local source hint: %v", err)
	}
	run(t, "ip", "-n", tp.nsA, "route", "add", "prohibit", "192.0.2.0/24")
	if _, err := c.RouteGet(a4([4]byte{192, 0, 2, 1}), netip.Addr{}, 0); !errors.Is(err, unix.EACCES) {
		t.Errorf("prohibited destination: %v, want EACCES", err)
	}
}
