package discovery

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// lazyListener is the entry the preload library writes for a listener of a process without its
// engine (shim/preload/lazy_listen.c).
func lazyListener(family int, local string, v6only bool) Entry {
	e := ListenerEntry(family, ap(local), "goxio.0.tcp.1")
	e.V6Only, e.Lazy = v6only, true
	return e
}

// TestTakeOverListener: the engine that adopts a listener published from C takes its entry over
// in place (same slot and claim, Lazy cleared): the listener is found before, during and after,
// and never twice; entries of other processes or of other sockets are not taken.
func TestTakeOverListener(t *testing.T) {
	d, _ := openTest(t)
	lazy := mustPublish(t, d, lazyListener(unix.AF_INET6, "[::]:7100", true))
	e6, _ := normalize(lazyListener(unix.AF_INET6, "[::]:7101", false))
	foreign, ok := d.claim(e6, deadPid(t), 5) // another process's (a parent's, say)
	if !ok {
		t.Fatal("claim")
	}
	mustPublish(t, d, lazyListener(unix.AF_INET, "127.0.0.1:7102", false))
	if !d.LookupListener(ap("[::1]:7100")) || d.LookupListener(ap("127.0.0.1:7100")) {
		t.Fatal("the lazy v6only listener is not found as the kernel connects to it")
	}

	// Another address, family or V6Only: not this socket's entry.
	for _, e := range []Entry{
		ListenerEntry(unix.AF_INET6, ap("[::1]:7100"), "goxio.0.tcp.1"),
		ListenerEntry(unix.AF_INET, ap("0.0.0.0:7100"), "goxio.0.tcp.1"),
		ListenerEntry(unix.AF_INET6, ap("[::]:7100"), "goxio.0.tcp.1"), // V6Only false
		ListenerEntry(unix.AF_INET6, ap("[::]:7101"), "goxio.0.tcp.1"), // the foreign one
	} {
		if _, ok := d.TakeOverListener(e); ok {
			t.Errorf("TakeOverListener(%+v) took an entry that is not the socket's", e)
		}
	}

	want := ListenerEntry(unix.AF_INET6, ap("[::]:7100"), "goxio.0.tcp.9")
	want.V6Only = true
	h, ok := d.TakeOverListener(want)
	if !ok {
		t.Fatal("TakeOverListener found no lazy entry")
	}
	if h.slot != lazy.slot || h.claim != lazy.claim {
		t.Errorf("taken over into slot %d claim %d, want slot %d claim %d", h.slot, h.claim, lazy.slot, lazy.claim)
	}
	n := 0
	for _, e := range d.Listeners() {
		if e.Local.Port() != 7100 {
			continue
		}
		n++
		want.PID = os.Getpid()
		if e != want {
			t.Errorf("entry after the take-over %+v, want %+v", e, want)
		}
	}
	if n != 1 {
		t.Errorf("%d entries for the listener after the take-over, want 1", n)
	}
	if _, ok := d.TakeOverListener(want); ok {
		t.Error("taken over twice")
	}
	// The preload library's withdrawal of its lazy entry (by slot and claim) is a no-op now; the
	// engine's handle withdraws it.
	if !d.LookupListener(ap("[::1]:7100")) {
		t.Error("the listener is gone after the take-over")
	}
	h.Withdraw()
	if d.LookupListener(ap("[::1]:7100")) {
		t.Error("the engine's Withdraw left the listener")
	}
	foreign.Withdraw() // not ours to withdraw through a handle of another pid: a no-op
	if !d.LookupListener(ap("[::1]:7101")) {
		t.Error("the foreign lazy entry is gone")
	}
}

// TestSweepDir: the sweep every engine runs at its start removes dead processes' entries (a
// lazy listener of a process that died without an engine above all) and keeps the living's;
// without a segment it creates none.
func TestSweepDir(t *testing.T) {
	d, dir := openTest(t)
	e, _ := normalize(lazyListener(unix.AF_INET, "127.0.0.1:7200", false))
	if _, ok := d.claim(e, deadPid(t), 42); !ok {
		t.Fatal("claim")
	}
	mustPublish(t, d, lazyListener(unix.AF_INET, "127.0.0.1:7201", false))
	n, err := SweepDir(dir, unix.Geteuid(), testNetNS)
	if err != nil || n != 1 {
		t.Errorf("SweepDir = %d, %v; want 1, nil", n, err)
	}
	if d.LookupListener(ap("127.0.0.1:7200")) || !d.LookupListener(ap("127.0.0.1:7201")) {
		t.Errorf("after the sweep: dead listener %v (want false), live %v (want true)",
			d.LookupListener(ap("127.0.0.1:7200")), d.LookupListener(ap("127.0.0.1:7201")))
	}
	empty := t.TempDir()
	if n, err := SweepDir(empty, unix.Geteuid(), testNetNS); n != 0 || err != nil {
		t.Errorf("SweepDir of a folder without a segment = %d, %v", n, err)
	}
	if names, _ := os.ReadDir(empty); len(names) != 0 {
		t.Errorf("SweepDir created %v", names)
	}
}

// TestLazyNeedsStream: only a listener may be lazy.
func TestLazyNeedsStream(t *testing.T) {
	d, _ := openTest(t)
	e := v4("udp.lazy", "127.0.0.1:7300")
	e.Lazy = true
	if _, err := d.Publish(e); err == nil {
		t.Error("a lazy UDP binding was published")
	}
}
