package xdp

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/xdp/packet"
)

// TestMain lets the test binary serve as the helper process of the tests that need a
// fresh process (SIGKILL of the owner, descriptor check): with GOXIO_XSK_HELPER set it
// runs that role and exits before the testing package starts anything (its timeout
// timer would start the Go netpoller).
func TestMain(m *testing.M) {
	if role := os.Getenv("GOXIO_XSK_HELPER"); role != "" {
		os.Exit(helperMain(role, os.Getenv("GOXIO_XSK_NS"), os.Getenv("GOXIO_XSK_IF")))
	}
	os.Exit(m.Run())
}

// helperMain runs one helper role in namespace ns on interface ifname. It writes its
// results to fd 1 with write(2) and uses no os.File, timer or goroutine.
func helperMain(role, ns, ifname string) int {
	say := func(format string, args ...any) { unix.Write(1, fmt.Appendf(nil, format+"\n", args...)) }
	runtime.LockOSThread()
	nsfd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		say("error open netns %s: %v", ns, err)
		return 1
	}
	if err := unix.Setns(nsfd, unix.CLONE_NEWNET); err != nil {
		say("error setns %s: %v", ns, err)
		return 1
	}
	unix.Close(nsfd)
	switch role {
	case "own":
		return helperOwn(ifname, say)
	case "fds":
		return helperFDs(ifname, say)
	}
	say("error unknown role %q", role)
	return 1
}

// helperOwn attaches the program and registers a socket, says "ready ID MODE", then
// waits for its standard input to close (the test SIGKILLs it before).
func helperOwn(ifname string, say func(string, ...any)) int {
	nl, err := packet.Open()
	if err != nil {
		say("error %v", err)
		return 1
	}
	l, err := LinkByName(nl, ifname)
	if err != nil {
		say("error %v", err)
		return 1
	}
	p, err := Attach(nl, l.Index, Options{})
	if err != nil {
		say("error %v", err)
		return 1
	}
	s, err := Open(l.Index, 0, Config{RxFrames: 64, TxFrames: 64})
	if err != nil {
		say("error %v", err)
		return 1
	}
	if err := p.Register(s); err != nil {
		say("error %v", err)
		return 1
	}
	say("ready %d %s", p.ID(), p.Mode())
	var b [1]byte
	unix.Read(0, b[:])
	return 0
}

// helperFDs runs the whole library path (link query, attach, socket, register, map updates,
// receive, transmit, stats, the busy path, close) on a netlink connection and reports the
// process's descriptors: before the connection, with it open (the new ones must be the
// connection's own and the Go netpoller's, which the netlink library's socket starts), and
// after the library path, which must leave none of its own open.
func helperFDs(ifname string, say func(string, ...any)) int {
	before, err := allFDs()
	if err != nil {
		say("error %v", err)
		return 1
	}
	nl, err := packet.Open()
	if err != nil {
		say("error %v", err)
		return 1
	}
	withConn, err := allFDs()
	if err != nil {
		say("error %v", err)
		return 1
	}
	if err := libraryPath(nl, ifname, func(string) {}); err != nil {
		say("error %v", err)
		return 1
	}
	after, err := allFDs()
	if err != nil {
		say("error %v", err)
		return 1
	}
	conn := make([]string, 0, 1)
	for _, fd := range nl.FDs() {
		conn = append(conn, fmt.Sprint(fd))
	}
	say("before %s", strings.Join(before, ","))
	say("conn %s", strings.Join(conn, ","))
	say("with %s", strings.Join(withConn, ","))
	say("after %s", strings.Join(after, ","))
	return 0
}

// libraryPath exercises every entry point of the package once, calling step after
// each (to find the first one that starts the netpoller, if any).
func libraryPath(nl *packet.Conn, ifname string, step func(string)) error {
	if _, err := MissingCapabilities(); err != nil {
		return err
	}
	step("MissingCapabilities")
	l, err := LinkByName(nl, ifname)
	if err != nil {
		return err
	}
	step("LinkByName")
	p, err := Attach(nl, l.Index, Options{})
	if err != nil {
		return err
	}
	defer p.Close()
	step("Attach")
	if _, err := Attach(nl, l.Index, Options{}); !errors.Is(err, ErrBusy) {
		return fmt.Errorf("second Attach: %v, want ErrBusy", err)
	}
	step("Attach (busy)")
	s, err := Open(l.Index, 0, Config{RxFrames: 64, TxFrames: 64, BusyPollMicros: 20})
	if err != nil {
		return err
	}
	defer s.Close()
	step("Open")
	if err := p.Register(s); err != nil {
		return err
	}
	step("Register")
	flow := netip.MustParseAddrPort("10.255.0.1:9")
	if err := p.AddFlow(flow); err != nil {
		return err
	}
	step("AddFlow")
	if _, err := p.FlowHits(flow); err != nil {
		return err
	}
	step("FlowHits")
	if err := p.AddGroup(netip.MustParseAddr("239.255.0.1"), 0); err != nil {
		return err
	}
	step("AddGroup")
	frames := make([]Frame, 8)
	s.Receive(frames)
	step("Receive")
	n := s.Alloc(frames)
	for i := range frames[:n] {
		frames[i].Data = frames[i].Data[:60]
	}
	if _, err := s.Transmit(frames[:n]); err != nil {
		return err
	}
	step("Transmit")
	s.Complete()
	if _, err := s.Wait(0); err != nil {
		return err
	}
	step("Wait")
	if _, err := s.Stats(); err != nil {
		return err
	}
	step("Stats")
	if err := p.RemoveFlow(flow); err != nil {
		return err
	}
	if err := p.RemoveGroup(netip.MustParseAddr("239.255.0.1"), 0); err != nil {
		return err
	}
	step("RemoveFlow")
	if err := p.Unregister(0); err != nil {
		return err
	}
	step("Unregister")
	if err := s.Close(); err != nil {
		return err
	}
	step("Socket.Close")
	if err := p.Close(); err != nil {
		return err
	}
	step("Program.Close")
	return nil
}

// allFDs lists this process's fds with their targets ("3=anon_inode:[eventpoll]"), reading
// /proc/self/fd with getdents(2) and readlink(2).
func allFDs() ([]string, error) {
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
		out = append(out, name+"="+string(lb[:n]))
	}
	return out, nil
}
