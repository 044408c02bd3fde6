package xdp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"github.com/goxio/goxio/offload/xdp/packet"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// topo is a test topology: two network namespaces joined by a veth pair. Side A
// (ifA, addrA) is where the XDP program and AF_XDP sockets go; side B is the kernel
// peer.
type topo struct {
	nsA, nsB     string
	ifA, ifB     string
	addrA, addrB netip.Addr
	idxA, idxB   int
	macA, macB   [6]byte
}

var topoSeq atomic.Int32

// run runs a command and fails the test with its output when it fails.
func run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newTopo creates the namespaces and the veth pair (queues receive and transmit
// queues on each side), both up with addresses 10.200.N.1 (A) and 10.200.N.2 (B),
// and deletes them when the test ends.
func newTopo(t testing.TB, queues int) *topo {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("the AF_XDP tests need root (CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF) to build their namespaces")
	}
	n := topoSeq.Add(1)
	id := fmt.Sprintf("%d%d", os.Getpid()%100000, n)
	tp := &topo{
		nsA: "gxxsk" + id + "a", nsB: "gxxsk" + id + "b",
		ifA: "gxa" + id, ifB: "gxb" + id,
		addrA: netip.AddrFrom4([4]byte{10, 200, byte(n), 1}),
		addrB: netip.AddrFrom4([4]byte{10, 200, byte(n), 2}),
	}
	run(t, "ip", "netns", "add", tp.nsA)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", tp.nsA).Run() })
	run(t, "ip", "netns", "add", tp.nsB)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", tp.nsB).Run() })
	q := fmt.Sprint(queues)
	run(t, "ip", "-n", tp.nsA, "link", "add", tp.ifA, "numrxqueues", q, "numtxqueues", q,
		"type", "veth", "peer", "name", tp.ifB, "netns", tp.nsB, "numrxqueues", q, "numtxqueues", q)
	for _, s := range []struct {
		ns, ifn string
		a       netip.Addr
	}{{tp.nsA, tp.ifA, tp.addrA}, {tp.nsB, tp.ifB, tp.addrB}} {
		run(t, "ip", "-n", s.ns, "addr", "add", s.a.String()+"/24", "dev", s.ifn)
		run(t, "ip", "-n", s.ns, "link", "set", s.ifn, "up")
		run(t, "ip", "-n", s.ns, "link", "set", "lo", "up")
	}
	inNetns(t, tp.nsA, func() {
		ifi, err := net.InterfaceByName(tp.ifA)
		if err != nil {
			t.Fatalf("interface %s: %v", tp.ifA, err)
		}
		tp.idxA = ifi.Index
		copy(tp.macA[:], ifi.HardwareAddr)
	})
	inNetns(t, tp.nsB, func() {
		ifi, err := net.InterfaceByName(tp.ifB)
		if err != nil {
			t.Fatalf("interface %s: %v", tp.ifB, err)
		}
		tp.idxB = ifi.Index
		copy(tp.macB[:], ifi.HardwareAddr)
	})
	// Wait (boundedly) for both ends to be operational: a veth carries nothing before.
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

// inNetns runs f on a thread switched into network namespace ns, and switches the
// thread back. Sockets, programs and links created in f stay in ns.
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
			// Leave the thread locked: it dies with the goroutine instead of serving
			// others in the wrong namespace.
			t.Errorf("setns back from %s: %v", ns, err)
			return
		}
		runtime.UnlockOSThread()
	}()
	f()
}

// udpSocket opens a kernel UDP socket in ns bound to addr, with a receive timeout.
func udpSocket(t testing.TB, ns string, addr netip.AddrPort) int {
	t.Helper()
	var fd int
	inNetns(t, ns, func() {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("socket: %v", err)
		}
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: addr.Addr().As4(), Port: int(addr.Port())}); err != nil {
			unix.Close(fd)
			t.Fatalf("bind %v in %s: %v", addr, ns, err)
		}
	})
	tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// sendUDP sends payload from socket fd to dst.
func sendUDP(t testing.TB, fd int, dst netip.AddrPort, payload []byte) {
	t.Helper()
	if err := unix.Sendto(fd, payload, 0, &unix.SockaddrInet4{Addr: dst.Addr().As4(), Port: int(dst.Port())}); err != nil {
		t.Fatalf("sendto %v: %v", dst, err)
	}
}

// recvUDP reads datagrams from fd until want arrived or the time is up.
func recvUDP(fd int, want int, limit time.Duration) [][]byte {
	var got [][]byte
	deadline := time.Now().Add(limit)
	buf := make([]byte, 65536)
	for len(got) < want && time.Now().Before(deadline) {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			continue // EAGAIN at the receive timeout
		}
		got = append(got, bytes.Clone(buf[:n]))
	}
	return got
}

// frameSpec describes an Ethernet/IPv4/UDP frame for udpFrame.
type frameSpec struct {
	dstMAC, srcMAC [6]byte
	src, dst       netip.AddrPort
	payload        []byte
	vlan           uint16 // 802.1Q tag when nonzero
	ipOptions      int    // 4-byte words of IPv4 options (IHL = 5 + ipOptions)
	fragOffset     uint16 // fragment offset in 8-byte units
	moreFragments  bool
	proto          uint8 // 17 when 0 (IPv6: the next header)
}

