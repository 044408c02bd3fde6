package shm

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// loop is the loopback address and port of the socket fd.
func loop(fd int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), sockname(fd).Port())
}

// published reports whether a lookup from the server's address finds the socket fd.
func published(e *Env, fd int, from int) bool {
	var buf [4]discoveryEntry
	return len(e.dir.Lookup(loop(fd), loop(from), buf[:0])) > 0
}

// TestLazyInboxRequestAnswer: a socket that gets its port from a send (one request, one answer)
// opens no inbox and is not published: the answer comes through the kernel. Once it keeps
// talking it opens its inbox, and answers come through its ring.
func TestLazyInboxRequestAnswer(t *testing.T) {
	e := testEnv(t, 1000)
	sfd, su := udpSock(t, e, true) // the server
	cfd, cu := udpSock(t, e, false)
	buf := make([]byte, 64)
	if n, errno, os := sendto(cu, cfd, []byte("q1"), loop(sfd)); n != 2 || errno != 0 || os {
		t.Fatalf("request: %d %v os=%v", n, errno, os)
	}
	if cu.Inbox() != nil || published(e, cfd, sfd) {
		t.Fatalf("a socket bound by its first send has an inbox (%v) or is published (%v)", cu.Inbox() != nil, published(e, cfd, sfd))
	}
	if cu.Starting() {
		t.Fatal("a socket with its port is still starting: its receives would wait for an inbox")
	}
	n, errno, os, from := recvfrom(su, sfd, buf, 0)
	if n != 2 || errno != 0 || os || from != loop(cfd) {
		t.Fatalf("server receive: %d %v os=%v from %v (client %v)", n, errno, os, from, loop(cfd))
	}
	if n, errno, os := sendto(su, sfd, []byte("a1"), from); n != 2 || errno != 0 || !os {
		t.Fatalf("answer: %d %v os=%v, want through the kernel", n, errno, os)
	}
	if n, errno, os, _ := recvfrom(cu, cfd, buf, 0); n != 2 || errno != 0 || !os || string(buf[:2]) != "a1" {
		t.Fatalf("client receive: %d %v os=%v %q", n, errno, os, buf[:max(n, 0)])
	}
	// The second request opens the inbox: the answer to it comes through the ring.
	if n, errno, _ := sendto(cu, cfd, []byte("q2"), loop(sfd)); n != 2 || errno != 0 {
		t.Fatalf("second request: %d %v", n, errno)
	}
	if cu.Inbox() == nil || !published(e, cfd, sfd) {
		t.Fatalf("after %d calls: inbox %v, published %v", lazyAfter, cu.Inbox() != nil, published(e, cfd, sfd))
	}
	if n, _, _, _ := recvfrom(su, sfd, buf, 0); n != 2 {
		t.Fatalf("server receive: %d", n)
	}
	if n, errno, os := sendto(su, sfd, []byte("a2"), loop(cfd)); n != 2 || errno != 0 || os {
		t.Fatalf("second answer: %d %v os=%v, want through the ring", n, errno, os)
	}
	if n, errno, os, _ := recvfrom(cu, cfd, buf, 0); n != 2 || errno != 0 || os || string(buf[:2]) != "a2" {
		t.Fatalf("client receive: %d %v os=%v %q", n, errno, os, buf[:max(n, 0)])
	}
}

// TestLazyInboxOrder: datagrams a goxio peer sent through the kernel before the socket published
// its inbox are received before the ones it sends through the ring after, as the kernel would
// deliver them.
func TestLazyInboxOrder(t *testing.T) {
	e := testEnv(t, 1000)
	sfd, su := udpSock(t, e, true)
	cfd, cu := udpSock(t, e, false)
	buf := make([]byte, 64)
	if _, errno, _ := sendto(cu, cfd, []byte("hello"), loop(sfd)); errno != 0 {
		t.Fatal(errno)
	}
	for i := 0; i < 3; i++ {
		if _, errno, os := sendto(su, sfd, []byte(fmt.Sprint(i)), loop(cfd)); errno != 0 || !os {
			t.Fatalf("datagram %d: %v os=%v, want through the kernel", i, errno, os)
		}
	}
	// Two more calls of the client (a non-blocking look finds the first datagram) open its inbox.
	if n, _, os, _ := recvfrom(cu, cfd, buf, 0); n != 1 || !os || buf[0] != '0' {
		t.Fatalf("first: %d os=%v %q", n, os, buf[:max(n, 0)])
	}
	if _, errno, _ := sendto(cu, cfd, []byte("more"), loop(sfd)); errno != 0 || !published(e, cfd, sfd) {
		t.Fatalf("send %v; published %v", errno, published(e, cfd, sfd))
	}
	for i := 3; i < 6; i++ {
		if _, errno, os := sendto(su, sfd, []byte(fmt.Sprint(i)), loop(cfd)); errno != 0 || os {
			t.Fatalf("datagram %d: %v os=%v, want through the ring", i, errno, os)
		}
	}
	for i := 1; i < 6; i++ {
		n, errno, os, _ := recvfrom(cu, cfd, buf, 0)
		if n != 1 || errno != 0 || buf[0] != byte('0'+i) {
			t.Fatalf("receive %d: %d %v os=%v %q, want %d", i, n, errno, os, buf[:max(n, 0)], i)
		}
		if os != (i < 3) {
			t.Fatalf("receive %d: os=%v", i, os)
		}
	}
}

// TestLazyInboxWaitsForSleeper: a receive asleep in the kernel socket (the socket had no inbox
// when it started) would never see a ring datagram, so a call of another thread that opens the
// inbox meanwhile does not publish it; the answer comes through the kernel and wakes the
// receive, and the next call publishes.
func TestLazyInboxWaitsForSleeper(t *testing.T) {
	e := testEnv(t, 0)
	sfd, su := udpSock(t, e, true)
	cfd, cu := udpSock(t, e, false)
	if _, errno, _ := sendto(cu, cfd, []byte("hello"), loop(sfd)); errno != 0 {
		t.Fatal(errno)
	}
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 64)
		n, errno, os, _ := recvfrom(cu, cfd, b, 0)
		got <- fmt.Sprintf("%q %v os=%v", b[:max(n, 0)], errno, os)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for cu.kernelRx.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the receive did not go to sleep in the kernel socket")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond) // in the system call
	for i := 0; i < lazyAfter; i++ {
		if _, errno, _ := sendto(cu, cfd, []byte("again"), loop(sfd)); errno != 0 {
			t.Fatal(errno)
		}
	}
	if published(e, cfd, sfd) {
		t.Fatal("published while a receive sleeps in the kernel socket without the inbox")
	}
	if _, errno, os := sendto(su, sfd, []byte("answer"), loop(cfd)); errno != 0 || !os {
		t.Fatalf("answer: %v os=%v, want through the kernel", errno, os)
	}
	select {
	case r := <-got:
		if r != `"answer" errno 0 os=true` {
			t.Fatalf("receive: %s", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the receive asleep in the kernel socket did not get the answer")
	}
	if _, errno, _ := sendto(cu, cfd, []byte("again"), loop(sfd)); errno != 0 || !published(e, cfd, sfd) {
		t.Fatalf("send %v; published %v once nobody sleeps without the inbox", errno, published(e, cfd, sfd))
	}
}
