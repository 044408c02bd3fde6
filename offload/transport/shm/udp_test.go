package shm

import (
	"net/netip"
	"sync"
	"testing"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

func testEnv(t *testing.T, rxPoll int) *Env {
	t.Helper()
	e, err := NewEnv(Params{Dir: t.TempDir(), RxPoll: rxPoll, RxUDPPollOSRatio: 10, RxBytesMin: 1 << 16}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// udpSock is a kernel UDP socket with its transport, bound to 127.0.0.1:0.
func udpSock(t *testing.T, e *Env, bind bool) (int, *UDP) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	u := e.NewUDP(func() bool { return false })
	t.Cleanup(func() { u.Close(); unix.Close(fd) })
	if bind {
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
		u.Bound(fd)
	}
	return fd, u
}

// scratch is memory that never moves, as a C program's buffers: the transport gets their
// addresses as integers, and a goroutine's stack moves when it grows (a buffer on it would be
// written at its old place). Mapped once per pooled scratch, never unmapped (tests only).
type scratch struct{ m []byte }

const scratchBytes = 1 << 17

var scratches = sync.Pool{New: func() any {
	m, err := unix.Mmap(-1, 0, scratchBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		panic(err)
	}
	return &scratch{m}
}}

func sendto(u *UDP, fd int, b []byte, to netip.AddrPort) (int, unix.Errno, bool) {
	var sa [16]byte
	putSockaddr4(sa[:], to)
	return sendName(u, fd, b, sa[:])
}

func recvfrom(u *UDP, fd int, b []byte, flags int) (int, unix.Errno, bool, netip.AddrPort) {
	var sa [16]byte
	n, e, os, l := recvInto(u, fd, b, flags, sa[:])
	return n, e, os, sockaddr4(sa[:l])
}

func TestRingRoundTrip(t *testing.T) {
	e := testEnv(t, 1000)
	rfd, ru := udpSock(t, e, true)
	sfd, su := udpSock(t, e, false)
	to := sockname(rfd)
	msg := []byte("hello ring")
	n, errno, os := sendto(su, sfd, msg, to)
	if n != len(msg) || errno != 0 || os {
		t.Fatalf("send: %d %v os=%v", n, errno, os)
	}
	buf := make([]byte, 100)
	n, errno, os, from := recvfrom(ru, rfd, buf, 0)
	if n != len(msg) || errno != 0 || os || string(buf[:n]) != string(msg) {
		t.Fatalf("recv: %d %v os=%v %q", n, errno, os, buf[:max(n, 0)])
	}
	if from != sockname(sfd) && from.Port() != sockname(sfd).Port() {
		t.Fatalf("source %v, sender is %v", from, sockname(sfd))
	}
	// Nothing left: non-blocking receive says EAGAIN, and the wake datagram is gone.
	n, errno, _, _ = recvfrom(ru, rfd, buf, unix.MSG_DONTWAIT)
	if errno != unix.EAGAIN {
		t.Fatalf("empty receive: %d %v", n, errno)
	}
}

// TestRingRoundTripAllocs: a ring send and receive allocate nothing once the route is known (an
// allocation per call made the garbage collector run ~30 times a second under ping-pong, each
// run a latency spike).
func TestRingRoundTripAllocs(t *testing.T) {
	e := testEnv(t, 1000)
	rfd, ru := udpSock(t, e, true)
	sfd, su := udpSock(t, e, false)
	to := sockname(rfd)
	msg := []byte("hello ring")
	buf := make([]byte, 100)
	round := func() {
		if n, errno, os := sendto(su, sfd, msg, to); n != len(msg) || errno != 0 || os {
			t.Fatalf("send: %d %v os=%v", n, errno, os)
		}
		if n, errno, os, _ := recvfrom(ru, rfd, buf, 0); n != len(msg) || errno != 0 || os {
			t.Fatalf("recv: %d %v os=%v", n, errno, os)
		}
	}
	round() // the first send finds the route and opens the outlet
	if a := testing.AllocsPerRun(1000, round); a != 0 {
		t.Fatalf("%.2f allocations per send and receive, want 0", a)
	}
}

// TestOSRatioAlone: a spinning receive looks at the kernel socket at least every aloneOSRatio
// polls while no ring is attached to the socket's inbox (its ring polls look at nothing), every
// RxUDPPollOSRatio polls once one is, and never while spinning when the user set the ratio to 0.
func TestOSRatioAlone(t *testing.T) {
	e := testEnv(t, 1000)
	rfd, ru := udpSock(t, e, true)
	in := ru.inbox.Load()
	if in == nil {
		t.Fatal("a bound socket has no inbox")
	}
	for _, c := range []struct{ ratio, want int }{{100, aloneOSRatio}, {aloneOSRatio + 1, aloneOSRatio}, {3, 3}, {0, 0}} {
		if got := osRatio(c.ratio, in); got != c.want {
			t.Errorf("no ring attached: osRatio(%d) = %d, want %d", c.ratio, got, c.want)
		}
	}
	sfd, su := udpSock(t, e, false)
	msg := []byte("attach")
	if n, errno, os := sendto(su, sfd, msg, sockname(rfd)); n != len(msg) || errno != 0 || os {
		t.Fatalf("send: %d %v os=%v", n, errno, os)
	}
	buf := make([]byte, 16)
	if n, errno, os, _ := recvfrom(ru, rfd, buf, 0); n != len(msg) || errno != 0 || os {
		t.Fatalf("recv: %d %v os=%v", n, errno, os)
	}
	for _, c := range []struct{ ratio, want int }{{100, 100}, {3, 3}, {0, 0}} {
		if got := osRatio(c.ratio, in); got != c.want {
			t.Errorf("a ring attached: osRatio(%d) = %d, want %d", c.ratio, got, c.want)
		}
	}
}
