package discovery

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestLookupListener(t *testing.T) {
	d, _ := openTest(t)
	wild := mustPublish(t, d, ListenerEntry(unix.AF_INET, ap("0.0.0.0:7000"), "tcp.a"))
	mustPublish(t, d, ListenerEntry(unix.AF_INET, ap("127.0.0.2:7001"), "tcp.b"))
	for _, c := range []struct {
		dst  string
		want bool
	}{
		{"127.0.0.1:7000", true},  // wildcard listener
		{"10.1.2.3:7000", true},   // wildcard listener, any local address
		{"127.0.0.2:7001", true},  // exact
		{"127.0.0.1:7001", false}, // bound elsewhere
		{"127.0.0.1:7002", false}, // nobody
		{"[::ffff:127.0.0.2]:7001", true},
	} {
		if got := d.LookupListener(ap(c.dst)); got != c.want {
			t.Errorf("LookupListener(%s) = %v, want %v", c.dst, got, c.want)
		}
	}
	wild.Withdraw()
	if d.LookupListener(ap("127.0.0.1:7000")) {
		t.Errorf("LookupListener finds a withdrawn listener")
	}
}

// TCP listener entries are no UDP bindings: a datagram to their port finds nobody, and a UDP
// binding on the port is no listener.
func TestListenerNotUDP(t *testing.T) {
	d, _ := openTest(t)
	mustPublish(t, d, ListenerEntry(unix.AF_INET, ap("0.0.0.0:7000"), "tcp.a"))
	if got := d.Lookup(ap("127.0.0.1:7000"), ap("127.0.0.1:5000"), nil); len(got) != 0 {
		t.Errorf("UDP Lookup returns the TCP listener: %v", inboxes(got))
	}
	mustPublish(t, d, v4("udp.a", "0.0.0.0:7001"))
	if d.LookupListener(ap("127.0.0.1:7001")) {
		t.Errorf("LookupListener returns a UDP binding")
	}
	if got := d.Lookup(ap("127.0.0.1:7001"), ap("127.0.0.1:5000"), nil); len(got) != 1 || got[0].Stream {
		t.Errorf("UDP Lookup = %+v, want the UDP binding", got)
	}
	var w [entryWords]uint64
	encode(&w, ListenerEntry(unix.AF_INET, ap("0.0.0.0:7002"), "tcp.c"), 1234, 5, 6)
	if r, ok := decode(&w); !ok || !r.Stream || r.Local != ap("0.0.0.0:7002") {
		t.Errorf("decode(encode(listener)) = %+v, %v", r, ok)
	}
}

// AF_INET6 listeners are found as the kernel connects to them: a dual-stack wildcard by IPv4
// and IPv6 destinations, a v6only one by IPv6 only, one bound to ::1 by ::1 only.
func TestLookupListenerIPv6(t *testing.T) {
	d, _ := openTest(t)
	mustPublish(t, d, ListenerEntry(unix.AF_INET6, ap("[::]:7000"), "tcp.dual"))
	v6only := ListenerEntry(unix.AF_INET6, ap("[::]:7001"), "tcp.v6only")
	v6only.V6Only = true
	mustPublish(t, d, v6only)
	mustPublish(t, d, ListenerEntry(unix.AF_INET6, ap("[::1]:7002"), "tcp.lo6"))
	for _, c := range []struct {
		dst  string
		want bool
	}{
		{"127.0.0.1:7000", true},
		{"[::ffff:127.0.0.1]:7000", true},
		{"[::1]:7000", true},
		{"127.0.0.1:7001", false},
		{"[::1]:7001", true},
		{"[::1]:7002", true},
		{"127.0.0.1:7002", false},
		{"[::2]:7002", false},
	} {
		if got := d.LookupListener(ap(c.dst)); got != c.want {
			t.Errorf("LookupListener(%s) = %v, want %v", c.dst, got, c.want)
		}
	}
}