// udpFrame builds the frame: correct IPv4 header checksum, UDP checksum 0 (none); an IPv6
// frame when the addresses are IPv6 (no extension header; UDP checksum 0, which the steering
// program does not look at).
func udpFrame(s frameSpec) []byte {
	b := append([]byte{}, s.dstMAC[:]...)
	b = append(b, s.srcMAC[:]...)
	if s.vlan != 0 {
		b = binary.BigEndian.AppendUint16(b, 0x8100)
		b = binary.BigEndian.AppendUint16(b, s.vlan)
	}
	if s.dst.Addr().Is6() {
		b = binary.BigEndian.AppendUint16(b, 0x86dd)
		ip := make([]byte, 40)
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:], uint16(8+len(s.payload)))
		ip[6] = s.proto
		if ip[6] == 0 {
			ip[6] = 17
		}
		ip[7] = 64
		src, dst := s.src.Addr().As16(), s.dst.Addr().As16()
		copy(ip[8:], src[:])
		copy(ip[24:], dst[:])
		b = append(b, ip...)
	} else {
		b = binary.BigEndian.AppendUint16(b, 0x0800)
		b = append(b, ipv4Header(s)...)
	}
	b = binary.BigEndian.AppendUint16(b, s.src.Port())
	b = binary.BigEndian.AppendUint16(b, s.dst.Port())
	b = binary.BigEndian.AppendUint16(b, uint16(8+len(s.payload)))
	b = binary.BigEndian.AppendUint16(b, 0)
	return append(b, s.payload...)
}

// ipv4Header is the IPv4 header of the frame udpFrame builds.
func ipv4Header(s frameSpec) []byte {
	ihl := 5 + s.ipOptions
	ip := make([]byte, ihl*4)
	ip[0] = 0x40 | byte(ihl)
	total := ihl*4 + 8 + len(s.payload)
	binary.BigEndian.PutUint16(ip[2:], uint16(total))
	frag := s.fragOffset
	if s.moreFragments {
		frag |= 0x2000
	}
	binary.BigEndian.PutUint16(ip[6:], frag)
	ip[8] = 64
	ip[9] = s.proto
	if ip[9] == 0 {
		ip[9] = 17
	}
	src, dst := s.src.Addr().As4(), s.dst.Addr().As4()
	copy(ip[12:], src[:])
	copy(ip[16:], dst[:])
	for i := 20; i < len(ip); i++ {
		ip[i] = 1 // NOP options
	}
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip))
	return ip
}

// ipChecksum is the Internet checksum of h.
func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// udpPayload returns the payload of an untagged Ethernet/IPv4/UDP frame, or nil.
func udpPayload(f []byte) []byte {
	if len(f) < 14+20+8 || binary.BigEndian.Uint16(f[12:]) != 0x0800 {
		return nil
	}
	ihl := int(f[14]&0x0f) * 4
	if len(f) < 14+ihl+8 {
		return nil
	}
	ulen := int(binary.BigEndian.Uint16(f[14+ihl+4:]))
	if ulen < 8 || 14+ihl+ulen > len(f) {
		return nil
	}
	return f[14+ihl+8 : 14+ihl+ulen]
}

// checkAccounting cross-checks a socket's frame counters against its per-frame states
// and against the ring indices (frames the kernel owns = frames posted minus frames
// returned).
func checkAccounting(t testing.TB, s *Socket) Accounting {
	t.Helper()
	a := s.Accounting()
	u := s.umem
	var rxKernel, rxHeld, txFree, txHeld, txKernel int
	for _, st := range u.rxState {
		switch st {
		case frameKernel:
			rxKernel++
		case frameHeld:
			rxHeld++
		default:
			t.Errorf("RX frame in state %d", st)
		}
	}
	for _, st := range u.txState {
		switch st {
		case frameKernel:
			txKernel++
		case frameHeld:
			txHeld++
		case frameFree:
			txFree++
		}
	}
	if rxKernel != a.RxKernel || rxHeld != a.RxHeld || txFree != a.TxFree || txHeld != a.TxHeld || txKernel != a.TxKernel {
		t.Errorf("accounting %+v, frame states say rx kernel %d held %d, tx free %d held %d kernel %d",
			a, rxKernel, rxHeld, txFree, txHeld, txKernel)
	}
	if a.RxKernel+a.RxHeld != a.RxFrames || a.TxFree+a.TxHeld+a.TxKernel != a.TxFrames {
		t.Errorf("accounting %+v does not add up to the pools", a)
	}
	if len(u.txFree) != a.TxFree {
		t.Errorf("TX free list has %d frames, accounting says %d", len(u.txFree), a.TxFree)
	}
	// Ring view: RX frames in the kernel = posted on fill - taken from RX (no invalid
	// descriptors in these tests); TX frames in the kernel = posted on TX - taken from
	// completion.
	if got := int(s.fill.localProd - s.rx.localCons); got != a.RxKernel {
		t.Errorf("rings say %d RX frames in the kernel, accounting %d", got, a.RxKernel)
	}
	if got := int(s.tx.localProd - s.comp.localCons); got != a.TxKernel {
		t.Errorf("rings say %d TX frames in the kernel, accounting %d", got, a.TxKernel)
	}
	return a
}

// nlConn opens a netlink connection in the calling thread's network namespace, closed when the
// test ends.
func nlConn(tb testing.TB) *packet.Conn {
	tb.Helper()
	nl, err := packet.Open()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { nl.Close() })
	return nl
}
