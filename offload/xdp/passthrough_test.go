package xdp

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPassThrough checks that with the program attached and a flow steered, ARP
// (resolved from scratch on both sides), ICMP echo and TCP still reach the kernel.
func TestPassThrough(t *testing.T) {
	tp := newTopo(t, 1)
	p, _ := attachOpen(t, tp, Options{}, Config{RxFrames: 64, TxFrames: 64}, 0)
	if err := p.AddFlow(netip.AddrPortFrom(tp.addrA, 7000)); err != nil {
		t.Fatal(err)
	}
	run(t, "ip", "-n", tp.nsA, "neigh", "flush", "all")
	run(t, "ip", "-n", tp.nsB, "neigh", "flush", "all")

	// ICMP echo from B to A (B and A both resolve each other by ARP first).
	var icmp int
	inNetns(t, tp.nsB, func() {
		var err error
		icmp, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
		if err != nil {
			t.Fatalf("raw ICMP socket: %v", err)
		}
	})
	defer unix.Close(icmp)
	tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
	unix.SetsockoptTimeval(icmp, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	replies := 0
	for seq := uint16(1); seq <= 3; seq++ {
		if echo(t, icmp, tp.addrA, 0x4758, seq) {
			replies++
		}
	}
	if replies != 3 {
		t.Errorf("%d of 3 ICMP echo replies with the program attached", replies)
	}
	for _, side := range []struct {
		ns   string
		peer netip.Addr
		mac  [6]byte
	}{{tp.nsB, tp.addrA, tp.macA}, {tp.nsA, tp.addrB, tp.macB}} {
		out := run(t, "ip", "-n", side.ns, "neigh", "show", side.peer.String())
		if !strings.Contains(out, net.HardwareAddr(side.mac[:]).String()) {
			t.Errorf("neighbour %v in %s not resolved by ARP: %q", side.peer, side.ns, out)
		}
	}

	// TCP from B to A's port 7000, the steered UDP port.
	var ln int
	inNetns(t, tp.nsA, func() {
		var err error
		ln, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: tp.addrA.As4(), Port: 7000}); err != nil {
			t.Fatal(err)
		}
		if err := unix.Listen(ln, 1); err != nil {
			t.Fatal(err)
		}
	})
	defer unix.Close(ln)
	var c int
	inNetns(t, tp.nsB, func() {
		var err error
		c, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
	})
	defer unix.Close(c)
	err := unix.Connect(c, &unix.SockaddrInet4{Addr: tp.addrA.As4(), Port: 7000})
	if err != nil && err != unix.EINPROGRESS {
		t.Fatalf("connect: %v", err)
	}
	pfd := []unix.PollFd{{Fd: int32(c), Events: unix.POLLOUT}}
	if n, err := unix.Poll(pfd, 3000); n != 1 || err != nil {
		t.Fatalf("TCP connect did not finish in 3 s: %d, %v", n, err)
	}
	if e, err := unix.GetsockoptInt(c, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || e != 0 {
		t.Errorf("TCP connect through the program: SO_ERROR %d, %v", e, err)
	}
}

// echo sends one ICMP echo request to dst and waits (up to 2 s) for its reply.
func echo(t *testing.T, fd int, dst netip.Addr, id, seq uint16) bool {
	t.Helper()
	msg := make([]byte, 8+16)
	msg[0] = 8 // echo request
	binary.BigEndian.PutUint16(msg[4:], id)
	binary.BigEndian.PutUint16(msg[6:], seq)
	copy(msg[8:], fmt.Sprintf("goxio xdp %5d", seq))
	binary.BigEndian.PutUint16(msg[2:], ipChecksum(msg))
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrInet4{Addr: dst.As4()}); err != nil {
		t.Fatalf("send echo: %v", err)
	}
	buf := make([]byte, 1500)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil || n < 20 {
			continue
		}
		ihl := int(buf[0]&0x0f) * 4
		r := buf[ihl:n]
		if len(r) >= 8 && r[0] == 0 && binary.BigEndian.Uint16(r[4:]) == id && binary.BigEndian.Uint16(r[6:]) == seq {
			return true
		}
	}
	return false
}
