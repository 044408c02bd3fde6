package discovery

import (
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUDPPortFree: a port is free until a UDP entry (a binding, a connected socket, a group
// membership) has it, and again once that entry is withdrawn; a listening TCP socket's port
// stays free for UDP; the answer follows every change of the table, including one made through
// another mapping of the segment (another process).
func TestUDPPortFree(t *testing.T) {
	d, dir := openTest(t)
	other := openAgain(t, dir)
	for _, p := range []uint16{5000, 5001, 6000} {
		if !d.UDPPortFree(p) {
			t.Fatalf("port %d taken in an empty table", p)
		}
	}
	h := mustPublish(t, other, v4("a", "127.0.0.1:5000"))
	if d.UDPPortFree(5000) {
		t.Errorf("port 5000 free after another mapping published a binding to it")
	}
	if !d.UDPPortFree(6000) {
		t.Errorf("port 6000 taken by a binding to 5000")
	}
	l := mustPublish(t, d, Entry{Family: unix.AF_INET, Local: ap("0.0.0.0:6000"), Inbox: "l", Stream: true})
	if !d.UDPPortFree(6000) {
		t.Errorf("a TCP listener took UDP port 6000")
	}
	c := mustPublish(t, d, Entry{Family: unix.AF_INET6, Local: ap("[::]:5001"), Peer: ap("[::1]:9"), Inbox: "c"})
	if d.UDPPortFree(5001) {
		t.Errorf("port 5001 free with a connected socket bound to it")
	}
	h.Withdraw()
	if !d.UDPPortFree(5000) {
		t.Errorf("port 5000 taken after its binding was withdrawn")
	}
	c.Withdraw()
	l.Withdraw()
	if !d.UDPPortFree(5001) || !d.UDPPortFree(6000) {
		t.Errorf("ports taken after every entry was withdrawn")
	}
	// A free answer agrees with Receiver for every port the table holds.
	mustPublish(t, other, v4("b", "127.0.0.2:7000"))
	for _, p := range []uint16{7000, 7000 + portsBits, 7001} {
		dst := netip.AddrPortFrom(ad("127.0.0.2"), p)
		if d.UDPPortFree(p) && d.Receiver(dst) {
			t.Errorf("port %d free but Receiver(%v) found a socket", p, dst)
		}
	}
	if !d.UDPPortFree(7001) {
		t.Errorf("port 7001 taken by a binding to 7000")
	}
}
