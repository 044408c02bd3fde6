package xdp

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The tests build two network namespaces joined by a veth pair and run their body in a child
// process started with `ip netns exec` in namespace A (where the transport, its XDP program and
// AF_XDP sockets live); side B holds plain kernel sockets, made on a thread switched into B.

// topo is a test topology.
type topo struct {
	nsA, nsB     string
	ifA, ifB     string
	addrA, addrB netip.Addr
}

const (
	envNSA    = "GOXIO_XDPT_NSA"
	envNSB    = "GOXIO_XDPT_NSB"
	envIFA    = "GOXIO_XDPT_IFA"
	envIFB    = "GOXIO_XDPT_IFB"
	envAddrA  = "GOXIO_XDPT_ADDRA"
	envAddrB  = "GOXIO_XDPT_ADDRB"
	envHelper = "GOXIO_XDPT_HELPER"
)

var topoSeq int

// TestMain runs the netpoller helper role before the testing package starts anything.
func TestMain(m *testing.M) {
	if os.Getenv(envHelper) != "" {
		os.Exit(helperMain())
	}
	os.Exit(m.Run())
}

// run runs a command and fails the test with its output when it fails.
func run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// childTopo returns the topology when this process is the child inside namespace A.
func childTopo() *topo {
	if os.Getenv(envNSA) == "" {
		return nil
	}
	return &topo{nsA: os.Getenv(envNSA), nsB: os.Getenv(envNSB), ifA: os.Getenv(envIFA), ifB: os.Getenv(envIFB),
		addrA: netip.MustParseAddr(os.Getenv(envAddrA)), addrB: netip.MustParseAddr(os.Getenv(envAddrB))}
}

// newTopo creates the namespaces and the veth pair, up, with 10.201.N.1 (A) and 10.201.N.2
// (B), deleted when the test ends.
func newTopo(t testing.TB) *topo {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("the AF_XDP transport tests need root to build their namespaces")
	}
	topoSeq++
	id := fmt.Sprintf("%d%d", os.Getpid()%100000, topoSeq)
	tp := &topo{nsA: "gxxt" + id + "a", nsB: "gxxt" + id + "b", ifA: "gxta" + id, ifB: "gxtb" + id,
		addrA: netip.AddrFrom4([4]byte{10, 201, byte(topoSeq), 1}), addrB: netip.AddrFrom4([4]byte{10, 201, byte(topoSeq), 2})}
	run(t, "ip", "netns", "add", tp.nsA)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", tp.nsA).Run() })
	run(t, "ip", "netns", "add", tp.nsB)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", tp.nsB).Run() })
	run(t, "ip", "-n", tp.nsA, "link", "add", tp.ifA, "type", "veth", "peer", "name", tp.ifB, "netns", tp.nsB)
	for _, s := range []struct {
		ns, ifn string
		a       netip.Addr
	}{{tp.nsA, tp.ifA, tp.addrA}, {tp.nsB, tp.ifB, tp.addrB}} {
		run(t, "ip", "-n", s.ns, "addr", "add", s.a.String()+"/24", "dev", s.ifn)
		run(t, "ip", "-n", s.ns, "link", "set", s.ifn, "up")
		run(t, "ip", "-n", s.ns, "link", "set", "lo", "up")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		a := run(t, "ip", "-n", tp.nsA, "-o", "link", "show", tp.ifA)
		b := run(t, "ip", "-n", tp.nsB, "-o", "link", "show", tp.ifB)
		if strings.Contains(a, "LOWER_UP") && strings.Contains(b, "LOWER_UP") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("veth pair not up after 5 s:\n%s%s", a, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return tp
}

func (tp *topo) environ() []string {
	return append(os.Environ(), envNSA+"="+tp.nsA, envNSB+"="+tp.nsB, envIFA+"="+tp.ifA, envIFB+"="+tp.ifB,
		envAddrA+"="+tp.addrA.String(), envAddrB+"="+tp.addrB.String())
}

// inTopo runs body in a child process inside namespace A of a fresh topology (or directly
// when this process is that child). The child's output is the test's log.
func inTopo(t *testing.T, body func(t *testing.T, tp *topo)) {
	t.Helper()
	if tp := childTopo(); tp != nil {
		body(t, tp)
		return
	}
	tp := newTopo(t)
	name := "^" + strings.ReplaceAll(t.Name(), "/", "$/^") + "$"
	args := []string{"netns", "exec", tp.nsA, os.Args[0], "-test.run", name, "-test.v", "-test.count=1", "-test.timeout=120s"}
	cmd := exec.Command("ip", args...)
	cmd.Env = tp.environ()
	out, err := cmd.CombinedOutput()
	t.Logf("child in %s:\n%s", tp.nsA, out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("child did not run %s", t.Name())
	}
}

// inNetns runs f on a thread switched into network namespace ns.
func inNetns(t testing.TB, ns string, f func()) {
	t.Helper()
	runtime.LockOSThread()
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("open own netns: %v", err)
	}
	defer unix.Close(orig)
	target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("open netns %s: %v", ns, err)
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("setns %s: %v", ns, err)
	}
	defer func() {
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			t.Errorf("setns back from %s: %v", ns, err)
			return
		}
		runtime.UnlockOSThread()
	}()
	f()
}

