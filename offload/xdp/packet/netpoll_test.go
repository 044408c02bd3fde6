package packet

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// childEnv makes the test binary, re-executed by TestConnFDs, run netpollProbe instead of the
// tests.
const childEnv = "GOXIO_PACKET_NETPOLL_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(netpollProbe())
	}
	os.Exit(m.Run())
}

// pollerFDs lists this process's descriptors that belong to the Go netpoller (epoll instances and
// eventfds), by the /proc/self/fd link names, read with raw syscalls.
func pollerFDs() ([]string, error) {
	set, err := openFDSet()
	if err != nil {
		return nil, err
	}
	var found []string
	link := make([]byte, 256)
	for name := range set {
		n, err := unix.Readlink("/proc/self/fd/"+name, link)
		if err != nil {
			continue // closed meanwhile
		}
		target := string(link[:n])
		if strings.Contains(target, "[eventpoll]") || strings.Contains(target, "[eventfd]") {
			found = append(found, name+"->"+target)
		}
	}
	slices.Sort(found)
	return found, nil
}

// netpollProbe runs every netlink path of the package (and Build/Parse) in a fresh process, before
// the testing framework starts its timers, and reports on stdout the netpoller descriptors before
// and after. Exit status 0 when the paths ran.
func netpollProbe() int {
	before, err := pollerFDs()
	if err != nil {
		fmt.Println("probe: list fds:", err)
		return 2
	}
	fail := func(what string, err error) int {
		fmt.Printf("probe: %s: %v\n", what, err)
		return 2
	}
	fdsBefore, err := openFDSet()
	if err != nil {
		return fail("list fds", err)
	}
	c, err := Open()
	if err != nil {
		return fail("Open", err)
	}
	kept := map[string]bool{}
	for _, fd := range c.FDs() {
		kept[fmt.Sprint(fd)] = true
	}
	lo, err := c.LinkByIndex(1)
	if err != nil {
		return fail("LinkByIndex", err)
	}
	if _, err := c.LinkByName(lo.Name); err != nil {
		return fail("LinkByName", err)
	}
	r, err := c.RouteGet(a4([4]byte{127, 0, 0, 1}), netip.Addr{}, 0)
	if err != nil || r.Type != RouteLocal {
		return fail("RouteGet", fmt.Errorf("%+v, %v", r, err))
	}
	// Errors of these two are answers (no entry on loopback); the paths are what matters.
	_, _ = c.NeighGet(1, a4([4]byte{127, 0, 0, 2}))
	_ = c.NeighNudge(1, a4([4]byte{127, 0, 0, 2}))
	cache := NewNeighCache(time.Second, time.Second, true)
	if _, _, err := cache.Lookup(c, 1, a4([4]byte{127, 0, 0, 3}), 0); err != nil {
		return fail("NeighCache.Lookup", err)
	}
	if _, err := c.LinkByIndex(99999); err == nil {
		return fail("LinkByIndex(99999)", fmt.Errorf("no error"))
	}
	buf := make([]byte, 128)
	h := Header{TTL: 1}
	n, err := Build(buf, &h, [][]byte{[]byte("x")}, 1, 1500)
	if err != nil {
		return fail("Build", err)
	}
	if _, err := Parse(buf[:n], &h, VerifyAll); err != nil {
		return fail("Parse", err)
	}
	withConn, err := openFDSet()
	if err != nil {
		return fail("list fds", err)
	}
	var extra []string
	for fd := range withConn {
		if !fdsBefore[fd] && !kept[fd] {
			extra = append(extra, fd)
		}
	}
	poller, err := pollerFDs()
	if err != nil {
		return fail("list fds", err)
	}
	if err := c.Close(); err != nil {
		return fail("Close", err)
	}
	afterClose, err := openFDSet()
	if err != nil {
		return fail("list fds", err)
	}
	var left []string
	for fd := range afterClose {
		if !fdsBefore[fd] && !slices.ContainsFunc(poller, func(p string) bool { return strings.HasPrefix(p, fd+"->") }) {
			left = append(left, fd)
		}
	}
	// The netpoller's two descriptors are no extra: the runtime's, not the package's.
	extra = slices.DeleteFunc(extra, func(fd string) bool {
		return slices.ContainsFunc(poller, func(p string) bool { return strings.HasPrefix(p, fd+"->") })
	})
	fmt.Printf("before=%q\nextra=%q\nleft=%q\npoller=%d\n", before, extra, left, len(poller))
	return 0
}

// openFDSet returns this process's open descriptors (getdents of /proc/self/fd, without the
// directory's own).
func openFDSet() (map[string]bool, error) {
	dfd, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	buf := make([]byte, 8192)
	out := map[string]bool{}
	for {
		n, err := unix.Getdents(dfd, buf)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		var names []string
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
		for _, name := range names {
			if name != fmt.Sprint(dfd) {
				out[name] = true
			}
		}
	}
	return out, nil
}

// TestConnFDs checks, in a fresh process, which descriptors the package keeps: the netlink
// connection's socket (FDs reports it) and the Go netpoller's epoll fd and eventfd, which the
// connection's socket starts (the engine starts the netpoller itself first, with its
// descriptors high and internal). Nothing else, and nothing once the connection is closed.
func TestConnFDs(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe process: %v\n%s", err, out)
	}
	text := string(out)
	if !strings.Contains(text, "before=[]\n") {
		t.Fatalf("the probe process had netpoller descriptors before the probe, the check proves nothing:\n%s", text)
	}
	if !strings.Contains(text, "extra=[]\n") || !strings.Contains(text, "left=[]\n") {
		t.Fatalf("the package kept descriptors it does not report:\n%s", text)
	}
	if !strings.Contains(text, "poller=2\n") {
		t.Fatalf("the connection did not start the netpoller (the check cannot see it):\n%s", text)
	}
}

// TestPollerFDsSeesNetpoller makes sure pollerFDs would notice a netpoller: os.Pipe's files are
// registered with it (the check of TestConnFDs can fail).
func TestPollerFDsSeesNetpoller(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	defer r.Close()
	defer w.Close()
	if err := r.SetReadDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatalf("pipe is not pollable: %v", err)
	}
	fds, err := pollerFDs()
	if err != nil || len(fds) == 0 {
		t.Fatalf("pollerFDs = %v, %v; want the netpoller's epoll", fds, err)
	}
}
