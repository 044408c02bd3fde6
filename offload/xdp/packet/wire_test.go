package packet

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// recvUDP reads one datagram with its TOS and TTL (IP_RECVTOS, IP_RECVTTL must be on).
func recvUDP(fd int, buf []byte) (n int, from [4]byte, port int, tos, ttl int, err error) {
	oob := make([]byte, 128)
	var oobn int
	var sa unix.Sockaddr
	for {
		// With a receive timeout the kernel ends the wait with EINTR at any handled signal, and
		// the Go runtime sends its own (preemption): wait again.
		n, oobn, _, sa, err = unix.Recvmsg(fd, buf, oob, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return 0, from, 0, 0, 0, err
	}
	if a, ok := sa.(*unix.SockaddrInet4); ok {
		from, port = a.Addr, a.Port
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return 0, from, 0, 0, 0, err
	}
	tos, ttl = -1, -1
	for _, m := range msgs {
		switch {
		case m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TOS && len(m.Data) >= 1:
			tos = int(m.Data[0])
		case m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TTL && len(m.Data) >= 4:
			ttl = int(int32(m.Data[0]) | int32(m.Data[1])<<8 | int32(m.Data[2])<<16 | int32(m.Data[3])<<24)
		}
	}
	return n, from, port, tos, ttl, nil
}

func setInt(t *testing.T, fd, level, opt, v int) {
	t.Helper()
	if err := unix.SetsockoptInt(fd, level, opt, v); err != nil {
		t.Fatalf("setsockopt %d/%d: %v", level, opt, err)
	}
}

// TestInjectBuiltFrame addresses frames with RouteGet and the neighbour table, builds them, writes
// them to the veth in namespace A through AF_PACKET, and receives them with a kernel UDP socket in
// namespace B: the kernel checks both checksums, the addresses and the lengths.
func TestInjectBuiltFrame(t *testing.T) {
	tp := newTopo(t)
	c := connIn(t, tp.nsA)
	r, err := c.RouteGet(a4(tp.ipB), netip.Addr{}, 0)
	if err != nil {
		t.Fatalf("RouteGet: %v", err)
	}
	if err := c.NeighNudge(r.Ifindex, r.NextHop()); err != nil {
		t.Fatalf("NeighNudge: %v", err)
	}
	nb := waitNeigh(t, c, r.Ifindex, r.NextHop(), "usable", func(n Neigh, err error) bool {
		return err == nil && n.Resolution() == Usable
	})

	rx := udpSocketIn(t, tp.nsB, tp.ipB, 5000, 1000)
	setInt(t, rx, unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
	setInt(t, rx, unix.IPPROTO_IP, unix.IP_RECVTTL, 1)
	tx := packetSocketIn(t, tp.nsA, r.Ifindex, 100)

	maxPayload := r.MTU - IPv4HeaderLen - UDPHeaderLen
	frame := make([]byte, 2048)
	rbuf := make([]byte, 2048)
	send := func(h *Header, payload [][]byte, total int, corrupt func([]byte)) error {
		n, err := Build(frame, h, payload, total, r.MTU)
		if err != nil {
			return err
		}
		if corrupt != nil {
			corrupt(frame[:n])
		}
		if _, err := unix.Write(tx, frame[:n]); err != nil {
			t.Fatalf("AF_PACKET write: %v", err)
		}
		return nil
	}
	for i, size := range []int{0, 1, 7, 64, 333, 1000, maxPayload} {
		payload := make([]byte, size)
		for j := range payload {
			payload[j] = byte(i*31 + j)
		}
		iov := [][]byte{payload[:size/3], payload[size/3 : size/2], payload[size/2:]}
		h := Header{
			DstMAC: nb.MAC, SrcMAC: r.Link.MAC, Src: r.Src.As4(), Dst: tp.ipB, SrcPort: 4000, DstPort: 5000,
			TOS: byte(i * 8), TTL: byte(10 + i), ID: uint16(i), DontFragment: i%2 == 0, NoChecksum: i == 3,
		}
		if err := send(&h, iov, size, nil); err != nil {
			t.Fatalf("size %d: Build: %v", size, err)
		}
		n, from, port, tos, ttl, err := recvUDP(rx, rbuf)
		if err != nil {
			t.Fatalf("size %d: receive: %v", size, err)
		}
		if !bytes.Equal(rbuf[:n], payload) || from != tp.ipA || port != 4000 || tos != int(h.TOS) || ttl != int(h.TTL) {
			t.Fatalf("size %d: got %d bytes from %v:%d tos %d ttl %d", size, n, from, port, tos, ttl)
		}
	}
	h := Header{DstMAC: nb.MAC, SrcMAC: r.Link.MAC, Src: r.Src.As4(), Dst: tp.ipB, SrcPort: 4000, DstPort: 5000, TTL: 64}
	if err := send(&h, [][]byte{make([]byte, maxPayload+1)}, maxPayload+1, nil); !errors.Is(err, ErrTooBig) {
		t.Fatalf("payload above the route MTU: %v, want ErrTooBig", err)
	}

	// The kernel drops frames with a wrong UDP or IPv4 checksum (so the frames above were right).
	setRcvTimeout(t, rx, 300)
	for name, corrupt := range map[string]func([]byte){
		"udp checksum": func(f []byte) { f[HeaderLen] ^= 0x40 },
		"ip checksum":  func(f []byte) { f[EthHeaderLen+10] ^= 0x01 },
	} {
		if err := send(&h, [][]byte{[]byte("corrupt")}, 7, corrupt); err != nil {
			t.Fatalf("%s: Build: %v", name, err)
		}
		if n, _, _, _, _, err := recvUDP(rx, rbuf); !errors.Is(err, unix.EAGAIN) {
			t.Fatalf("%s: corrupted frame delivered: %q, %v", name, rbuf[:n], err)
		}
	}
	if err := send(&h, [][]byte{[]byte("fine again")}, 10, nil); err != nil {
		t.Fatalf("Build: %v", err)
	}
	if n, _, _, _, _, err := recvUDP(rx, rbuf); err != nil || string(rbuf[:n]) != "fine again" {
		t.Fatalf("after the corrupted frames: %q, %v", rbuf[:n], err)
	}

	// Multicast: group MAC from MulticastMAC, received by a socket that joined the group in B.
	group := [4]byte{239, 9, 8, 7}
	run(t, "ip", "-n", tp.nsA, "route", "add", "224.0.0.0/4", "dev", tp.ifA)
	mr, err := c.RouteGet(a4(group), netip.Addr{}, 0)
	if err != nil || mr.Type != RouteMulticast || mr.Ifindex != r.Ifindex {
		t.Fatalf("multicast route: %+v, %v", mr, err)
	}
	mrx := udpSocketIn(t, tp.nsB, group, 5002, 1000)
	var ifB Link
	cB := connIn(t, tp.nsB)
	if ifB, err = cB.LinkByName(tp.ifB); err != nil {
		t.Fatalf("LinkByName B: %v", err)
	}
	if err := unix.SetsockoptIPMreqn(mrx, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP,
		&unix.IPMreqn{Multiaddr: group, Ifindex: int32(ifB.Index)}); err != nil {
		t.Fatalf("IP_ADD_MEMBERSHIP: %v", err)
	}
	mh := Header{DstMAC: MulticastMAC(group), SrcMAC: mr.Link.MAC, Src: mr.Src.As4(), Dst: group, SrcPort: 4002, DstPort: 5002, TTL: 1}
	if err := send(&mh, [][]byte{[]byte("to the group")}, 12, nil); err != nil {
		t.Fatalf("multicast Build: %v", err)
	}
	if n, from, err := unix.Recvfrom(mrx, rbuf, 0); err != nil || string(rbuf[:n]) != "to the group" {
		t.Fatalf("multicast receive: %q from %v, %v", rbuf[:n], from, err)
	}
}

// captureUDP reads frames from the AF_PACKET socket fd until one parses as a UDP datagram from
// srcPort (at most 100 frames, 3 s); other frames (ARP) are skipped.
func captureUDP(t *testing.T, fd int, srcPort uint16) []byte {
	t.Helper()
	buf := make([]byte, 4096)
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; i < 100 && time.Now().Before(deadline); i++ {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("AF_PACKET receive: %v", err)
		}
		var h Header
		if _, err := Parse(buf[:n], &h, VerifyNone); err == nil && h.SrcPort == srcPort {
			return append([]byte{}, buf[:n]...)
		}
	}
	t.Fatalf("no UDP frame from port %d captured", srcPort)
	return nil
}

// TestCaptureKernelFrame sends datagrams with kernel sockets in namespace A, captures them with
// AF_PACKET in namespace B and parses them.
func TestCaptureKernelFrame(t *testing.T) {
	tp := newTopo(t)
	cB := connIn(t, tp.nsB)
	ifB, err := cB.LinkByName(tp.ifB)
	if err != nil {
		t.Fatalf("LinkByName: %v", err)
	}
	capture := packetSocketIn(t, tp.nsB, ifB.Index, 100)
	udpSocketIn(t, tp.nsB, tp.ipB, 5001, 100) // a listener, so no ICMP port unreachable

	tx := socketIn(t, tp.nsA, unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err := unix.Bind(tx, &unix.SockaddrInet4{Addr: tp.ipA, Port: 4001}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	setInt(t, tx, unix.IPPROTO_IP, unix.IP_TOS, 0x28)
	setInt(t, tx, unix.IPPROTO_IP, unix.IP_TTL, 17)
	setInt(t, tx, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
	check := func(frame []byte, verify Verify, payload string) error {
		var h Header
		p, err := Parse(frame, &h, verify)
		if err != nil {
			return err
		}
		want := Header{DstMAC: tp.macB, SrcMAC: tp.macA, Src: tp.ipA, Dst: tp.ipB, SrcPort: 4001, DstPort: 5001,
			TOS: 0x28, TTL: 17, ID: h.ID, DontFragment: true}
		if h != want || string(p) != payload {
			return fmt.Errorf("parsed %+v %q, want %+v %q", h, p, want, payload)
		}
		return nil
	}

	if err := unix.Sendto(tx, []byte("kernel says hi"), 0, &unix.SockaddrInet4{Addr: tp.ipB, Port: 5001}); err != nil {
		t.Fatalf("sendto: %v", err)
	}
	frame := captureUDP(t, capture, 4001)
	if err := check(frame, VerifyNone, "kernel says hi"); err != nil {
		t.Fatalf("kernel frame: %v", err)
	}
	// veth offloads the UDP checksum: the kernel's frame carries only the pseudo-header sum
	// (CHECKSUM_PARTIAL), which verification rejects. Logged, as it depends on the device.
	t.Logf("kernel frame with transmit checksum offload, verified: %v", check(frame, VerifyAll, "kernel says hi"))
	if err := check(frame, VerifyLocal, "kernel says hi"); err != nil {
		t.Fatalf("kernel frame with transmit checksum offload, verified as a local one: %v", err)
	}

	inNS(t, tp.nsA, func() error { return setTxChecksum(tx, tp.ifA, false) })
	if err := unix.Sendto(tx, []byte("full checksum"), 0, &unix.SockaddrInet4{Addr: tp.ipB, Port: 5001}); err != nil {
		t.Fatalf("sendto: %v", err)
	}
	frame = captureUDP(t, capture, 4001)
	if err := check(frame, VerifyAll, "full checksum"); err != nil {
		t.Fatalf("kernel frame without checksum offload, verified: %v", err)
	}
}
