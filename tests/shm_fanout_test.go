package tests

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/goxio/goxio/stats"
	"github.com/goxio/goxio/tests/internal/testutil"
)

// Multicast fan-out on the loopback interface with a publisher that, like a feed's, sets its
// options before its first send and never binds (tests/shm/shmudp.c tx -m -U).

// TestShmMulticastHostOnly: with only goxio members on the host, the publisher's datagrams reach
// every member exactly once through rings and the kernel send is skipped (the kernel's copies
// would all have been dropped by the members); sent with sendto, and with sendmmsg (4 a call,
// each message's msg_len set).
func TestShmMulticastHostOnly(t *testing.T) {
	t.Run("sendto", func(t *testing.T) { testShmMulticastHostOnly(t, false) })
	t.Run("sendmmsg", func(t *testing.T) { testShmMulticastHostOnly(t, true) })
}

func testShmMulticastHostOnly(t *testing.T, mmsg bool) {
	h := newShmHarness(t)
	const n, w = 2000, 16
	port := testutil.FreePort(t, "udp")
	group := "239.255.77.2"
	var rxs []*shmProc
	var fds []int
	for i := range 2 {
		rx := h.start(fmt.Sprintf("member %d", i), h.env(), nil, h.udp, "rx", "-p", strconv.Itoa(port), "-m", group,
			"-n", strconv.Itoa(n), "-a", strconv.Itoa(w), "-i", "5000", "-W")
		_, fd := rx.ready()
		rxs, fds = append(rxs, rx), append(fds, fd)
	}
	args := []string{"tx", "-p", strconv.Itoa(port), "-d", group, "-m", "-U", "-s", "1",
		"-n", strconv.Itoa(n), "-a", strconv.Itoa(w), "-A", "2", "-W"}
	if mmsg {
		args = append(args, "-M")
	}
	tx := h.start("publisher", h.env(), nil, h.udp, args...)
	_, tfd := tx.ready()
	if ok, _ := tx.sent(60 * time.Second); ok != n {
		t.Errorf("publisher: sent %d, want %d", ok, n)
	}
	for i, rx := range rxs {
		s := rx.summary(60 * time.Second)
		requireIntact(t, fmt.Sprintf("member %d", i), s)
		if s.total != n || s.gaps != 0 || s.senders[1].got != n {
			t.Errorf("member %d: %d datagrams, %d missing; want each of %d exactly once\n%s", i, s.total, s.gaps, n, s.text)
		}
		ss := h.socketStats(rx, fds[i])
		if c := ss.Counters; ss.Transport != stats.TransportSHM || c.RxPackets != n || c.RxOSPackets != 0 {
			t.Errorf("member %d socket: transport %s (%s), rx through rings %d, through the kernel %d; want shm, %d, 0",
				i, ss.Transport, ss.Reason, c.RxPackets, c.RxOSPackets, n)
		}
	}
	// The kernel sent one datagram: the publisher's first (to port+1, which binds it).
	ts := h.socketStats(tx, tfd)
	if c := ts.Counters; ts.Transport != stats.TransportSHM || c.TxOSPackets != 1 || c.TxPackets != n {
		t.Errorf("publisher socket: transport %s (%s), tx through the kernel %d, through rings %d; want shm, 1 (the first, binding datagram), %d",
			ts.Transport, ts.Reason, c.TxOSPackets, c.TxPackets, n)
	}
	tx.exit(30 * time.Second)
	for _, rx := range rxs {
		rx.exit(30 * time.Second)
	}
	h.requireClean()
}

