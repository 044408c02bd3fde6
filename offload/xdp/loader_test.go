package xdp

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/vishvananda/netlink"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// helper starts the test binary as a helper process in role, in tp's namespace A, and
// returns it with a reader of its output.
func helper(t *testing.T, tp *topo, role string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.timeout=0")
	cmd.Env = append(os.Environ(), "GOXIO_XSK_HELPER="+role, "GOXIO_XSK_NS="+tp.nsA, "GOXIO_XSK_IF="+tp.ifA)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, bufio.NewReader(out)
}

// readLines reads lines from r until n lines arrived, EOF, or limit passes.
func readLines(t *testing.T, r *bufio.Reader, n int, limit time.Duration) []string {
	t.Helper()
	ch := make(chan []string, 1)
	go func() {
		var lines []string
		for len(lines) < n {
			l, err := r.ReadString('\n')
			if l != "" {
				lines = append(lines, strings.TrimSpace(l))
			}
			if err != nil {
				break
			}
		}
		ch <- lines
	}()
	select {
	case lines := <-ch:
		return lines
	case <-time.After(limit):
		t.Fatalf("helper said nothing in %v", limit)
	}
	return nil
}

// linkA asks netlink about interface A of tp.
func linkA(t *testing.T, tp *topo) Link {
	t.Helper()
	var l Link
	inNetns(t, tp.nsA, func() {
		var err error
		if l, err = LinkByName(nlConn(t), tp.ifA); err != nil {
			t.Fatal(err)
		}
	})
	return l
}

