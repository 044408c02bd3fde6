package pairsc

import (
	"net/netip"
	"os"
	"testing"

	"github.com/goxio/goxio/offload/shm"
)

func openTable(t *testing.T) (*shm.Pairs, []uint64, uint64) {
	t.Helper()
	p, err := shm.OpenPairs(t.TempDir(), os.Geteuid(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	mem, start := p.Mapping()
	return p, mem, start
}

var (
	cli4 = netip.MustParseAddrPort("127.0.0.1:40001")
	srv4 = netip.MustParseAddrPort("127.0.0.1:8080")
	cli6 = netip.MustParseAddrPort("[::1]:40002")
	srv6 = netip.MustParseAddrPort("[::1]:8080")
	// an IPv4 connection as a dual-stack socket names it
	cliMapped = netip.AddrPortFrom(netip.AddrFrom16(cli4.Addr().As16()), cli4.Port())
	srvMapped = netip.AddrPortFrom(netip.AddrFrom16(srv4.Addr().As16()), srv4.Port())
)

// TestGoRegistersCReads: an entry the engine registers is what the library's look-up reports,
// through its states, for IPv4 (given as sockaddr_in or IPv4-mapped sockaddr_in6) and IPv6.
func TestGoRegistersCReads(t *testing.T) {
	p, mem, _ := openTable(t)
	for _, c := range []struct{ cli, srv netip.AddrPort }{{cli4, srv4}, {cli6, srv6}} {
		if got := Lookup(mem, c.cli, c.srv, true); got != None {
			t.Fatalf("%v -> %v before registration: %d", c.cli, c.srv, got)
		}
		pe, ok := p.Register(c.cli, c.srv)
		if !ok {
			t.Fatal("Go could not register")
		}
		for _, v4 := range []bool{true, false} {
			if got := Lookup(mem, c.cli, c.srv, v4); got != Known {
				t.Errorf("%v -> %v (sockaddr_in %v) registered: C looks up %d, want known", c.cli, c.srv, v4, got)
			}
		}
		if got := Lookup(mem, c.srv, c.cli, true); got != None {
			t.Errorf("the reverse direction %v -> %v: %d, want none", c.srv, c.cli, got)
		}
		pe.Ready()
		if got := Lookup(mem, c.cli, c.srv, true); got != Ready {
			t.Errorf("%v -> %v ready: C looks up %d", c.cli, c.srv, got)
		}
		pe.Drop()
		if got := Lookup(mem, c.cli, c.srv, true); got != None {
			t.Errorf("%v -> %v dropped: C looks up %d", c.cli, c.srv, got)
		}
	}
}

// TestCRegistersGoReads: an entry the library registers is what the engine's look-up reports;
// the engine's registration of the same connection takes it over (the library's drop then
// leaves it alone); a connection already registered is not registered twice by the library.
func TestCRegistersGoReads(t *testing.T) {
	p, mem, start := openTable(t)
	pid := uint32(os.Getpid())
	for _, c := range []struct{ cli, srv netip.AddrPort }{{cli4, srv4}, {cli6, srv6}, {cliMapped, srvMapped}} {
		slot, w := Register(mem, c.cli, c.srv, true, pid, start)
		if slot < 0 {
			t.Fatalf("%v -> %v: C could not register", c.cli, c.srv)
		}
		if got := p.Lookup(c.cli, c.srv); got != shm.PairKnown {
			t.Errorf("%v -> %v registered from C: Go looks up %v", c.cli, c.srv, got)
		}
		if s2, _ := Register(mem, c.cli, c.srv, true, pid, start); s2 >= 0 {
			t.Errorf("%v -> %v registered twice from C (slots %d, %d)", c.cli, c.srv, slot, s2)
		}
		Drop(mem, slot, w)
		if got := p.Lookup(c.cli, c.srv); got != shm.PairNone {
			t.Errorf("%v -> %v dropped from C: Go looks up %v", c.cli, c.srv, got)
		}
		// Registered from C, then taken over by the engine: the library's drop is stale.
		slot, w = Register(mem, c.cli, c.srv, true, pid, start)
		pe, ok := p.Register(c.cli, c.srv)
		if !ok {
			t.Fatal("Go could not register")
		}
		Drop(mem, slot, w)
		if got := Lookup(mem, c.cli, c.srv, false); got != Known {
			t.Errorf("%v -> %v taken over by Go, then dropped from C with the old word: %d, want known", c.cli, c.srv, got)
		}
		pe.Drop()
	}
	// IPv4 given as sockaddr_in and as IPv4-mapped sockaddr_in6 is one key.
	slot, w := Register(mem, cli4, srv4, true, pid, start)
	if got := Lookup(mem, cliMapped, srvMapped, false); got != Known {
		t.Errorf("IPv4 registered as sockaddr_in, looked up as mapped sockaddr_in6: %d", got)
	}
	Drop(mem, slot, w)
}

// TestManyRegistrations: the library and the engine fill the table side by side (each key's
// probe window shared), and every registration is found by the other side until dropped.
func TestManyRegistrations(t *testing.T) {
	p, mem, start := openTable(t)
	pid := uint32(os.Getpid())
	type reg struct {
		slot int
		w    uint64
		pe   shm.PairEntry
	}
	regs := map[netip.AddrPort]reg{}
	for i := range 3000 {
		cli := netip.AddrPortFrom(cli4.Addr(), uint16(10000+i))
		if i%2 == 0 {
			slot, w := Register(mem, cli, srv4, true, pid, start)
			if slot < 0 {
				t.Fatalf("C registration %d failed", i)
			}
			regs[cli] = reg{slot: slot, w: w}
		} else {
			pe, ok := p.Register(cli, srv4)
			if !ok {
				t.Fatalf("Go registration %d failed", i)
			}
			regs[cli] = reg{slot: -1, pe: pe}
		}
	}
	for cli, r := range regs {
		if p.Lookup(cli, srv4) != shm.PairKnown || Lookup(mem, cli, srv4, true) != Known {
			t.Fatalf("%v: not found by both sides", cli)
		}
		if r.slot >= 0 {
			Drop(mem, r.slot, r.w)
		} else {
			r.pe.Drop()
		}
		if p.Lookup(cli, srv4) != shm.PairNone || Lookup(mem, cli, srv4, true) != None {
			t.Fatalf("%v: still found after its drop", cli)
		}
	}
}

// counted is the sum of every slot's word 7: the registrations counted at their homes.
func counted(mem []uint64) uint64 {
	var n uint64
	for i := range shm.PairSlots {
		n += mem[512+i*8+7]
	}
	return n
}

// TestHomeCounts: the library and the engine keep the homes' counts together: each live
// registration counted once (one taken over by the engine too), none after every drop, over
// a table churned into tombstones; and a drop that finds its entry taken over counts nothing.
func TestHomeCounts(t *testing.T) {
	p, mem, start := openTable(t)
	pid := uint32(os.Getpid())
	live := 0
	for i := range 20000 {
		cli := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 9, byte(i >> 8), byte(i)}), uint16(20000+i%30000))
		if i%2 == 0 {
			slot, w := Register(mem, cli, srv4, true, pid, start)
			if slot < 0 {
				t.Fatalf("C registration %d failed", i)
			}
			if i%500 == 0 {
				// registered from C, taken over by the engine, then the library's stale drop
				pe, ok := p.Register(cli, srv4)
				if !ok {
					t.Fatalf("Go take-over %d failed", i)
				}
				Drop(mem, slot, w)
				if got := counted(mem); got != uint64(live+1) {
					t.Fatalf("after a take-over and a stale drop: counted %d, live %d", got, live+1)
				}
				pe.Drop()
				continue
			}
			Drop(mem, slot, w)
		} else {
			pe, ok := p.Register(cli, srv4)
			if !ok {
				t.Fatalf("Go registration %d failed", i)
			}
			if i%1001 == 0 {
				live++ // stays registered
				if Lookup(mem, cli, srv4, true) != Known {
					t.Fatalf("%v: the library does not find the engine's registration", cli)
				}
				continue
			}
			pe.Drop()
		}
		if Lookup(mem, cli, srv4, true) != None || p.Lookup(cli, srv4) != shm.PairNone {
			t.Fatalf("%v: found after its drop", cli)
		}
	}
	if got := counted(mem); got != uint64(live) {
		t.Fatalf("counted %d registrations, %d live", got, live)
	}
}
