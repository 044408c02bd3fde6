package xdp

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// idleKicker is a Kicker whose thread never runs: deferred frames leave only when the
// transport kicks them itself.
type idleKicker struct{ arms atomic.Int64 }

func (k *idleKicker) Slot(int) *atomic.Int64 { return new(atomic.Int64) }
func (k *idleKicker) Release(*atomic.Int64)  {}
func (k *idleKicker) Arm()                   { k.arms.Add(1) }

// sendmmsg makes a sendmmsg call of payloads to dst through the transport and returns its
// result and each message's msg_len.
func (s *tsock) sendmmsg(a *arena, payloads [][]byte, dst netip.AddrPort) (int, []uint32) {
	const mmsgSize = 64 // struct mmsghdr: msghdr (56 bytes) and msg_len, padded
	vec := a.alloc(mmsgSize * len(payloads))
	sb := a.alloc(unix.SizeofSockaddrInet4)
	binary.NativeEndian.PutUint16(sb, unix.AF_INET)
	binary.BigEndian.PutUint16(sb[2:], dst.Port())
	ip := dst.Addr().As4()
	copy(sb[4:], ip[:])
	for i, p := range payloads {
		buf := a.alloc(len(p))
		copy(buf, p)
		iov := a.alloc(16)
		binary.NativeEndian.PutUint64(iov, uint64(addr(buf)))
		binary.NativeEndian.PutUint64(iov[8:], uint64(len(p)))
		m := vec[i*mmsgSize:]
		binary.NativeEndian.PutUint64(m[0:], uint64(addr(sb)))
		binary.NativeEndian.PutUint32(m[8:], unix.SizeofSockaddrInet4)
		binary.NativeEndian.PutUint64(m[16:], uint64(addr(iov)))
		binary.NativeEndian.PutUint64(m[24:], 1)
	}
	n, errno, _ := s.u.TransferVia(transport.Call{Op: transport.OpSendmmsg, FD: s.fd,
		A: [5]uintptr{addr(vec), uintptr(len(payloads)), 0}})
	if errno != 0 {
		return -int(errno), nil
	}
	lens := make([]uint32, len(payloads))
	for i := range lens {
		lens[i] = binary.NativeEndian.Uint32(vec[i*mmsgSize+56:])
	}
	return n, lens
}

// TestSendmmsgOneKick: with a kicker that never runs, and without a kicker (shared kicks off, the
// default), a sendmmsg batch goes out through the ring with one kick at its end, every message's
// msg_len set, nothing left on the TX ring.
func TestSendmmsgOneKick(t *testing.T) {
	t.Run("idle-kicker", func(t *testing.T) { sendmmsgOneKick(t, &idleKicker{}) })
	t.Run("no-kicker", func(t *testing.T) { sendmmsgOneKick(t, nil) })
}

func sendmmsgOneKick(t *testing.T, k Kicker) {
	inTopo(t, func(t *testing.T, tp *topo) {
		e := newEnv(t, Params{RxPoll: 100, Kicker: k})
		a := newArena(t)
		s := newTsock(t, e, netip.AddrPortFrom(tp.addrA, 0))
		peer := netip.AddrPortFrom(tp.addrB, 7400)
		b := kernelSocket(t, tp.nsB, peer)
		// The first sends resolve the neighbour through the kernel.
		deadline := time.Now().Add(3 * time.Second)
		for i := 0; s.u.Counts().XDPTx == 0; i++ {
			if time.Now().After(deadline) {
				t.Fatalf("no send through the ring after 3 s: %+v", s.u.Counts())
			}
			if _, errno, _ := s.sendto(a, payloadOf("w", i), peer, 0); errno != 0 {
				t.Fatalf("send: %v", errno)
			}
			kernelRecv(t, b)
			time.Sleep(time.Millisecond)
		}
		const vlen = 24 // below the kernel's 32-frame budget: one kick sends them all
		payloads := make([][]byte, vlen)
		for i := range payloads {
			payloads[i] = payloadOf("m", i)
		}
		kicks0 := e.RingStats()[0].Stats.TxWakeups
		tx0 := s.u.Counts().XDPTx
		n, lens := s.sendmmsg(a, payloads, peer)
		if n != vlen {
			t.Fatalf("sendmmsg: %d, want %d", n, vlen)
		}
		for i, l := range lens {
			if int(l) != len(payloads[i]) {
				t.Fatalf("msg_len of message %d: %d, want %d", i, l, len(payloads[i]))
			}
		}
		if kicks := e.RingStats()[0].Stats.TxWakeups - kicks0; kicks != 1 {
			t.Errorf("sendmmsg of %d datagrams made %d kicks, want 1", vlen, kicks)
		}
		if c := s.u.Counts(); c.XDPTx-tx0 != vlen {
			t.Errorf("counts %+v: %d through the ring, want %d", c, c.XDPTx-tx0, vlen)
		}
		for i := range vlen {
			if got, _ := kernelRecv(t, b); !bytes.Equal(got, payloads[i]) {
				t.Fatalf("peer got %q, want %q", got, payloads[i])
			}
		}
		if d := e.dirty.Load(); d != 0 {
			t.Errorf("%d AF_XDP sockets with frames not kicked after sendmmsg", d)
		}
		s.close()
		checkNoLeak(t, e)
	})
}
