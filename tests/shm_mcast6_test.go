package tests

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/goxio/goxio/stats"
	"github.com/goxio/goxio/tests/internal/testutil"
)

// IPv6 multicast, and IPv4 groups joined on dual-stack sockets, through rings. The kernel loops
// a group's IPv6 datagrams back to the host's members on an ordinary interface, not on lo: the
// test runs in a network namespace of its own with a veth interface gx0 (fd00::1, 10.9.0.1; no
// link-local address).

// mcast6NetEnv marks a test binary already re-run inside its own network namespace.
const mcast6NetEnv = "GOXIO_TEST_MCAST6_NETNS"

// mcast6Net makes sure the test runs in a network namespace of its own with gx0 set up: it
// re-runs the test under `unshare --net` and returns true (the caller returns, the re-run's
// result is the test's); in the re-run it sets the interfaces up and returns false.
func mcast6Net(t *testing.T) bool {
	t.Helper()
	if os.Getenv(mcast6NetEnv) == "" {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(testutil.Program(t, "unshare", "util-linux"), "--net", exe, "-test.run", "^"+t.Name()+"$",
			"-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), mcast6NetEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("in a private network namespace:\n%s", testutil.Tail(string(out), 20000))
		if err != nil {
			t.Fatalf("the test failed in its network namespace: %v", err)
		}
		return true
	}
	for _, args := range [][]string{
		{"ip", "link", "set", "lo", "up"},
		{"ip", "link", "add", "gx0", "type", "veth", "peer", "name", "gx1"},
		{"sysctl", "-qw", "net.ipv6.conf.gx0.addr_gen_mode=1"},
		{"ip", "link", "set", "gx0", "up"},
		{"ip", "addr", "add", "fd00::1/64", "dev", "gx0", "nodad"},
		{"ip", "addr", "add", "10.9.0.1/24", "dev", "gx0"},
		{"ip", "route", "add", "224.0.0.0/4", "dev", "gx0"},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
	}
	return false
}

// TestShmMulticast6: a publisher's datagrams to a group reach two goxio members on gx0 each
// exactly once, intact, from the publisher's address and port as the kernel reports it to an
// AF_INET6 socket, through rings (their receive statistics count every datagram and byte there,
// none through the kernel, and list the group):
//   - interface-local: an IPv6 group of scope 1 (ff01::/16) never leaves the host, and with only
//     goxio members the publisher skips the kernel send (its statistics count every datagram
//     through rings, the first, binding datagram through the kernel);
//   - site-local: an ff15:: group goes through the kernel too (other hosts); the members drop
//     the kernel's loopback copies;
//   - both also with sendmmsg (4 datagrams a call);
//   - mapped: dual-stack members joined to an IPv4 group (IP_ADD_MEMBERSHIP on AF_INET6 sockets)
//     and a dual-stack publisher sending to its IPv4-mapped address: IPv4 on the wire, the source
//     ::ffff:10.9.0.1 at the members;
//   - IPv4 on lo: an AF_INET publisher with IP_MULTICAST_IF 127.0.0.1 (host-only), a dual-stack
//     member (source ::ffff:127.0.0.1) and an AF_INET one (127.0.0.1) of its group.
func TestShmMulticast6(t *testing.T) {
	if mcast6Net(t) {
		return
	}
	for _, c := range []struct {
		name, group, dst, source string
		hostOnly, mmsg           bool
		v4                       bool // IPv4 on lo: an AF_INET publisher, the second member AF_INET
	}{
		{"interface-local", "ff01::1:77", "ff01::1:77", "fd00::1", true, false, false},
		{"interface-local sendmmsg", "ff01::1:77", "ff01::1:77", "fd00::1", true, true, false},
		{"site-local", "ff15::1:77", "ff15::1:77", "fd00::1", false, false, false},
		{"site-local sendmmsg", "ff15::1:77", "ff15::1:77", "fd00::1", false, true, false},
		{"mapped", "239.255.77.9", "::ffff:239.255.77.9", "::ffff:10.9.0.1", false, false, false},
		{"IPv4 on lo", "239.255.77.10", "239.255.77.10", "::ffff:127.0.0.1", true, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newShmHarness(t)
			const n, w = 2000, 16
			port := testutil.FreePort(t, "udp")
			var rxs []*shmProc
			var fds []int
			iface := "gx0"
			if c.v4 {
				iface = "lo"
			}
			for i := range 2 {
				args := []string{"rx", "-6", "-I", iface, "-S", c.source}
				if c.v4 && i == 1 {
					args = []string{"rx"} // AF_INET, joined on 127.0.0.1
				}
				rx := h.start(fmt.Sprintf("member %d", i), h.env(), nil, h.udp, append(args,
					"-p", strconv.Itoa(port), "-m", c.group, "-n", strconv.Itoa(n), "-a", strconv.Itoa(w), "-i", "5000", "-W")...)
				_, fd := rx.ready()
				rxs, fds = append(rxs, rx), append(fds, fd)
			}
			args := []string{"tx", "-6", "-I", "gx0", "-p", strconv.Itoa(port), "-d", c.dst,
				"-m", "-U", "-s", "1", "-n", strconv.Itoa(n), "-a", strconv.Itoa(w), "-A", "2", "-W"}
			if c.v4 {
				args = append([]string{"tx"}, args[4:]...) // AF_INET, IP_MULTICAST_IF 127.0.0.1
			}
			if c.mmsg {
				args = append(args, "-M")
			}
			tx := h.start("publisher", h.env(), nil, h.udp, args...)
			_, tfd := tx.ready()
			if ok, _ := tx.sent(60 * time.Second); ok != n {
				t.Errorf("publisher: sent %d, want %d", ok, n)
			}
			var bytes uint64
			for seq := range n {
				bytes += datagramBytes(1, seq)
			}
			for i, rx := range rxs {
				s := rx.summary(60 * time.Second)
				requireIntact(t, fmt.Sprintf("member %d", i), s)
				if s.total != n || s.gaps != 0 || s.senders[1].got != n {
					t.Errorf("member %d: %d datagrams, %d missing; want each of %d exactly once\n%s", i, s.total, s.gaps, n, s.text)
				}
				ss := h.socketStats(rx, fds[i])
				k := ss.Counters
				if ss.Transport != stats.TransportSHM || k.RxPackets != n || k.RxBytes != bytes || k.RxOSPackets != 0 {
					t.Errorf("member %d socket: transport %s (%s), rx through rings %d datagrams %d bytes, through the kernel %d; "+
						"want shm, %d, %d, 0", i, ss.Transport, ss.Reason, k.RxPackets, k.RxBytes, k.RxOSPackets, n, bytes)
				}
				if g := netip.MustParseAddr(c.group); !slices.Contains(ss.Groups, g) {
					t.Errorf("member %d socket: groups %v in the statistics, want %v among them", i, ss.Groups, g)
				}
				t.Logf("member %d: rx through rings %d datagrams %d bytes, through the kernel %d; groups %v", i, k.RxPackets, k.RxBytes, k.RxOSPackets, ss.Groups)
			}
			ts := h.socketStats(tx, tfd)
			tc := ts.Counters
			// A datagram counts as sent through the kernel when the kernel sent it (its ring
			// copies too); the first, binding datagram went to the kernel.
			wantRings, wantOS := uint64(n), uint64(1)
			if !c.hostOnly {
				wantRings, wantOS = 0, n+1
			}
			if ts.Transport != stats.TransportSHM || tc.TxPackets != wantRings || tc.TxOSPackets != wantOS {
				t.Errorf("publisher socket: transport %s (%s), tx through rings alone %d, through the kernel %d; want shm, %d, %d",
					ts.Transport, ts.Reason, tc.TxPackets, tc.TxOSPackets, wantRings, wantOS)
			}
			tx.exit(30 * time.Second)
			for _, rx := range rxs {
				rx.exit(30 * time.Second)
			}
			h.requireClean()
		})
	}
}
