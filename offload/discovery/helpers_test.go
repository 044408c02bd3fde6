package discovery

import (
	"net/netip"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// testNetNS is the namespace number tests name their segments with.
const testNetNS = 4026531840

// openTest opens a fresh segment in a temporary folder.
func openTest(t *testing.T) (*Dir, string) {
	t.Helper()
	dir := t.TempDir()
	d, err := Open(dir, unix.Geteuid(), testNetNS)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d, dir
}

// openAgain maps the segment of dir once more, as another process of the namespace does.
func openAgain(t *testing.T, dir string) *Dir {
	t.Helper()
	d, err := Open(dir, unix.Geteuid(), testNetNS)
	if err != nil {
		t.Fatalf("Open again: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// mustPublish publishes e or fails the test.
func mustPublish(t *testing.T, d *Dir, e Entry) Handle {
	t.Helper()
	h, err := d.Publish(e)
	if err != nil {
		t.Fatalf("Publish %+v: %v", e, err)
	}
	return h
}

// ap parses an address and port.
func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// ad parses an address.
func ad(s string) netip.Addr { return netip.MustParseAddr(s) }

// v4 is an AF_INET binding.
func v4(inbox, local string) Entry {
	return Entry{Family: unix.AF_INET, Local: ap(local), Inbox: inbox}
}

// v6 is an AF_INET6 binding.
func v6(inbox, local string) Entry {
	return Entry{Family: unix.AF_INET6, Local: ap(local), Inbox: inbox}
}

// inboxes returns the inbox names of a lookup result.
func inboxes(es []Entry) []string {
	var s []string
	for _, e := range es {
		s = append(s, e.Inbox)
	}
	return s
}

// lookupOne returns the inbox Lookup chose for a unicast datagram, "" for
// none, and fails when it returned several.
func lookupOne(t *testing.T, d *Dir, dst, src string) string {
	t.Helper()
	got := d.Lookup(ap(dst), ap(src), nil)
	switch len(got) {
	case 0:
		return ""
	case 1:
		if got[0].PID != os.Getpid() {
			t.Errorf("Lookup %s from %s: PID %d, want %d", dst, src, got[0].PID, os.Getpid())
		}
		return got[0].Inbox
	}
	t.Fatalf("Lookup %s from %s: %d unicast results %v", dst, src, len(got), inboxes(got))
	return ""
}

// deadPid returns the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatalf("start /bin/true: %v", err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p.Pid
}
