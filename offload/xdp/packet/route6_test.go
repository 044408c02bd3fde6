package packet

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRouteGet6: IPv6 routes through netlink: on-link, via a (link-local) gateway with a hop
// limit and MTU metric, with a source hint, out of a forced interface (a link-local
// destination's scope), local, unreachable, prohibited; an IPv4-mapped destination is asked as
// IPv4; Addrs lists the IPv6 addresses (not a tentative one); the neighbour of the gateway is
// resolved by NeighNudge (neighbour discovery) and read back by NeighGet.
func TestRouteGet6(t *testing.T) {
	tp := newTopo(t)
	a6, b6 := netip.MustParseAddr("fd00:99::1"), netip.MustParseAddr("fd00:99::2")
	llB := netip.MustParseAddr("fe80::bb:2")
	run(t, "ip", "-n", tp.nsA, "addr", "add", "fd00:99::1/64", "dev", tp.ifA, "nodad")
	run(t, "ip", "-n", tp.nsA, "addr", "add", "fd00:99::11/64", "dev", tp.ifA, "nodad")
	run(t, "ip", "-n", tp.nsA, "addr", "add", "fd00:99::99/64", "dev", tp.ifA) // tentative (DAD)
	run(t, "ip", "-n", tp.nsA, "addr", "add", "fe80::aa:1/64", "dev", tp.ifA, "nodad")
	run(t, "ip", "-n", tp.nsB, "addr", "add", "fd00:99::2/64", "dev", tp.ifB, "nodad")
	run(t, "ip", "-n", tp.nsB, "addr", "add", "fe80::bb:2/64", "dev", tp.ifB, "nodad")
	run(t, "ip", "-n", tp.nsA, "-6", "route", "add", "fd00:98::/64", "via", "fe80::bb:2", "dev", tp.ifA,
		"mtu", "1300", "hoplimit", "7")
	run(t, "ip", "-n", tp.nsA, "-6", "route", "add", "prohibit", "fd00:97::/64")
	c := connIn(t, tp.nsA)
	ifA, err := c.LinkByName(tp.ifA)
	if err != nil {
		t.Fatalf("LinkByName: %v", err)
	}

	r, err := c.RouteGet(b6, netip.Addr{}, 0)
	if err != nil || r.Type != RouteUnicast || r.Ifindex != ifA.Index || !r.OnLink() || r.NextHop() != b6 ||
		r.Dst != b6 || r.MTU != 1400 || r.HopLimit != 0 || !r.Src.Is6() || r.Src.IsLinkLocalUnicast() {
		t.Errorf("on-link: %+v, %v", r, err)
	}
	if r, err := c.RouteGet(b6, netip.MustParseAddr("fd00:99::11"), 0); err != nil || r.Src != netip.MustParseAddr("fd00:99::11") {
		t.Errorf("source hint: %+v, %v", r, err)
	}
	gw := netip.MustParseAddr("fd00:98::5")
	if r, err := c.RouteGet(gw, netip.Addr{}, 0); err != nil || r.Gateway != llB || r.NextHop() != llB || r.OnLink() ||
		r.RouteMTU != 1300 || r.MTU != 1300 || r.HopLimit != 7 || r.Ifindex != ifA.Index {
		t.Errorf("via gateway: %+v, %v", r, err)
	}
	// The source the kernel would pick for a link-local destination: a link-local address (the
	// automatic one is still tentative: not a candidate).
	if r, err := c.RouteGet(llB, netip.Addr{}, ifA.Index); err != nil || r.Ifindex != ifA.Index || r.Src != netip.MustParseAddr("fe80::aa:1") {
		t.Errorf("link-local out of %d: %+v, %v", ifA.Index, r, err)
	}
	if r, err := c.RouteGet(a6, netip.Addr{}, 0); err != nil || r.Type != RouteLocal {
		t.Errorf("local: %+v, %v", r, err)
	}
	if r, err := c.RouteGet(netip.MustParseAddr("::ffff:10.99.0.2"), netip.Addr{}, 0); err != nil || r.Dst != netip.AddrFrom4(tp.ipB) || !r.Src.Is4() {
		t.Errorf("v4-mapped destination: %+v, %v", r, err)
	}
	if _, err := c.RouteGet(netip.MustParseAddr("2001:db8::1"), netip.Addr{}, 0); !errors.Is(err, unix.ENETUNREACH) {
		t.Errorf("unroutable: %v, want ENETUNREACH", err)
	}
	if _, err := c.RouteGet(netip.MustParseAddr("fd00:97::1"), netip.Addr{}, 0); !errors.Is(err, unix.EACCES) {
		t.Errorf("prohibited: %v, want EACCES", err)
	}
	if _, err := c.RouteGet(b6, netip.AddrFrom4(tp.ipA), 0); !errors.Is(err, unix.EINVAL) {
		t.Errorf("source of the other family: %v, want EINVAL", err)
	}

	as, err := c.Addrs()
	if err != nil {
		t.Fatalf("Addrs: %v", err)
	}
	var mine []netip.Addr
	for _, x := range as {
		if x.Ifindex == ifA.Index {
			mine = append(mine, x.Addr)
		}
	}
	for _, want := range []netip.Addr{netip.AddrFrom4(tp.ipA), a6, netip.MustParseAddr("fd00:99::11")} {
		if !slices.Contains(mine, want) {
			t.Errorf("Addrs of %s: %v, missing %v", tp.ifA, mine, want)
		}
	}
	if slices.Contains(mine, netip.MustParseAddr("fd00:99::99")) {
		t.Errorf("Addrs of %s: %v lists a tentative address", tp.ifA, mine)
	}

	if _, err := c.NeighGet(ifA.Index, llB); !errors.Is(err, ErrNoNeighbour) {
		t.Fatalf("NeighGet before any traffic: %v, want ErrNoNeighbour", err)
	}
	if err := c.NeighNudge(ifA.Index, llB); err != nil {
		t.Fatalf("NeighNudge: %v", err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		n, err := c.NeighGet(ifA.Index, llB)
		if err == nil && n.Resolution() != Unresolved {
			if n.MAC != tp.macB || n.IP != llB {
				t.Errorf("neighbour %+v, want %v at %v", n, llB, tp.macB)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("neighbour discovery of %v never answered: %+v, %v", llB, n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cache := NewNeighCache(time.Second, time.Millisecond, false)
	if m, res, err := cache.Lookup(c, ifA.Index, llB, 0); err != nil || res == Unresolved || m != tp.macB {
		t.Errorf("NeighCache.Lookup: %v %v %v", m, res, err)
	}
}
