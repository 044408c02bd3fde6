package shm

import (
	"net/netip"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport"
)

// Sends the preload library makes itself (shim/preload/rsend.c). After a send of an fd went into
// a ring, the transport hands the library the route it took (Params.RingRoute): the next sends
// of the fd to the same destination append their record to the same ring without entering the
// engine, for as long as nothing the route depends on changes. What it depends on and who
// withdraws what:
//
//   - the fd names the socket: the engine drops the fd's route when the fd goes, is replaced or
//     the socket connects (Params.RingRoute's owner, offload KernelSends.Drop), and tells the
//     transport (ForgetTx);
//   - the socket still sends through rings: its gate (ring.Gate), shut when it is shut for
//     writing, goes back to the kernel or closes;
//   - the directory's generation, the outlet's epoch, the socket's kernel sends count (a ring
//     datagram after a kernel one is marked, order.go): the library compares them at each send.

// TxRoute is a route as the library takes it.
type TxRoute struct {
	Dst     netip.AddrPort // the destination as the program names it
	Family  int            // the family of the address the program named (AF_INET6 for a mapped one)
	Peer    bool           // sends naming no destination (the connected peer's) take it too
	Max     int            // the largest payload
	Gen     uint64         // the directory's generation it was made at
	Prod    uintptr        // the outlet's producer state (ring.Outlet.Producer)
	Epoch   uint64
	Gate    uintptr // the socket's gate word and the value it holds while open
	GateVal uint64
	KCount  *uint64 // the socket's count of kernel sends (KernelTx) and its value before the send
	KSeen   uint64
	SockTx  *[2]uint64 // the socket's ring tx packets and bytes words
	Ringer  int        // the socket that rings doorbells (-1: none)
	Bell    []byte     // the receiver's doorbell (a sockaddr_un)
	Name    []byte     // the record's name
}

// txState is the socket's side of the library's sends: its gate and the route last handed over.
type txState struct {
	mu   sync.Mutex
	gate ring.Gate
	shut bool
	sent bool // a ring send went through the engine: the next one hands over
	// last is what was handed over last: the route, its fd, the kernel count it carried, the
	// outlet's epoch; a send that finds the same hands nothing over.
	last struct {
		r            *route
		fd           int
		kseen, epoch uint64
		peer         bool
	}
}

// handOver gives the library fd's route r after a send through it went into the ring with the
// kernel count kseen read before it (c: the call, which named no destination when peer).
func (u *UDP) handOver(c *transport.Call, r *route, kseen uint64) {
	if u.env.p.RingRoute == nil || u.KernelTx == nil || u.TxRing == nil || r.bell == nil ||
		(c.Op != transport.OpSendto && c.Op != transport.OpWrite) || r.bell.len > maxBell {
		return
	}
	t := &u.tx
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.sent {
		// a socket's first ring send hands nothing over: a socket per request (one send, its
		// answer, close) would pay the hand-over and the gate for no send of the library's
		t.sent = true
		return
	}
	peer := c.Op == transport.OpWrite || c.A[3] == 0
	prod, epoch := r.out.Producer()
	if t.shut || prod == 0 ||
		(t.last.r == r && t.last.fd == c.FD && t.last.kseen == kseen && t.last.epoch == epoch && t.last.peer == peer) {
		return
	}
	if gp, _ := t.gate.Addr(); gp == 0 {
		g, err := ring.NewGate()
		if err != nil {
			return
		}
		t.gate = g
	}
	gate, val := t.gate.Addr()
	family := unix.AF_INET
	if r.dst.Addr().Is6() {
		family = unix.AF_INET6 // a sockaddr_in6, a v4-mapped one too: the same key as its sockaddr_in
	}
	u.env.p.RingRoute(c.FD, &TxRoute{
		Dst: r.dst, Family: family, Peer: peer, Max: maxUDPPayload, Gen: r.gen, Prod: prod, Epoch: epoch, Gate: gate, GateVal: val,
		KCount: u.KernelTx, KSeen: kseen, SockTx: u.TxRing, Ringer: u.env.ringerFD(), Bell: r.bell.sa[:r.bell.len],
		Name: r.name[:r.nameLen],
	})
	t.last.r, t.last.fd, t.last.kseen, t.last.epoch, t.last.peer = r, c.FD, kseen, epoch, peer
}

// maxBell is the largest doorbell address a route carries (GOXIO_TXROUTE_BELL).
const maxBell = 64

// ForgetTx tells the transport that the library dropped fd's route: the next ring send of fd
// hands one over again.
func (u *UDP) ForgetTx(fd int) {
	t := &u.tx
	t.mu.Lock()
	if t.last.fd == fd {
		t.last.r = nil
	}
	t.mu.Unlock()
}

// shutTx stops the library's sends of the socket for good (shut for writing, back to the kernel,
// closed); free gives the gate's memory back (the socket is closed).
func (u *UDP) shutTx(free bool) {
	t := &u.tx
	t.mu.Lock()
	t.shut = true
	if free {
		t.gate.Free()
		t.gate = ring.Gate{}
	} else {
		t.gate.Shut()
	}
	t.last.r = nil
	t.mu.Unlock()
}

// kernelCount is the socket's count of kernel sends as the library compares it (0: none kept).
func (u *UDP) kernelCount() uint64 {
	if u.KernelTx == nil {
		return 0
	}
	return atomic.LoadUint64(u.KernelTx)
}