// TestShmMulticastLateMember: a member without goxio joins while a goxio publisher sends to a
// goxio member through rings alone, takes 1000 datagrams and leaves. Its stream is whole: 1000
// datagrams in a row, once, in order, as the kernel gives a socket that joined; and its first is
// one the publisher sent about when it joined (the publisher looks at the group's memberships at
// least every millisecond). The goxio member gets every datagram once throughout; the publisher
// went from rings alone to rings and kernel while the late member listened, and back to rings
// alone once it left.
func TestShmMulticastLateMember(t *testing.T) {
	h := newShmHarness(t)
	const n, w, lateN = 4000, 16, 1000
	port := testutil.FreePort(t, "udp")
	group := "239.255.77.3"
	member := h.start("goxio member", h.env(), nil, h.udp, "rx", "-p", strconv.Itoa(port), "-m", group,
		"-n", strconv.Itoa(n), "-a", strconv.Itoa(w), "-i", "10000", "-W")
	_, mfd := member.ready()
	// 500 µs between datagrams: two seconds of sending, the late member joins in the middle.
	tx := h.start("publisher", h.env(), nil, h.udp, "tx", "-p", strconv.Itoa(port), "-d", group, "-m", "-U", "-s", "1",
		"-n", strconv.Itoa(n), "-a", strconv.Itoa(w), "-A", "1", "-u", "500", "-W")
	_, tfd := tx.ready()
	time.Sleep(300 * time.Millisecond)
	late := h.start("late member without goxio", os.Environ(), nil, h.udp, "rx", "-p", strconv.Itoa(port), "-m", group,
		"-n", strconv.Itoa(lateN), "-i", "5000")
	late.ready()
	before, _ := member.report()
	ls := late.summary(60 * time.Second)
	late.wait(30 * time.Second) // closed: it left the group
	if ok, _ := tx.sent(60 * time.Second); ok != n {
		t.Errorf("publisher: sent %d, want %d", ok, n)
	}
	ms := member.summary(60 * time.Second)
	requireIntact(t, "goxio member", ms)
	if ms.total != n || ms.gaps != 0 {
		t.Errorf("goxio member: %d datagrams, %d missing; want each of %d exactly once\n%s", ms.total, ms.gaps, n, ms.text)
	}
	requireIntact(t, "late member", ls)
	s := ls.senders[1]
	joinedAt := before[1].last
	if s.got != lateN || s.gaps != 0 || s.last != s.first+lateN-1 || s.last >= n-1 {
		t.Errorf("late member: got %d, first %d, last %d, gaps %d; want %d in a row before the publisher's last\n%s",
			s.got, s.first, s.last, s.gaps, lateN, ls.text)
	}
	// The goxio member had received up to joinedAt when asked, after the late member joined;
	// the member lags the publisher by at most a window, the publisher's look by a millisecond
	// (two datagrams).
	if s.first > joinedAt+w+8 {
		t.Errorf("late member: first datagram %d, the goxio member had %d when it had joined: the kernel send came back late",
			s.first, joinedAt)
	}
	// A datagram counts as sent through the kernel when the kernel sent it (its ring copies
	// too), through rings when only rings did; the first, binding datagram went to the kernel.
	// Rings alone before the late member joined and, most of the time, after it left.
	ts := h.socketStats(tx, tfd)
	c := ts.Counters
	after := n - 1 - s.last
	if c.TxOSPackets < lateN || c.TxPackets+c.TxOSPackets != n+1 || int(c.TxPackets) < s.first-1+after/2 {
		t.Errorf("publisher socket: tx through the kernel %d, through rings alone %d; want at least %d through the kernel "+
			"(the late member's), %d in all, at least %d through rings alone (before the late member's first, and after it left)",
			c.TxOSPackets, c.TxPackets, lateN, n+1, s.first-1+after/2)
	}
	if c := h.socketStats(member, mfd).Counters; c.RxPackets != n || c.RxOSPackets != 0 {
		t.Errorf("goxio member socket: rx through rings %d, through the kernel %d; want %d, 0", c.RxPackets, c.RxOSPackets, n)
	}
	t.Logf("late member joined at about %d, took %d..%d; publisher sent %d through the kernel, %d through rings alone",
		joinedAt, s.first, s.last, c.TxOSPackets, c.TxPackets)
	tx.exit(30 * time.Second)
	member.exit(30 * time.Second)
	h.requireClean()
}

// TestShmMulticastMemberBuffer: a member that does not read while the publisher sends 3000
// small datagrams (the kernel's default receive buffer holds about 300) gets every one of them
// afterwards when it kept the default SO_RCVBUF (its senders' rings hold 8192, mclimit.go),
// also when it bound and joined before its engine loaded (adopted); one that set a small
// SO_RCVBUF before that gets what that buffer holds, as from the kernel.
func TestShmMulticastMemberBuffer(t *testing.T) {
	for _, rcvbuf := range []int{0, 4096} {
		t.Run(fmt.Sprintf("rcvbuf=%d", rcvbuf), func(t *testing.T) {
			h := newShmHarness(t)
			const n = 3000
			port := testutil.FreePort(t, "udp")
			group := "239.255.77.4"
			args := []string{"rx", "-p", strconv.Itoa(port), "-m", group, "-g", "-W"}
			if rcvbuf > 0 {
				args = append(args, "-b", strconv.Itoa(rcvbuf))
			}
			rx := h.start("member", h.env(), nil, h.udp, args...)
			_, rfd := rx.ready()
			tx := h.start("publisher", h.env(), nil, h.udp, "tx", "-p", strconv.Itoa(port), "-d", group, "-m", "-U",
				"-s", "1", "-n", strconv.Itoa(n), "-l", "64", "-W")
			if ok, _ := tx.sent(60 * time.Second); ok != n {
				t.Errorf("publisher: sent %d, want %d", ok, n)
			}
			rx.say("go")
			s := rx.summary(60 * time.Second)
			requireIntact(t, "member", s)
			rs := h.socketStats(rx, rfd)
			if rs.Transport != stats.TransportSHM {
				t.Errorf("member socket: transport %s (%s), want shm", rs.Transport, rs.Reason)
			}
			t.Logf("SO_RCVBUF %d: received %d of %d", rcvbuf, s.total, n)
			if rcvbuf == 0 && (s.total != n || s.gaps != 0) {
				t.Errorf("default buffer: received %d, %d missing; want all %d\n%s", s.total, s.gaps, n, s.text)
			}
			// 4096 bytes (8192 as the kernel doubles it) hold a few dozen datagrams.
			if rcvbuf > 0 && (s.total == 0 || s.total > 300) {
				t.Errorf("SO_RCVBUF %d: received %d of %d; want the few that buffer holds", rcvbuf, s.total, n)
			}
			tx.exit(30 * time.Second)
			rx.exit(30 * time.Second)
			h.requireClean()
		})
	}
}
