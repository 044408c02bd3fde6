package shmtcp

import (
	"bytes"
	"os"
	"testing"
	"time"

	ring "github.com/goxio/goxio/offload/shm"
)

// TestPlainClientGoxioServer: a kernel client against a transport server: the server's segment
// is withdrawn at the first byte from the client, every byte is exact both ways.
func TestPlainClientGoxioServer(t *testing.T) {
	env := testEnv(t, nil)
	c, s := pair(t, nil, env)
	req, resp := stream(7, 50000), stream(8, 70000)
	go c.sendAll(req)
	if got := s.recvAll(len(req)); !bytes.Equal(got, req) {
		t.Fatalf("request differs")
	}
	st := s.tr.Stats()
	if st.Paired || !st.Withdrew || env.Counts().WithdrawnData != 1 {
		t.Fatalf("server still paired: %+v %+v", st, env.Counts())
	}
	ring.DrainConnPool() // what the process keeps for reuse goes at exit
	if ents, _ := os.ReadDir(env.p.Dir); len(ents) != 0 {
		t.Fatalf("segment left after withdrawal: %v", ents)
	}
	go s.sendAll(resp)
	if got := c.recvAll(len(resp)); !bytes.Equal(got, resp) {
		t.Fatalf("response differs")
	}
	s.close()
	if b, errno := c.recv(10, 0); len(b) != 0 || errno != 0 {
		t.Fatalf("plain client after close: %q %v, want EOF (no wake byte may reach it)", b, errno)
	}
}

// TestGoxioClientPlainServer: the client creates, sends before any answer (kernel), and
// withdraws when the plain server's answer arrives.
func TestGoxioClientPlainServer(t *testing.T) {
	env := testEnv(t, nil)
	c, s := pair(t, env, nil)
	c.sendAll([]byte("GET /"))
	if got := s.recvAll(5); string(got) != "GET /" {
		t.Fatalf("request %q", got)
	}
	s.sendAll([]byte("200 OK"))
	if got := c.recvAll(6); string(got) != "200 OK" {
		t.Fatalf("response %q", got)
	}
	if st := c.tr.Stats(); st.Paired || !st.Withdrew || st.KernelTx != 5 || st.KernelRx != 6 {
		t.Fatalf("client: %+v", st)
	}
	c.sendAll([]byte("more"))
	if got := s.recvAll(4); string(got) != "more" {
		t.Fatalf("after withdrawal %q", got)
	}
	c.close()
	if b, errno := s.recv(10, 0); len(b) != 0 || errno != 0 {
		t.Fatalf("plain server after close: %q %v, want EOF", b, errno)
	}
}

// TestWithdrawAfterGrace: a creator whose peer never attaches and never sends withdraws at its
// first call after AttachGrace.
func TestWithdrawAfterGrace(t *testing.T) {
	env := testEnv(t, func(p *Params) { p.AttachGrace = 10 * time.Millisecond })
	c, s := pair(t, env, nil)
	c.sendAll([]byte("early"))
	if !c.tr.Stats().Paired {
		t.Fatalf("withdrew within the grace")
	}
	time.Sleep(20 * time.Millisecond)
	c.sendAll([]byte("late"))
	if st := c.tr.Stats(); st.Paired || env.Counts().WithdrawnGrace != 1 {
		t.Fatalf("not withdrawn after the grace: %+v %+v", st, env.Counts())
	}
	if got := s.recvAll(9); string(got) != "earlylate" {
		t.Fatalf("%q", got)
	}
}

// TestPeerFollowsWithdrawal: the creator withdraws (grace) while the peer had attached late but
// before the creator ever switched: the peer follows it back to the kernel, bytes exact.
func TestPeerFollowsWithdrawal(t *testing.T) {
	env := testEnv(t, func(p *Params) { p.AttachGrace = 5 * time.Millisecond })
	l, port := listen(t)
	cfd := dial(t, port)
	c := newEnd(t, env, cfd)
	c.tr.Established(cfd, false)
	time.Sleep(10 * time.Millisecond)
	c.sendAll([]byte("a")) // past the grace, not attached: withdraws
	sfd := accept(t, l)
	s := newEnd(t, env, sfd)
	s.tr.Established(sfd, true) // creates a fresh segment nobody will join
	s.sendAll([]byte("b"))
	if got := c.recvAll(1); string(got) != "b" {
		t.Fatalf("%q", got)
	}
	if got := s.recvAll(1); string(got) != "a" {
		t.Fatalf("%q", got)
	}
	time.Sleep(10 * time.Millisecond)
	s.sendAll([]byte("c"))
	if got := c.recvAll(1); string(got) != "c" {
		t.Fatalf("%q", got)
	}
	if s.tr.Stats().Paired || c.tr.Stats().Paired {
		t.Fatalf("still paired: %+v %+v", s.tr.Stats(), c.tr.Stats())
	}
}

// TestAttachedPeerOfUnswitchedClose: the creator closes before it ever switched while the peer
// had attached: the peer sees the kernel's EOF, and goes back to the kernel at its next send.
func TestAttachedPeerOfUnswitchedClose(t *testing.T) {
	env := testEnv(t, nil)
	c, s := pair(t, env, env)
	c.close() // the creator never made a call after the attach: it never switched
	if b, errno := s.recv(10, 0); len(b) != 0 || errno != 0 {
		t.Fatalf("recv after the creator's close: %q %v, want EOF", b, errno)
	}
	if n, errno := s.send([]byte("y"), 0x4000); n != 1 || errno != 0 { // MSG_NOSIGNAL
		t.Fatalf("first send to a closed kernel peer: %d %v (the kernel accepts it)", n, errno)
	}
	if st := s.tr.Stats(); st.TxRing || st.KernelTx != 1 {
		t.Fatalf("side 1 switched alone: %+v", st)
	}
	if st := s.tr.Stats(); st.Paired || env.Counts().PeerWithdrew != 1 {
		t.Fatalf("side 1 did not follow: %+v %+v", st, env.Counts())
	}
}
