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

	"github.com/goxio/goxio/offload/transport"
)

// TestNoHiddenFDs runs the transport's whole path (Env, attach, bind, send through the kernel
// and the ring, receive through the ring, blocking receive with its sleep, join, stats, close) in
// a fresh process inside namespace A, after starting the Go netpoller as the engine does (one
// timer), and checks that the path leaves no descriptor open and starts no epoll instance or
// eventfd of its own (the netlink library uses the runtime's netpoller). The netpoller's own
// two descriptors appearing at the timer is the control that the check sees them.
func TestNoHiddenFDs(t *testing.T) {
	if childTopo() != nil {
		t.Fatalf("TestNoHiddenFDs runs from the parent process")
	}
	tp := newTopo(t)
	cmd := exec.Command("ip", "netns", "exec", tp.nsA, os.Args[0])
	cmd.Env = append(tp.environ(), envHelper+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("helper:\n%s", out)
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(l, " ")
		lines[k] = v
	}
	if lines["ok"] == "" {
		t.Fatalf("helper did not finish the path")
	}
	if lines["before"] != lines["after"] {
		t.Errorf("the transport's path left %q (before: %q)", lines["after"], lines["before"])
	}
	if lines["control"] == lines["nopoller"] || !strings.Contains(lines["control"], "eventpoll") {
		t.Errorf("control: the timer did not show a netpoller fd (%q, before it %q): the check sees nothing",
			lines["control"], lines["nopoller"])
	}
}

// helperMain is the helper process (TestMain): it writes its results with write(2).
func helperMain() int {
	say := func(format string, args ...any) { unix.Write(1, fmt.Appendf(nil, format+"\n", args...)) }
	tp := childTopo()
	if tp == nil {
		say("error no topology")
		return 1
	}
	nopoller, err := fdList(true)
	if err != nil {
		say("error %v", err)
		return 1
	}
	time.AfterFunc(time.Hour, func() {}).Stop() // the engine starts the netpoller (offload.StartNetpoller)
	control, _ := fdList(true)
	before, _ := fdList(false)
	if err := transportPath(tp); err != nil {
		say("error %v", err)
		return 1
	}
	after, _ := fdList(false)
	say("nopoller %s", strings.Join(nopoller, ","))
	say("control %s", strings.Join(control, ","))
	say("before %s", strings.Join(before, ","))
	say("after %s", strings.Join(after, ","))
	say("ok 1")
	return 0
}

// transportPath drives the transport without the testing package.
func transportPath(tp *topo) error {
	e, err := NewEnv(Params{RxPoll: 20, RxUDPPollOSRatio: 4}, nil)
	if err != nil {
		return err
	}
	defer e.Close()
	// The peer's socket in namespace B, made on this locked thread switched there and back.
	runtime.LockOSThread()
	orig, _ := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	nsb, err := unix.Open("/run/netns/"+tp.nsB, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	unix.Setns(nsb, unix.CLONE_NEWNET)
	b, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		err = unix.Bind(b, sa4(netip.AddrPortFrom(tp.addrB, 7400)))
	}
	unix.Setns(orig, unix.CLONE_NEWNET)
	unix.Close(orig)
	unix.Close(nsb)
	runtime.UnlockOSThread()
	if err != nil {
		return err
	}
	defer unix.Close(b)
	tv := unix.NsecToTimeval(int64(time.Second))
	unix.SetsockoptTimeval(b, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)

	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	u := e.NewUDP(func() bool { return false })
	defer u.Close()
	s := &tsock{fd: fd, u: u}
	ar := &arena{}
	m, err := unix.Mmap(-1, 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	defer unix.Munmap(m)
	ar.mem = m
	peer := netip.AddrPortFrom(tp.addrB, 7400)
	buf := make([]byte, 2048)
	for i := 0; i < 2000 && u.Counts().XDPTx == 0; i++ {
		if _, errno, _ := s.sendto(ar, []byte("ping"), peer, 0); errno != 0 {
			return errno
		}
		if _, _, err := unix.Recvfrom(b, buf, 0); err != nil {
			return fmt.Errorf("peer recv: %w", err)
		}
		var ts = unix.NsecToTimespec(int64(time.Millisecond))
		unix.Nanosleep(&ts, nil)
	}
	if u.Counts().XDPTx == 0 {
		return fmt.Errorf("no send through the ring: %+v", u.Counts())
	}
	for range 3 {
		unix.Sendto(b, []byte("pong"), 0, sa4(netip.AddrPortFrom(tp.addrA, s.local().Port())))
		if got, _, _, errno, _ := s.recvfrom(ar, 100, 0); errno != 0 || string(got) != "pong" {
			return fmt.Errorf("recv: %q %v", got, errno)
		}
	}
	// A blocking receive that sleeps (a short receive timeout expires).
	short := unix.NsecToTimeval(int64(20 * time.Millisecond))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &short)
	u.OptionSet(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
	if _, _, _, errno, _ := s.recvfrom(ar, 100, 0); errno != unix.EAGAIN {
		return fmt.Errorf("timed-out receive: %v", errno)
	}
	u.Join(fd, netip.MustParseAddr("239.9.9.9"), netip.Addr{})
	u.RingReady()
	u.Spin(true)
	u.Spin(false)
	if u.Bell() < 0 {
		return fmt.Errorf("no bell")
	}
	u.Rang()
	u.Quiet(true)
	u.HandOver()
	e.RingStats()
	e.Invalidate()
	_ = transport.KindXDP
	return nil
}

// fdList lists this process's fds with their targets (only the eventpoll and eventfd anonymous
// inodes when anon), reading /proc/self/fd with getdents(2) and readlink(2).
func fdList(anon bool) ([]string, error) {
	dir, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	var names []string
	buf := make([]byte, 8192)
	for range 1000 {
		n, err := unix.Getdents(dir, buf)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	var out []string
	lb := make([]byte, 256)
	for _, name := range names {
		if name == fmt.Sprint(dir) {
			continue
		}
		n, err := unix.Readlink("/proc/self/fd/"+name, lb)
		if err != nil {
			continue
		}
		if target := string(lb[:n]); !anon || strings.Contains(target, "eventpoll") || strings.Contains(target, "eventfd") {
			out = append(out, name+"="+target)
		}
	}
	return out, nil
}
