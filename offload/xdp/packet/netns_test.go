package packet

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// topo is two network namespaces joined by a veth pair, created for one test and deleted by its
// cleanup (deleting a namespace deletes its end of the pair):
//
//	nsA: ifA 02:00:00:aa:00:01 10.99.0.1/24 mtu 1400  <->  nsB: ifB 02:00:00:bb:00:02 10.99.0.2/24 mtu 1400
type topo struct {
	nsA, nsB   string
	ifA, ifB   string
	macA, macB MAC
	ipA, ipB   [4]byte
}

func run(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func newTopo(t *testing.T) *topo {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("these tests create network namespaces and need root (uid %d)", os.Geteuid())
	}
	id := fmt.Sprintf("%d%03d", os.Getpid()%100000, rand.IntN(1000))
	tp := &topo{
		nsA: "gxpkt-a-" + id, nsB: "gxpkt-b-" + id, ifA: "pka" + id, ifB: "pkb" + id,
		macA: MAC{2, 0, 0, 0xaa, 0, 1}, macB: MAC{2, 0, 0, 0xbb, 0, 2},
		ipA: [4]byte{10, 99, 0, 1}, ipB: [4]byte{10, 99, 0, 2},
	}
	for _, ns := range []string{tp.nsA, tp.nsB} {
		run(t, "ip", "netns", "add", ns)
		t.Cleanup(func() {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				t.Errorf("ip netns del %s: %v\n%s", ns, err, out)
			}
		})
	}
	run(t, "ip", "link", "add", tp.ifA, "netns", tp.nsA, "type", "veth", "peer", "name", tp.ifB, "netns", tp.nsB)
	for _, s := range []struct {
		ns, ifname, mac, addr string
	}{{tp.nsA, tp.ifA, tp.macA.String(), "10.99.0.1/24"}, {tp.nsB, tp.ifB, tp.macB.String(), "10.99.0.2/24"}} {
		run(t, "ip", "-n", s.ns, "link", "set", "lo", "up")
		run(t, "ip", "-n", s.ns, "link", "set", s.ifname, "address", s.mac, "mtu", "1400", "up")
		run(t, "ip", "-n", s.ns, "addr", "add", s.addr, "dev", s.ifname)
	}
	return tp
}

// inNS runs fn on an OS thread that has entered network namespace ns; sockets fn creates belong
// to ns for their whole life, whichever thread uses them later.
func inNS(t *testing.T, ns string, fn func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open own netns: %w", err)
			return
		}
		defer unix.Close(orig)
		target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open netns %s: %w", ns, err)
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			// The thread stays locked and ends with this goroutine: the runtime discards it.
			errc <- fmt.Errorf("setns back: %w", err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	if err := <-errc; err != nil {
		t.Fatalf("in netns %s: %v", ns, err)
	}
}

// connIn opens a netlink Conn in namespace ns, closed at cleanup.
func connIn(t *testing.T, ns string) *Conn {
	t.Helper()
	var c *Conn
	inNS(t, ns, func() (err error) { c, err = Open(); return err })
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c
}

// socketIn creates a socket in namespace ns, closed at cleanup.
func socketIn(t *testing.T, ns string, domain, typ, proto int) int {
	t.Helper()
	fd := -1
	inNS(t, ns, func() (err error) {
		fd, err = unix.Socket(domain, typ|unix.SOCK_CLOEXEC, proto)
		return err
	})
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// udpSocketIn creates a UDP socket in ns bound to addr:port with a receive timeout of ms.
func udpSocketIn(t *testing.T, ns string, addr [4]byte, port, ms int) int {
	t.Helper()
	fd := socketIn(t, ns, unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: addr, Port: port}); err != nil {
		t.Fatalf("bind %v:%d: %v", addr, port, err)
	}
	setRcvTimeout(t, fd, ms)
	return fd
}

func setRcvTimeout(t *testing.T, fd, ms int) {
	t.Helper()
	tv := unix.NsecToTimeval(int64(ms) * 1e6)
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatalf("SO_RCVTIMEO: %v", err)
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// packetSocketIn opens an AF_PACKET socket in ns bound to interface ifindex for every protocol,
// with a receive timeout of ms.
func packetSocketIn(t *testing.T, ns string, ifindex, ms int) int {
	t.Helper()
	fd := socketIn(t, ns, unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
		t.Fatalf("bind AF_PACKET to %d: %v", ifindex, err)
	}
	setRcvTimeout(t, fd, ms)
	return fd
}
