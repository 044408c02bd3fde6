package packet

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// waitNeigh polls the neighbour entry until ok accepts it or 3 s pass (at most 300 polls).
func waitNeigh(t *testing.T, c *Conn, ifindex int, ip netip.Addr, what string, ok func(Neigh, error) bool) Neigh {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	var n Neigh
	var err error
	for i := 0; i < 300 && time.Now().Before(deadline); i++ {
		n, err = c.NeighGet(ifindex, ip)
		if ok(n, err) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("neighbour %v: never %s; last %+v (%v), %v", ip, what, n, n.State, err)
	return n
}

// kernelSend sends one UDP datagram from a fresh socket in ns to dst:port through the kernel.
func kernelSend(t *testing.T, ns string, dst [4]byte, port int, payload []byte) {
	t.Helper()
	fd := socketIn(t, ns, unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err := unix.Sendto(fd, payload, 0, &unix.SockaddrInet4{Addr: dst, Port: port}); err != nil {
		t.Fatalf("kernel sendto %v:%d: %v", dst, port, err)
	}
}

func TestNeighbours(t *testing.T) {
	tp := newTopo(t)
	run(t, "ip", "-n", tp.nsB, "addr", "add", "10.99.0.3/24", "dev", tp.ifB)
	// Fast failure of unanswered ARP (3 probes 100 ms apart).
	run(t, "ip", "netns", "exec", tp.nsA, "sh", "-c", "echo 100 > /proc/sys/net/ipv4/neigh/"+tp.ifA+"/retrans_time_ms")
	c := connIn(t, tp.nsA)
	l, err := c.LinkByName(tp.ifA)
	if err != nil {
		t.Fatalf("LinkByName: %v", err)
	}

	// Before any traffic there is no entry.
	if n, err := c.NeighGet(l.Index, a4(tp.ipB)); !errors.Is(err, ErrNoNeighbour) || !errors.Is(err, unix.ENOENT) {
		t.Fatalf("before traffic: %+v, %v; want ErrNoNeighbour", n, err)
	}

	// A kernel UDP send resolves it.
	rx := udpSocketIn(t, tp.nsB, tp.ipB, 7000, 2000)
	kernelSend(t, tp.nsA, tp.ipB, 7000, []byte("arp me"))
	buf := make([]byte, 64)
	if n, _, err := unix.Recvfrom(rx, buf, 0); err != nil || string(buf[:n]) != "arp me" {
		t.Fatalf("kernel datagram: %q, %v", buf[:n], err)
	}
	n := waitNeigh(t, c, l.Index, a4(tp.ipB), "usable", func(n Neigh, err error) bool {
		return err == nil && n.Resolution() == Usable
	})
	if n.MAC != tp.macB || !n.HasMAC || n.State != unix.NUD_REACHABLE || n.Ifindex != l.Index || n.IP != a4(tp.ipB) {
		t.Fatalf("after traffic: %+v (%v)", n, n.State)
	}

	// A STALE entry is usable but asks for a nudge; the nudge makes the kernel revalidate it.
	run(t, "ip", "-n", tp.nsA, "neigh", "replace", "10.99.0.2", "dev", tp.ifA, "lladdr", tp.macB.String(), "nud", "stale")
	if n, err := c.NeighGet(l.Index, a4(tp.ipB)); err != nil || n.State != unix.NUD_STALE || n.Resolution() != Stale || n.MAC != tp.macB {
		t.Fatalf("stale entry: %+v (%v), %v", n, n.State, err)
	}
	if err := c.NeighNudge(l.Index, a4(tp.ipB)); err != nil {
		t.Fatalf("NeighNudge of a stale entry: %v", err)
	}
	if n, err := c.NeighGet(l.Index, a4(tp.ipB)); err != nil || n.State != unix.NUD_DELAY || n.Resolution() != Stale {
		t.Fatalf("stale entry after nudge: %+v (%v), %v; want DELAY", n, n.State, err)
	}

	// A nudge resolves a missing entry without any traffic through the kernel.
	ipB3 := [4]byte{10, 99, 0, 3}
	if _, err := c.NeighGet(l.Index, a4(ipB3)); !errors.Is(err, ErrNoNeighbour) {
		t.Fatalf("second address before nudge: %v", err)
	}
	if err := c.NeighNudge(l.Index, a4(ipB3)); err != nil {
		t.Fatalf("NeighNudge of a missing entry: %v", err)
	}
	n = waitNeigh(t, c, l.Index, a4(ipB3), "reachable", func(n Neigh, err error) bool {
		return err == nil && n.State == unix.NUD_REACHABLE
	})
	if n.MAC != tp.macB || n.Resolution() != Usable {
		t.Fatalf("nudged entry: %+v", n)
	}

	// Nobody answers for .9: INCOMPLETE, then FAILED, unresolved throughout.
	nobody := [4]byte{10, 99, 0, 9}
	if err := c.NeighNudge(l.Index, a4(nobody)); err != nil {
		t.Fatalf("NeighNudge of an absent host: %v", err)
	}
	if n, err := c.NeighGet(l.Index, a4(nobody)); err != nil || n.State != unix.NUD_INCOMPLETE || n.Resolution() != Unresolved || n.HasMAC {
		t.Fatalf("absent host right after nudge: %+v (%v), %v; want INCOMPLETE", n, n.State, err)
	}
	n = waitNeigh(t, c, l.Index, a4(nobody), "failed", func(n Neigh, err error) bool {
		return err == nil && n.State == unix.NUD_FAILED
	})
	if n.Resolution() != Unresolved {
		t.Fatalf("failed entry resolution %v", n.Resolution())
	}

	// A permanent entry is usable.
	perm := [4]byte{10, 99, 0, 50}
	run(t, "ip", "-n", tp.nsA, "neigh", "add", "10.99.0.50", "dev", tp.ifA, "lladdr", "02:00:00:00:00:50", "nud", "permanent")
	if n, err := c.NeighGet(l.Index, a4(perm)); err != nil || n.State != unix.NUD_PERMANENT || n.Resolution() != Usable || n.MAC != (MAC{2, 0, 0, 0, 0, 0x50}) {
		t.Fatalf("permanent entry: %+v (%v), %v", n, n.State, err)
	}
	if _, err := c.NeighGet(99999, a4(tp.ipB)); err == nil {
		t.Fatalf("NeighGet on a missing interface succeeded")
	}
}

func TestNUDStateResolution(t *testing.T) {
	cases := map[NUDState]Resolution{
		0: Unresolved, unix.NUD_INCOMPLETE: Unresolved, unix.NUD_FAILED: Unresolved,
		unix.NUD_STALE: Stale, unix.NUD_DELAY: Stale, unix.NUD_PROBE: Stale,
		unix.NUD_REACHABLE: Usable, unix.NUD_PERMANENT: Usable, unix.NUD_NOARP: Usable,
	}
	for s, want := range cases {
		if got := s.Resolution(); got != want {
			t.Errorf("%v.Resolution() = %v, want %v", s, got, want)
		}
	}
	if s := NUDState(unix.NUD_STALE).String(); s != "STALE" {
		t.Errorf("String %q", s)
	}
	noMAC := Neigh{State: unix.NUD_REACHABLE}
	if noMAC.Resolution() != Unresolved {
		t.Errorf("entry without MAC is %v", noMAC.Resolution())
	}
}

func TestNeighCache(t *testing.T) {
	tp := newTopo(t)
	c := connIn(t, tp.nsA)
	l, err := c.LinkByName(tp.ifA)
	if err != nil {
		t.Fatalf("LinkByName: %v", err)
	}
	const sec = int64(time.Second)
	cache := NewNeighCache(10*time.Second, 50*time.Millisecond, true)

	// First lookup: no entry, the cache nudges the kernel; the answer is kept 50 ms.
	mac, res, err := cache.Lookup(c, l.Index, a4(tp.ipB), 0)
	if err != nil || res != Unresolved || !mac.IsZero() {
		t.Fatalf("first lookup: %v %v %v", mac, res, err)
	}
	if _, res, _ := cache.Lookup(c, l.Index, a4(tp.ipB), int64(time.Millisecond)); res != Unresolved {
		t.Fatalf("cached unresolved answer: %v", res)
	}
	if s := cache.Stats(); s.Queries != 1 || s.Hits != 1 || s.Nudges != 1 || s.NudgeErrors != 0 {
		t.Fatalf("stats %+v", s)
	}
	// The nudge resolves the entry; once the negative answer is older than 50 ms, Lookup sees it.
	now := int64(0)
	deadline := time.Now().Add(3 * time.Second)
	for res != Usable && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		now += 60 * int64(time.Millisecond)
		mac, res, err = cache.Lookup(c, l.Index, a4(tp.ipB), now)
		if err != nil {
			t.Fatalf("lookup: %v", err)
		}
	}
	if res != Usable || mac != tp.macB {
		t.Fatalf("after nudge: %v %v", mac, res)
	}
	// Usable answers are kept for the TTL without asking the kernel, Invalidate drops them.
	q := cache.Stats().Queries
	for i := range 5 {
		if m, r, _ := cache.Lookup(c, l.Index, a4(tp.ipB), now+int64(i)*sec); m != tp.macB || r != Usable {
			t.Fatalf("cached lookup %d: %v %v", i, m, r)
		}
	}
	if cache.Stats().Queries != q {
		t.Fatalf("cached lookups queried the kernel")
	}
	allocs := testing.AllocsPerRun(50, func() { cache.Lookup(c, l.Index, a4(tp.ipB), now) })
	if allocs != 0 {
		t.Fatalf("cached Lookup allocates %.1f", allocs)
	}
	run(t, "ip", "-n", tp.nsA, "neigh", "replace", "10.99.0.2", "dev", tp.ifA, "lladdr", "02:00:00:00:00:77", "nud", "permanent")
	if m, _, _ := cache.Lookup(c, l.Index, a4(tp.ipB), now); m != tp.macB {
		t.Fatalf("cache answered from the kernel before Invalidate: %v", m)
	}
	gen := cache.Generation()
	cache.Invalidate()
	if cache.Generation() != gen+1 {
		t.Fatalf("generation %d after %d", cache.Generation(), gen)
	}
	if m, r, _ := cache.Lookup(c, l.Index, a4(tp.ipB), now); m != (MAC{2, 0, 0, 0, 0, 0x77}) || r != Usable {
		t.Fatalf("after Invalidate: %v %v", m, r)
	}
	// Expiry by age, and Forget.
	q = cache.Stats().Queries
	cache.Lookup(c, l.Index, a4(tp.ipB), now+11*sec)
	cache.Forget(l.Index, a4(tp.ipB))
	cache.Lookup(c, l.Index, a4(tp.ipB), now+11*sec)
	if got := cache.Stats().Queries - q; got != 2 {
		t.Fatalf("expired and forgotten lookups made %d queries, want 2", got)
	}
}

// a4 is an IPv4 address as netip.Addr; the zero Addr for 0.0.0.0 (no address).
func a4(b [4]byte) netip.Addr {
	if b == [4]byte{} {
		return netip.Addr{}
	}
	return netip.AddrFrom4(b)
}
