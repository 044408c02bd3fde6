package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/goxio/goxio/offload/xdp"
	"github.com/goxio/goxio/offload/xdp/packet"
	"golang.org/x/sys/unix"
)

// doctorNetns creates a network namespace with a veth pair of 4 queues (one end left
// in it), deleted when the test ends, and returns the namespace and interface names.
func doctorNetns(t *testing.T) (string, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("goxio doctor tests need root to build a network namespace")
	}
	ns := fmt.Sprintf("gxdoc%d", os.Getpid())
	ifname := fmt.Sprintf("gxd%d", os.Getpid()%1000000)
	if err := run("ip", "netns", "add", ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	if err := run("ip", "-n", ns, "link", "add", ifname, "numrxqueues", "4", "numtxqueues", "4",
		"type", "veth", "peer", "name", ifname+"p", "numrxqueues", "4", "numtxqueues", "4"); err != nil {
		t.Fatal(err)
	}
	for _, i := range []string{ifname, ifname + "p"} {
		if err := run("ip", "-n", ns, "link", "set", i, "up"); err != nil {
			t.Fatal(err)
		}
	}
	return ns, ifname
}

// doctorIn runs `goxio doctor args...` in namespace ns.
func doctorIn(t *testing.T, ns string, args ...string) result {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, tools.goxio, "doctor"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("goxio doctor did not finish in 30 s")
	}
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDoctor(t *testing.T) {
	expect(t, goxio(t, nil, "doctor"), 2, nil, []string{"usage: goxio doctor IFACE"})
	expect(t, goxio(t, nil, "doctor", "a", "b"), 2, nil, []string{"usage: goxio doctor IFACE"})
	ns, ifname := doctorNetns(t)
	expect(t, doctorIn(t, ns, "gxnosuchif0"), 1, nil, []string{`goxio: doctor: no interface "gxnosuchif0" in this network namespace`})

	// A veth: both attach modes, copy mode only (veth has no zero-copy), 4 queues.
	r := doctorIn(t, ns, ifname)
	expect(t, r, 0, []string{
		"interface " + ifname + " (index", "4 receive queue(s), 4 transmit queue(s)",
		"capabilities: CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF present",
		"xdp native attach: works", "xdp generic attach: works",
		"af_xdp zero-copy bind (queue 0): fails", "af_xdp copy bind (queue 0): works; need_wakeup yes",
		"verdict: goxio can offload UDP on " + ifname + ": XDP in native mode, AF_XDP in copy mode",
	}, nil)
	t.Logf("\n%s", r.stdout)

	// An interface that already has an XDP program (this test's).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(self)
	target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		t.Fatal(err)
	}
	nl, err := packet.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	l, err := xdp.LinkByName(nl, ifname)
	if err != nil {
		t.Fatal(err)
	}
	p, err := xdp.Attach(nl, l.Index, xdp.Options{})
	if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
		t.Fatalf("setns back: %v", err) // the thread stays locked and dies with the test
	}
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	expect(t, doctorIn(t, ns, ifname), 1, []string{
		fmt.Sprintf("xdp: interface %s (index %d) already has XDP program %d \"goxio_steer\" attached in native mode (another goxio process owns it)", ifname, l.Index, p.ID()),
		"af_xdp copy bind (queue 0): works",
		"verdict: goxio cannot use AF_XDP on " + ifname,
	}, nil)
}
