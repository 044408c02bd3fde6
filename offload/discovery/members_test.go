package discovery

import (
	"slices"
	"testing"
)

// TestLookupMembers: only sockets that joined the group (with a join admitting the source) are
// served through rings; IP_MULTICAST_ALL listeners, other groups, other ports and unicast
// destinations are not.
func TestLookupMembers(t *testing.T) {
	d, _ := openTest(t)
	join := func(inbox, local, group, source string) {
		e := v4(inbox, local)
		mustPublish(t, d, e)
		e.Group = ad(group)
		if source != "" {
			e.Source = ad(source)
		}
		mustPublish(t, d, e)
	}
	join("a", "0.0.0.0:7000", "239.1.1.1", "")
	join("b", "239.1.1.1:7000", "239.1.1.1", "")
	join("c", "0.0.0.0:7000", "239.1.1.1", "10.0.0.9") // source-specific: not from 10.0.0.1
	join("d", "0.0.0.0:7001", "239.1.1.1", "")         // other port
	join("e", "0.0.0.0:7000", "239.2.2.2", "")         // other group
	mustPublish(t, d, v4("f", "0.0.0.0:7000"))         // IP_MULTICAST_ALL listener, no join

	all := inboxes(d.Lookup(ap("239.1.1.1:7000"), ap("10.0.0.1:5000"), nil))
	slices.Sort(all)
	if want := []string{"a", "b", "e", "f"}; !slices.Equal(all, want) {
		t.Fatalf("Lookup = %v, want %v", all, want)
	}
	got := inboxes(d.LookupMembers(ap("239.1.1.1:7000"), ap("10.0.0.1:5000"), nil))
	slices.Sort(got)
	if want := []string{"a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("LookupMembers = %v, want %v", got, want)
	}
	got = inboxes(d.LookupMembers(ap("239.1.1.1:7000"), ap("10.0.0.9:5000"), nil))
	slices.Sort(got)
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("LookupMembers from the admitted source = %v, want %v", got, want)
	}
	if got := d.LookupMembers(ap("127.0.0.1:7000"), ap("10.0.0.1:5000"), nil); len(got) != 0 {
		t.Fatalf("LookupMembers of a unicast destination = %v", inboxes(got))
	}
}

// TestMulticastSender: the flag is found by the sender's address or its wildcard binding and
// port, and only while the entry carries it.
func TestMulticastSender(t *testing.T) {
	d, _ := openTest(t)
	e := v4("s", "0.0.0.0:6000")
	h := mustPublish(t, d, e)
	if d.MulticastSender(ap("10.0.0.1:6000")) {
		t.Fatal("unflagged binding reported as a multicast sender")
	}
	e.MulticastSender = true
	h.Update(e)
	for _, src := range []string{"10.0.0.1:6000", "127.0.0.1:6000"} {
		if !d.MulticastSender(ap(src)) {
			t.Fatalf("wildcard sender not found from %s", src)
		}
	}
	if d.MulticastSender(ap("10.0.0.1:6001")) {
		t.Fatal("sender found on another port")
	}
	s2 := v4("t", "10.0.0.2:6002")
	s2.MulticastSender = true
	mustPublish(t, d, s2)
	if !d.MulticastSender(ap("10.0.0.2:6002")) || d.MulticastSender(ap("10.0.0.3:6002")) {
		t.Fatal("specific-address sender: wrong match")
	}
	h.Withdraw()
	if d.MulticastSender(ap("10.0.0.1:6000")) {
		t.Fatal("withdrawn sender still found")
	}
}