// TestSIGKILLDetaches kills the owner of the program with SIGKILL and checks that the
// kernel detached it; while the owner lives, a second Attach gets a BusyError naming
// the goxio program.
func TestSIGKILLDetaches(t *testing.T) {
	tp := newTopo(t, 1)
	cmd, out := helper(t, tp, "own")
	lines := readLines(t, out, 1, 20*time.Second)
	var id uint32
	var mode string
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "ready ") {
		t.Fatalf("helper: %q", lines)
	}
	fmt.Sscanf(lines[0], "ready %d %s", &id, &mode)
	l := linkA(t, tp)
	if l.XDPProgID != id || l.XDPMode.String() != mode || mode != "native" {
		t.Fatalf("netlink says program %d in mode %s, helper attached %d in mode %s", l.XDPProgID, l.XDPMode, id, mode)
	}
	if out := run(t, "ip", "-n", tp.nsA, "link", "show", tp.ifA); !strings.Contains(out, fmt.Sprintf("prog/xdp id %d", id)) {
		t.Errorf("ip link does not show program %d:\n%s", id, out)
	}
	inNetns(t, tp.nsA, func() {
		p, err := Attach(nlConn(t), tp.idxA, Options{})
		if err == nil {
			p.Close()
			t.Fatalf("second Attach while the helper owns the interface succeeded")
		}
		var be *BusyError
		if !errors.Is(err, ErrBusy) || !errors.As(err, &be) || be.ProgID != id || be.ProgName != progName || be.Mode != ModeNative || be.Ifname != tp.ifA {
			t.Errorf("second Attach: %v (%+v)", err, be)
		}
		if !strings.Contains(err.Error(), "another goxio process") {
			t.Errorf("busy error does not say who owns the interface: %v", err)
		}
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for linkA(t, tp).XDPMode != ModeNone {
		if time.Now().After(deadline) {
			t.Fatalf("XDP program still attached 5 s after SIGKILL of its owner: %+v", linkA(t, tp))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if out := run(t, "ip", "-n", tp.nsA, "link", "show", tp.ifA); strings.Contains(out, "xdp") {
		t.Errorf("ip link still shows an XDP program:\n%s", out)
	}
	// The interface is free again.
	inNetns(t, tp.nsA, func() {
		p, err := Attach(nlConn(t), tp.idxA, Options{})
		if err != nil {
			t.Fatalf("Attach after the owner died: %v", err)
		}
		p.Close()
	})
}

// TestForeignProgramBusy attaches another XDP program the old way (netlink, generic
// mode) and checks that Attach reports it as a BusyError and leaves it in place.
func TestForeignProgramBusy(t *testing.T) {
	tp := newTopo(t, 1)
	foreign, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "foreign", Type: ebpf.XDP, License: "MIT",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, xdpPass), asm.Return()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Close()
	inNetns(t, tp.nsA, func() {
		if err := netlinkSetXDP(tp.idxA, foreign.FD(), unix.XDP_FLAGS_SKB_MODE); err != nil {
			t.Fatalf("attach foreign program with netlink: %v", err)
		}
		p, err := Attach(nlConn(t), tp.idxA, Options{})
		if err == nil {
			p.Close()
			t.Fatalf("Attach over a foreign program succeeded")
		}
		var be *BusyError
		if !errors.As(err, &be) || !errors.Is(err, ErrBusy) || be.ProgName != "foreign" || be.Mode != ModeGeneric {
			t.Fatalf("Attach over a foreign program: %v (%+v)", err, be)
		}
		t.Logf("%v", err)
	})
	if l := linkA(t, tp); l.XDPMode != ModeGeneric {
		t.Errorf("foreign program no longer attached: %+v", l)
	}
}

// TestCloseDetaches checks that Close detaches the program, and that an interface
// without a native XDP driver (loopback) gets generic mode.
func TestCloseDetaches(t *testing.T) {
	tp := newTopo(t, 1)
	inNetns(t, tp.nsA, func() {
		l, err := LinkByName(nlConn(t), "lo")
		if err != nil {
			t.Fatal(err)
		}
		p, err := Attach(nlConn(t), l.Index, Options{})
		if err != nil {
			t.Fatalf("Attach to lo: %v", err)
		}
		if p.Mode() != ModeGeneric {
			t.Errorf("lo: mode %s, want generic", p.Mode())
		}
		if l2, _ := LinkByIndex(nlConn(t), l.Index); l2.XDPMode != ModeGeneric || l2.XDPProgID != p.ID() {
			t.Errorf("netlink: %+v, want program %d in generic mode", l2, p.ID())
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if l2, _ := LinkByIndex(nlConn(t), l.Index); l2.XDPMode != ModeNone {
			t.Errorf("after Close: %+v", l2)
		}
		if p, err := Attach(nlConn(t), l.Index, Options{Mode: ModeNative}); err == nil || errors.Is(err, ErrBusy) {
			if p != nil {
				p.Close()
			}
			t.Errorf("native-only Attach to lo: %v, want a native-mode error", err)
		}
		g, err := Attach(nlConn(t), tp.idxA, Options{Mode: ModeGeneric})
		if err != nil {
			t.Fatalf("Attach generic to veth: %v", err)
		}
		if g.Mode() != ModeGeneric {
			t.Errorf("Mode: ModeGeneric gave mode %s", g.Mode())
		}
		g.Close()
		if _, err := LinkByName(nlConn(t), "gxnosuchif0"); !errors.Is(err, unix.ENODEV) {
			t.Errorf("LinkByName of a missing interface: %v, want ENODEV", err)
		}
		if _, err := Attach(nlConn(t), 1<<30, Options{}); !errors.Is(err, unix.ENODEV) {
			t.Errorf("Attach to a missing interface: %v, want ENODEV", err)
		}
	})
}

// TestKeptFDs runs the whole library path in a fresh process and checks its descriptors: the
// netlink connection adds its own socket (FDs reports it) and the Go netpoller's epoll fd and
// eventfd, nothing else; the library path leaves nothing open.
func TestKeptFDs(t *testing.T) {
	tp := newTopo(t, 1)
	cmd, out := helper(t, tp, "fds")
	lines := readLines(t, out, 4, 30*time.Second)
	cmd.Wait()
	vals := map[string]string{}
	for _, l := range lines {
		k, v, _ := strings.Cut(l, " ")
		vals[k] = v
	}
	if e, ok := vals["error"]; ok || len(lines) != 4 {
		t.Fatalf("helper: %q %s", lines, e)
	}
	before := map[string]bool{}
	for _, f := range strings.Split(vals["before"], ",") {
		before[f] = true
	}
	conn := map[string]bool{}
	for _, fd := range strings.Split(vals["conn"], ",") {
		conn[fd] = true
	}
	seen := 0
	for _, f := range strings.Split(vals["with"], ",") {
		if before[f] {
			continue
		}
		fd, target, _ := strings.Cut(f, "=")
		switch {
		case conn[fd] && strings.HasPrefix(target, "socket:"):
			seen++
		case target == "anon_inode:[eventpoll]" || target == "anon_inode:[eventfd]":
		default:
			t.Errorf("descriptor %s appeared with the netlink connection and is not its own (%v)", f, vals["conn"])
		}
	}
	if seen != len(conn) {
		t.Errorf("the connection's descriptors %q are not all new sockets in %q", vals["conn"], vals["with"])
	}
	if vals["after"] != vals["with"] {
		t.Errorf("the library path left descriptors: with the connection %q, after %q", vals["with"], vals["after"])
	}
}

// netlinkSetXDP attaches program fd to interface ifindex the legacy way (RTM_SETLINK
// with IFLA_XDP), as other tools do.
func netlinkSetXDP(ifindex, fd int, flags uint32) error {
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return err
	}
	return netlink.LinkSetXdpFdWithFlags(l, fd, int(flags))
}
