package shm

import (
	"net/netip"
	"sync/atomic"
	"testing"
)

func openTestPairs(t *testing.T) (*Pairs, string) {
	t.Helper()
	dir := t.TempDir()
	p, err := OpenPairs(dir, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, dir
}

// sameHome returns n client endpoints (to srv) whose entries share one home slot.
func sameHome(srv netip.AddrPort, n int) []netip.AddrPort {
	var out []netip.AddrPort
	home := -1
	for a := 0; a < 256*256 && len(out) < n; a++ {
		addr := netip.AddrFrom4([4]byte{10, 1, byte(a >> 8), byte(a)})
		for port := 1; port < 65536 && len(out) < n; port += 7 {
			cli := netip.AddrPortFrom(addr, uint16(port))
			k := makePairKey(cli, srv)
			if home < 0 {
				home = k.home()
			}
			if k.home() == home {
				out = append(out, cli)
			}
		}
	}
	return out
}

// A registration is seen by the accepting end (in either address form of a dual-stack
// connection) as known, then ready, and is gone once dropped.
func TestPairsRegisterLookup(t *testing.T) {
	p, dir := openTestPairs(t)
	cli := netip.MustParseAddrPort("127.0.0.1:40000")
	srv := netip.MustParseAddrPort("127.0.0.1:80")
	srv6 := netip.MustParseAddrPort("[::ffff:127.0.0.1]:80")
	cli6 := netip.MustParseAddrPort("[::ffff:127.0.0.1]:40000")
	if st := p.Lookup(cli, srv); st != PairNone {
		t.Fatalf("before: %v", st)
	}
	pe, ok := p.Register(cli, srv)
	if !ok {
		t.Fatal("Register failed")
	}
	if st := p.Lookup(cli6, srv6); st != PairKnown {
		t.Fatalf("registered, looked up mapped: %v, want known", st)
	}
	if st := p.Lookup(srv, cli); st != PairNone {
		t.Fatalf("reversed endpoints: %v, want none", st)
	}
	if !pe.Ready() {
		t.Fatal("Ready failed")
	}
	if st := p.Lookup(cli, srv); st != PairReady {
		t.Fatalf("ready: %v", st)
	}
	pe.Drop()
	if st := p.Lookup(cli, srv); st != PairNone {
		t.Fatalf("dropped: %v", st)
	}
	// The tombstone is reused, and a second table mapping sees the same entries.
	pe2, ok := p.Register(cli, srv)
	if !ok {
		t.Fatal("second Register failed")
	}
	defer pe2.Drop()
	q, err := OpenPairs(dir, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if st := q.Lookup(cli, srv); st != PairKnown {
		t.Fatalf("other mapping: %v", st)
	}
}

// Many connections with colliding homes all register within the probe window; past it,
// Register says no; a dead owner's entry makes room.
func TestPairsFullWindow(t *testing.T) {
	p, _ := openTestPairs(t)
	srv := netip.MustParseAddrPort("10.0.0.1:80")
	keys := sameHome(srv, pairProbe+1)
	if len(keys) != pairProbe+1 {
		t.Fatalf("found %d endpoints with one home", len(keys))
	}
	var regs []PairEntry
	for _, cli := range keys[:pairProbe] {
		pe, ok := p.Register(cli, srv)
		if !ok {
			t.Fatalf("Register %d of the window failed", len(regs))
		}
		regs = append(regs, pe)
	}
	for _, cli := range keys[:pairProbe] {
		if st := p.Lookup(cli, srv); st != PairKnown {
			t.Fatalf("%v: %v", cli, st)
		}
	}
	last := keys[pairProbe]
	if _, ok := p.Register(last, srv); ok {
		t.Fatal("Register past a full window succeeded")
	}
	// The first entry's owner dies (a pid that cannot exist): its slot is taken over.
	e := regs[0].e
	w := atomic.LoadUint64(&e[0])
	atomic.StoreUint64(&e[0], w&0xffffffff|uint64(1<<22+1)<<32)
	if _, ok := p.Register(last, srv); !ok {
		t.Fatal("Register with a dead owner's entry in the window failed")
	}
	if st := p.Lookup(keys[0], srv); st != PairNone {
		t.Fatalf("the dead owner's connection: %v, want none", st)
	}
	if st := p.Lookup(last, srv); st != PairKnown {
		t.Fatalf("the new connection: %v, want known", st)
	}
}

// countedHomes is the sum of every slot's count of registrations homed there.
func countedHomes(p *Pairs) uint64 {
	var n uint64
	for i := range PairSlots {
		n += p.homeCount(i)
	}
	return n
}

// After many connections every slot is a tombstone; the homes' counts still say exactly how
// many registrations live (taken-over ones counted once), so a look-up of a key that is not
// there is over without a probe, and one that is there is still found.
func TestPairsHomeCount(t *testing.T) {
	p, _ := openTestPairs(t)
	srv := netip.MustParseAddrPort("10.0.0.1:80")
	var live []PairEntry
	for i := range 3 * PairSlots {
		cli := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 2, byte(i >> 8), byte(i)}), uint16(1000+i%50000))
		pe, ok := p.Register(cli, srv)
		if !ok {
			t.Fatalf("Register %d failed", i)
		}
		if i%1000 == 0 {
			live = append(live, pe) // kept registered
			continue
		}
		if i%7 == 0 {
			pe.Ready()
		}
		pe.Drop()
		if st := p.Lookup(cli, srv); st != PairNone {
			t.Fatalf("%v dropped: %v", cli, st)
		}
	}
	if got := countedHomes(p); got != uint64(len(live)) {
		t.Fatalf("counted registrations %d, live %d", got, len(live))
	}
	gone := 0
	for i := range PairSlots {
		if pairState(atomic.LoadUint64(&p.entry(i)[0])) == pairGone {
			gone++
		}
	}
	if gone < PairSlots/2 {
		t.Fatalf("only %d tombstones: the test did not churn the table", gone)
	}
	// The same connection registered again by this process takes its entry over: counted once.
	cli := netip.MustParseAddrPort("10.3.0.1:5000")
	a, _ := p.Register(cli, srv)
	b, ok := p.Register(cli, srv)
	if !ok || countedHomes(p) != uint64(len(live))+1 {
		t.Fatalf("take-over: ok %v, counted %d for %d live", ok, countedHomes(p), len(live)+1)
	}
	a.Drop() // stale: the take-over changed the entry's word
	if st := p.Lookup(cli, srv); st != PairKnown {
		t.Fatalf("stale drop removed the taken-over entry: %v", st)
	}
	b.Drop()
	for _, pe := range live {
		pe.Drop()
	}
	if got := countedHomes(p); got != 0 {
		t.Fatalf("all dropped: %d still counted", got)
	}
	// A key whose home counts none is not probed for: an entry of it written without its count
	// (which no writer does) is not found.
	k := makePairKey(cli, srv)
	e := p.entry(k.home())
	for j := range k {
		atomic.StoreUint64(&e[2+j], k[j])
	}
	atomic.StoreUint64(&e[0], p.pid<<32|1<<8|pairReg)
	if st := p.Lookup(cli, srv); st != PairNone {
		t.Fatalf("uncounted home probed: %v", st)
	}
}