// kernelSocket opens a kernel UDP socket bound to addr in ns (or in this namespace when ns is
// ""), with a receive timeout.
func kernelSocket(t testing.TB, ns string, addr netip.AddrPort) int {
	t.Helper()
	var fd int
	open := func() {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("socket: %v", err)
		}
		if err := unix.Bind(fd, sa4(addr)); err != nil {
			unix.Close(fd)
			t.Fatalf("bind %v in %s: %v", addr, ns, err)
		}
	}
	if ns == "" {
		open()
	} else {
		inNetns(t, ns, open)
	}
	tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func sa4(a netip.AddrPort) *unix.SockaddrInet4 {
	return &unix.SockaddrInet4{Addr: a.Addr().As4(), Port: int(a.Port())}
}

func addrOf(sa unix.Sockaddr) netip.AddrPort {
	if a, ok := sa.(*unix.SockaddrInet4); ok {
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	}
	return netip.AddrPort{}
}

// nonblocking is a nonblock function for NewUDP.
func nonblocking(v bool) func() bool { return func() bool { return v } }

// tsock is a transport socket under test: its kernel fd and its UDP.
type tsock struct {
	fd int
	u  *UDP
}

// newTsock makes a kernel UDP socket in this namespace and its transport, bound to addr when
// addr is valid.
func newTsock(t testing.TB, e *Env, addr netip.AddrPort) *tsock {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	s := &tsock{fd: fd, u: e.NewUDP(nonblocking(false))}
	if addr.IsValid() {
		if err := unix.Bind(fd, sa4(addr)); err != nil {
			t.Fatalf("bind %v: %v", addr, err)
		}
		s.u.Bound(fd)
	}
	t.Cleanup(s.close)
	return s
}

func (s *tsock) close() {
	if s.fd >= 0 {
		s.u.Close()
		unix.Close(s.fd)
		s.fd = -1
	}
}

func (s *tsock) local() netip.AddrPort {
	sa, _ := unix.Getsockname(s.fd)
	return addrOf(sa)
}

// newEnv makes an Env for the test, closed at its end after the sockets (cleanups run in
// reverse order).
func newEnv(t testing.TB, p Params) *Env {
	t.Helper()
	e, err := NewEnv(p, nil)
	if err != nil {
		t.Fatalf("NewEnv: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Env.Close: %v", err)
		}
	})
	return e
}

// checkNoLeak fails when any frame of the Env is held (in a socket queue or a caller).
func checkNoLeak(t testing.TB, e *Env) {
	t.Helper()
	for _, r := range e.RingStats() {
		a := r.Accounting
		if a.RxHeld != 0 || a.TxHeld != 0 || a.RxKernel != a.RxFrames || a.TxFree+a.TxKernel != a.TxFrames {
			t.Errorf("%s queue %d: frames held: %+v", r.Ifname, r.Queue, a)
		}
	}
}
