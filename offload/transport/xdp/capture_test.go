package xdp

import (
	"bytes"
	"net/netip"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/procstat"
	"github.com/goxio/goxio/offload/capture"
)

// TestCaptureTaps: with a capture attached, every frame sent through the TX ring and received
// through the RX ring is recorded whole (Ethernet, IPv4, UDP, payload), with its direction.
func TestCaptureTaps(t *testing.T) {
	inTopo(t, func(t *testing.T, tp *topo) {
		e := newEnv(t, Params{RxPoll: 100, RxUDPPollOSRatio: 10})
		a := newArena(t)
		s := newTsock(t, e, netip.AddrPort{})
		tv := unix.NsecToTimeval(int64(time.Second))
		unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		s.u.OptionSet(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
		peer := netip.AddrPortFrom(tp.addrB, 7000)
		b := kernelSocket(t, tp.nsB, peer)
		// Until the neighbour is resolved sends go through the kernel.
		deadline := time.Now().Add(3 * time.Second)
		for i := 0; s.u.Counts().XDPTx == 0; i++ {
			if time.Now().After(deadline) {
				t.Fatalf("no send through the ring after 3 s")
			}
			s.sendto(a, payloadOf("w", i), peer, 0)
			kernelRecv(t, b)
			time.Sleep(time.Millisecond)
		}
		local := s.local()

		start, err := procstat.SelfStart()
		if err != nil {
			t.Fatal(err)
		}
		word := new(uint64)
		capture.Init(word, os.Getpid(), func(err error) { t.Errorf("attach: %v", err) })
		seg, err := capture.Create(capture.Spec{Pid: os.Getpid(), UID: os.Getuid(), Gen: uint64(os.Getpid())<<32 | 1,
			ToolPid: os.Getpid(), ToolStart: start, Sockets: 64, RingSize: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer seg.Close()
		atomic.StoreUint64(word, uint64(os.Getpid())<<32|1)
		const n = 20
		for i := range n {
			p := payloadOf("c", i)
			if _, errno, viaOS := s.sendto(a, p, peer, 0); errno != 0 || viaOS {
				t.Fatalf("send %d: %v viaOS=%v", i, errno, viaOS)
			}
			kernelRecv(t, b)
			if err := unix.Sendto(b, payloadOf("d", i), 0, sa4(netip.AddrPortFrom(tp.addrA, local.Port()))); err != nil {
				t.Fatal(err)
			}
			if got, _, _, errno, viaOS := s.recvfrom(a, 2048, 0); errno != 0 || viaOS || !bytes.Equal(got, payloadOf("d", i)) {
				t.Fatalf("answer %d: %q %v viaOS=%v", i, got, errno, viaOS)
			}
		}
		var out, in int
		err = seg.Drain(func(r *capture.Record) {
			if r.Transport != capture.XDP || len(r.Data) < capture.UDPHdrLen || r.FD != s.fd {
				t.Fatalf("record %+v", r)
			}
			payload := r.Data[capture.UDPHdrLen:]
			switch r.Dir {
			case capture.Out:
				if !bytes.Equal(payload, payloadOf("c", out)) {
					t.Fatalf("sent frame %d: payload %q", out, payload)
				}
				out++
			case capture.In:
				if !bytes.Equal(payload, payloadOf("d", in)) {
					t.Fatalf("received frame %d: payload %q", in, payload)
				}
				in++
			}
		})
		if err != nil || out != n || in != n {
			t.Fatalf("%d sent and %d received frames recorded (%v), want %d each", out, in, err, n)
		}
		atomic.StoreUint64(word, uint64(os.Getpid())<<32|1|capture.Detach)
		s.sendto(a, payloadOf("e", 0), peer, 0) // acknowledges the detach
		if atomic.LoadUint64(word) != 0 {
			t.Fatalf("capture word %#x after the detach", atomic.LoadUint64(word))
		}
		s.close()
		checkNoLeak(t, e)
	})
}
