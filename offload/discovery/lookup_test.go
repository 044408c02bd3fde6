package discovery

import (
	"fmt"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// TestScoring checks the kernel's unicast choice: exact beats wildcard, a
// matching connected socket beats an unconnected one in its pass, a socket
// connected elsewhere never matches.
func TestScoring(t *testing.T) {
	d, _ := openTest(t)
	mustPublish(t, d, v4("wild", "0.0.0.0:5000"))
	mustPublish(t, d, v4("exact", "127.0.0.1:5000"))
	conn := v4("conn", "127.0.0.1:5000")
	conn.Peer = ap("127.0.0.9:7000")
	mustPublish(t, d, conn)
	connAddr := v4("connaddr", "127.0.0.1:5000")
	connAddr.Peer = netip.AddrPortFrom(ad("127.0.0.8"), 0)
	mustPublish(t, d, connAddr)

	cases := []struct{ dst, src, want string }{
		{"127.0.0.1:5000", "127.0.0.9:7000", "conn"},     // +8 beats everything
		{"127.0.0.1:5000", "127.0.0.9:7001", "exact"},    // conn connected elsewhere
		{"127.0.0.1:5000", "127.0.0.8:1234", "connaddr"}, // address-only connect, +4
		{"127.0.0.1:5000", "127.0.0.7:7000", "exact"},
		{"127.0.0.2:5000", "127.0.0.9:7000", "wild"}, // other local address: wildcard pass
		{"127.0.0.1:5001", "127.0.0.9:7000", ""},     // no socket on the port
		{"[::ffff:127.0.0.1]:5000", "[::ffff:127.0.0.9]:7000", "conn"},
		{"[::1]:5000", "[::1]:7000", ""}, // AF_INET sockets never get IPv6
	}
	for _, c := range cases {
		if got := lookupOne(t, d, c.dst, c.src); got != c.want {
			t.Errorf("Lookup %s from %s = %q, want %q", c.dst, c.src, got, c.want)
		}
	}
}

// TestExactPassFirst: like the kernel, a socket bound to the destination
// address wins over a wildcard-bound socket even when that one is connected
// to the source (the wildcard pass runs only when the exact pass is empty).
func TestExactPassFirst(t *testing.T) {
	d, _ := openTest(t)
	wc := v4("wildconn", "0.0.0.0:6000")
	wc.Peer = ap("10.0.0.1:1")
	mustPublish(t, d, wc)
	mustPublish(t, d, v4("exact", "127.0.0.1:6000"))
	if got := lookupOne(t, d, "127.0.0.1:6000", "10.0.0.1:1"); got != "exact" {
		t.Errorf("exact vs connected wildcard: %q", got)
	}
	if got := lookupOne(t, d, "127.0.0.2:6000", "10.0.0.1:1"); got != "wildconn" {
		t.Errorf("wildcard pass from the peer: %q", got)
	}
	if got := lookupOne(t, d, "127.0.0.2:6000", "10.0.0.2:1"); got != "" {
		t.Errorf("wildcard pass from another source: %q", got)
	}
}

// TestFamilyPreference: for IPv4 an AF_INET socket scores above an AF_INET6
// one on the same binding, whatever the publish order.
func TestFamilyPreference(t *testing.T) {
	d, _ := openTest(t)
	mustPublish(t, d, v4("four", "0.0.0.0:7000"))
	mustPublish(t, d, v6("six", "[::]:7000"))
	if got := lookupOne(t, d, "127.0.0.1:7000", "127.0.0.1:1"); got != "four" {
		t.Errorf("IPv4 to a dual binding: %q", got)
	}
	if got := lookupOne(t, d, "[::1]:7000", "[::1]:1"); got != "six" {
		t.Errorf("IPv6 to a dual binding: %q", got)
	}
}

// TestV6Only covers IPV6_V6ONLY and IPv4-mapped bindings.
func TestV6Only(t *testing.T) {
	d, _ := openTest(t)
	only := v6("only", "[::]:8000")
	only.V6Only = true
	mustPublish(t, d, only)
	mustPublish(t, d, v6("dual", "[::]:8001"))
	mustPublish(t, d, v6("mapped", "[::ffff:127.0.0.1]:8002"))
	mustPublish(t, d, v6("loop6", "[::1]:8003"))
	// A plain IPv4 local address on an AF_INET6 socket is stored mapped.
	mustPublish(t, d, Entry{Family: unix.AF_INET6, Local: ap("127.0.0.1:8004"), Inbox: "given4"})
	conn := v6("conn6", "[::]:8005")
	conn.Peer = ap("[::ffff:10.0.0.1]:99")
	mustPublish(t, d, conn)
	conn6 := v6("connreal6", "[::]:8006")
	conn6.Peer = ap("[2001:db8::1]:99")
	mustPublish(t, d, conn6)

	cases := []struct{ dst, src, want string }{
		{"127.0.0.1:8000", "127.0.0.1:1", ""},
		{"[::1]:8000", "[::1]:1", "only"},
		{"127.0.0.1:8001", "127.0.0.1:1", "dual"},
		{"[::ffff:127.0.0.1]:8001", "[::ffff:127.0.0.1]:1", "dual"},
		{"[::1]:8001", "[::1]:1", "dual"},
		{"127.0.0.1:8002", "127.0.0.1:1", "mapped"},
		{"127.0.0.2:8002", "127.0.0.1:1", ""},
		{"[::1]:8002", "[::1]:1", ""},
		{"127.0.0.1:8003", "127.0.0.1:1", ""},
		{"[::1]:8003", "[::1]:1", "loop6"},
		{"127.0.0.1:8004", "127.0.0.1:1", "given4"},
		{"127.0.0.1:8005", "10.0.0.1:99", "conn6"},
		{"127.0.0.1:8005", "10.0.0.1:98", ""},
		{"127.0.0.1:8006", "10.0.0.1:99", ""}, // connected to a real IPv6 peer
		{"[::1]:8006", "[2001:db8::1]:99", "connreal6"},
	}
	for _, c := range cases {
		if got := lookupOne(t, d, c.dst, c.src); got != c.want {
			t.Errorf("Lookup %s from %s = %q, want %q", c.dst, c.src, got, c.want)
		}
	}
	got := d.Lookup(ap("127.0.0.1:8004"), ap("127.0.0.1:1"), nil)
	if len(got) != 1 || got[0].Local != ap("[::ffff:127.0.0.1]:8004") || got[0].Family != unix.AF_INET6 {
		t.Errorf("stored form of a plain IPv4 address on AF_INET6: %+v", got)
	}
}

// TestReuseAddrLastWins: sockets sharing a binding through SO_REUSEADDR:
// the most recently bound receives unicast, like the kernel's hash chains.
func TestReuseAddrLastWins(t *testing.T) {
	d, _ := openTest(t)
	a := v4("first", "0.0.0.0:9100")
	a.ReuseAddr = true
	mustPublish(t, d, a)
	b := a
	b.Inbox = "second"
	hb := mustPublish(t, d, b)
	if got := lookupOne(t, d, "127.0.0.1:9100", "127.0.0.1:1"); got != "second" {
		t.Errorf("two SO_REUSEADDR sockets: %q", got)
	}
	hb.Withdraw()
	if got := lookupOne(t, d, "127.0.0.1:9100", "127.0.0.1:1"); got != "first" {
		t.Errorf("after the second withdrew: %q", got)
	}
}

// TestReusePort: a SO_REUSEPORT group shares flows by a hash of the source;
// a flow always lands on the same member (also seen from another mapping of
// the segment, as another process would see it); every member gets flows;
// a member connected to the source takes that flow.
func TestReusePort(t *testing.T) {
	d, dir := openTest(t)
	const members = 4
	for i := 0; i < members; i++ {
		e := v4(fmt.Sprintf("m%d", i), "0.0.0.0:9200")
		e.ReusePort = true
		mustPublish(t, d, e)
	}
	other, err := Open(dir, unix.Geteuid(), testNetNS)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	hits := map[string]int{}
	chosen := map[int]string{}
	for port := 1000; port < 1400; port++ {
		src := fmt.Sprintf("10.1.2.3:%d", port)
		a := lookupOne(t, d, "127.0.0.1:9200", src)
		if a == "" {
			t.Fatalf("no member for %s", src)
		}
		if b := lookupOne(t, d, "127.0.0.1:9200", src); b != a {
			t.Fatalf("flow %s moved from %s to %s", src, a, b)
		}
		if c := lookupOne(t, other, "127.0.0.1:9200", src); c != a {
			t.Fatalf("flow %s: %s here, %s through another mapping", src, a, c)
		}
		hits[a]++
		chosen[port] = a
	}
	if len(hits) != members {
		t.Errorf("flows spread over %v, want all %d members", hits, members)
	}
	for m, n := range hits {
		if n < 40 {
			t.Errorf("member %s got %d of 400 flows", m, n)
		}
	}
	// An unrelated binding changes nothing.
	mustPublish(t, d, v4("unrelated", "0.0.0.0:9201"))
	for port, want := range chosen {
		if got := lookupOne(t, d, "127.0.0.1:9200", fmt.Sprintf("10.1.2.3:%d", port)); got != want {
			t.Fatalf("flow %d moved from %s to %s after an unrelated publish", port, want, got)
		}
	}
	// A member connected to one source takes exactly that flow.
	c := v4("connected", "0.0.0.0:9200")
	c.ReusePort = true
	c.Peer = ap("10.1.2.3:1000")
	mustPublish(t, d, c)
	if got := lookupOne(t, d, "127.0.0.1:9200", "10.1.2.3:1000"); got != "connected" {
		t.Errorf("connected member: %q", got)
	}
	if got := lookupOne(t, d, "127.0.0.1:9200", "10.1.2.3:1001"); got != chosen[1001] {
		t.Errorf("other flow with a connected member present: %q, want %q", got, chosen[1001])
	}
}

// TestMulticast covers group delivery: one copy per socket, source-specific
// joins, the binding address, the port, IP_MULTICAST_ALL, dual-stack
// sockets and the limited broadcast.
func TestMulticast(t *testing.T) {
	d, _ := openTest(t)
	g := ad("239.1.1.1")
	join := func(e Entry, group, source string) Entry {
		e.Group = ad(group)
		if source != "" {
			e.Source = ad(source)
		}
		return e
	}
	// any: bound to the wildcard, joined any-source.
	mustPublish(t, d, v4("any", "0.0.0.0:5353"))
	mustPublish(t, d, join(v4("any", "0.0.0.0:5353"), "239.1.1.1", ""))
	// ssm: bound to the group, joined for source 10.0.0.1 only.
	mustPublish(t, d, join(v4("ssm", "239.1.1.1:5353"), "239.1.1.1", "10.0.0.1"))
	// twice: joined on two interfaces: two entries, one copy.
	mustPublish(t, d, join(v4("twice", "0.0.0.0:5353"), "239.1.1.1", ""))
	mustPublish(t, d, join(v4("twice", "0.0.0.0:5353"), "239.1.1.1", ""))
	// otherport: joined, but bound to another port.
	mustPublish(t, d, join(v4("otherport", "0.0.0.0:5354"), "239.1.1.1", ""))
	// all: no join, IP_MULTICAST_ALL on (default).
	mustPublish(t, d, v4("all", "0.0.0.0:5353"))
	// noall: no join, IP_MULTICAST_ALL off.
	noall := v4("noall", "0.0.0.0:5353")
	noall.NoMulticastAll = true
	mustPublish(t, d, noall)
	// unicastbound: bound to a unicast address: never multicast.
	mustPublish(t, d, join(v4("unicastbound", "127.0.0.1:5353"), "239.1.1.1", ""))
	// dual: AF_INET6 socket joined the IPv4 group.
	mustPublish(t, d, join(v6("dual", "[::]:5353"), "239.1.1.1", ""))
	// only6: V6Only, joined the IPv4 group: cannot receive IPv4.
	only6 := join(v6("only6", "[::]:5353"), "ff15::1", "")
	only6.V6Only = true
	mustPublish(t, d, only6)
	// connected: joined but connected elsewhere.
	cj := join(v4("connected", "0.0.0.0:5353"), "239.1.1.1", "")
	cj.Peer = ap("10.9.9.9:1")
	mustPublish(t, d, cj)

	check := func(dst, src string, want ...string) {
		t.Helper()
		got := d.Lookup(ap(dst), ap(src), nil)
		if fmt.Sprint(inboxes(got)) != fmt.Sprint(want) {
			t.Errorf("Lookup %s from %s = %v, want %v", dst, src, inboxes(got), want)
		}
		for _, e := range got {
			bound := e.Inbox == "any" || e.Inbox == "all" || e.Inbox == "noall"
			if bound && e.Group.IsValid() && e.Group != ap(dst).Addr() {
				t.Errorf("%s: returned the membership of another group: %+v", e.Inbox, e)
			}
			if e.Inbox == "any" && ap(dst).Addr() == g && e.Group != g {
				t.Errorf("any: returned its binding, not its membership of the group: %+v", e)
			}
		}
	}
	check("239.1.1.1:5353", "10.0.0.1:4000", "any", "ssm", "twice", "all", "dual")
	check("239.1.1.1:5353", "10.0.0.2:4000", "any", "twice", "all", "dual")
	check("239.1.1.1:5353", "10.9.9.9:1", "any", "twice", "all", "dual", "connected")
	check("239.1.1.1:5354", "10.0.0.1:4000", "otherport")
	check("239.2.2.2:5353", "10.0.0.1:4000") // nobody joined the group
	// dual did not join ff15::1 but IPV6_MULTICAST_ALL is on and only6 joined.
	check("[ff15::1]:5353", "[2001:db8::5]:4000", "dual", "only6")

	// A source-specific join is the only membership of 239.3.3.3: the
	// namespace admits only that source, so IP_MULTICAST_ALL sockets see
	// only it too.
	mustPublish(t, d, join(v4("ssmonly", "0.0.0.0:5353"), "239.3.3.3", "10.0.0.1"))
	check("239.3.3.3:5353", "10.0.0.1:4000", "any", "twice", "all", "dual", "ssmonly")
	check("239.3.3.3:5353", "10.0.0.2:4000")

	// The limited broadcast: every matching binding, no membership needed.
	check("255.255.255.255:5353", "10.0.0.1:4000", "any", "twice", "all", "noall", "dual", "ssmonly")
}
