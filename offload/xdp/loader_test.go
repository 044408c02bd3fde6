package xdp

import (
	"bufio"
	"errors"
	"fmt"
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
		if l, err = LinkByName(tp.ifA); err != nil {
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
		p, err := Attach(tp.idxA, Options{})
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
		p, err := Attach(tp.idxA, Options{})
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
		p, err := Attach(tp.idxA, Options{})
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
		l, err := LinkByName("lo")
		if err != nil {
			t.Fatal(err)
		}
		p, err := Attach(l.Index, Options{})
		if err != nil {
			t.Fatalf("Attach to lo: %v", err)
		}
		if p.Mode() != ModeGeneric {
			t.Errorf("lo: mode %s, want generic", p.Mode())
		}
		if l2, _ := LinkByIndex(l.Index); l2.XDPMode != ModeGeneric || l2.XDPProgID != p.ID() {
			t.Errorf("netlink: %+v, want program %d in generic mode", l2, p.ID())
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if l2, _ := LinkByIndex(l.Index); l2.XDPMode != ModeNone {
			t.Errorf("after Close: %+v", l2)
		}
		if p, err := Attach(l.Index, Options{Mode: ModeNative}); err == nil || errors.Is(err, ErrBusy) {
			if p != nil {
				p.Close()
			}
			t.Errorf("native-only Attach to lo: %v, want a native-mode error", err)
		}
		g, err := Attach(tp.idxA, Options{Mode: ModeGeneric})
		if err != nil {
			t.Fatalf("Attach generic to veth: %v", err)
		}
		if g.Mode() != ModeGeneric {
			t.Errorf("Mode: ModeGeneric gave mode %s", g.Mode())
		}
		g.Close()
		if _, err := LinkByName("gxnosuchif0"); !errors.Is(err, unix.ENODEV) {
			t.Errorf("LinkByName of a missing interface: %v, want ENODEV", err)
		}
		if _, err := Attach(1<<30, Options{}); !errors.Is(err, unix.ENODEV) {
			t.Errorf("Attach to a missing interface: %v, want ENODEV", err)
		}
	})
}

// TestNoNetpoller runs the whole library path in a fresh process and checks that it
// created no eventpoll or eventfd descriptor (the Go netpoller did not start); a
// control os.Open afterwards must create one, proving the check sees it.
func TestNoNetpoller(t *testing.T) {
	tp := newTopo(t, 1)
	cmd, out := helper(t, tp, "netpoller")
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
	if vals["before"] != "" || vals["after"] != "" {
		t.Errorf("the library path started the Go netpoller (first seen after %q): before %q, after %q", vals["step"], vals["before"], vals["after"])
	}
	if !strings.Contains(vals["control"], "eventpoll") {
		t.Errorf("control os.Open did not show an eventpoll fd (%q): the check cannot see the netpoller", vals["control"])
	}
}

// netlinkSetXDP attaches program fd to interface ifindex the legacy way (RTM_SETLINK
// with IFLA_XDP), as other tools do.
func netlinkSetXDP(ifindex, fd int, flags uint32) error {
	s, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	req := make([]byte, unix.NLMSG_HDRLEN+unix.SizeofIfInfomsg)
	ne := nativeEndian()
	ne.PutUint16(req[4:], unix.RTM_SETLINK)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	ne.PutUint32(req[8:], 7)
	ne.PutUint32(req[unix.NLMSG_HDRLEN+4:], uint32(ifindex))
	var nested []byte
	v := make([]byte, 4)
	ne.PutUint32(v, uint32(int32(fd)))
	nested = appendAttr(nested, unix.IFLA_XDP_FD, v)
	v = make([]byte, 4)
	ne.PutUint32(v, flags)
	nested = appendAttr(nested, unix.IFLA_XDP_FLAGS, v)
	req = appendAttr(req, unix.IFLA_XDP|unix.NLA_F_NESTED, nested)
	ne.PutUint32(req[0:], uint32(len(req)))
	if err := unix.Sendto(s, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(s, buf, 0)
	if err != nil {
		return err
	}
	if n < unix.NLMSG_HDRLEN+4 || ne.Uint16(buf[4:]) != unix.NLMSG_ERROR {
		return fmt.Errorf("unexpected answer")
	}
	if e := int32(ne.Uint32(buf[unix.NLMSG_HDRLEN:])); e != 0 {
		return unix.Errno(-e)
	}
	return nil
}
