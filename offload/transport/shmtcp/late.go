package shmtcp

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport"
)

// Late pairing. Making a connection's segment costs a file, a mapping on each side and a dozen
// system calls: a connection that carries one request and its answer (an HTTP/1.0 client, a
// health check, a connection per RPC) would pay more for it than the kernel's TCP costs for the
// whole exchange. So a connection between a goxio connecting end and a goxio listener pairs
// late, through the pairing table (offload/shm/pairs.go):
//
//   - connect: the engine found a goxio listener at the address (GoxioPeer): the connecting end
//     registers the connection before connect returns to the program, so before it sends a
//     byte. No segment yet; every call goes to the kernel (counted).
//   - the connecting end's Params.PairAfter-th data call makes the segment (side 0) and marks
//     the entry ready; the bytes it moved through the kernel are its K.
//   - the accepting end (given its endpoints by the engine: Ends) looks its connection up at each
//     data call, with memory reads only: ready -> it attaches (side 1), its kernel bytes its K;
//     registered -> nothing yet; no entry and a byte already received from the peer (or
//     AttachGrace gone by) -> the peer is no goxio process: the kernel's for good.
//
// From there the switch-over is the same as for a connection paired at once (doc.go), except
// that the creator does not take its peer's kernel bytes for a sign of a stranger: the table
// said who the peer is. A connection whose ends were not given (tests, a connection accepted
// after its listener went) pairs at its first data call, as before.

var _ transport.Pairing = (*TCP)(nil)

// GoxioPeer tells a connecting socket that a goxio listener is at remote: it registers the
// connection (local -> remote) in the pairing table and pairs late. false when it cannot (no
// table, no room): the connection then never pairs, as with NoPeer.
func (t *TCP) GoxioPeer(local, remote netip.AddrPort) bool {
	p := t.env.pairTable()
	if p == nil || !local.IsValid() || !remote.IsValid() {
		return false
	}
	pe, ok := p.Register(local, remote)
	if !ok {
		return false
	}
	t.pair = pe
	t.pairEnds = [2]netip.AddrPort{local, remote}
	return true
}

// Early takes the counts of a connection the preload library served in its early phase
// (shim/preload/early.c): its kernel bytes are the K the pairing needs, its data calls count
// towards Params.PairAfter (the handing-over call is counted again by BeforeData), and its
// accept's time starts AttachGrace; a shutdown made meanwhile is noted as the Shutdown hook notes
// one before the segment exists. With NoPair it never pairs: its registration goes.
func (t *TCP) Early(p transport.EarlyPhase) {
	t.kernTx.Store(p.KernTx)
	t.kernRx.Store(p.KernRx)
	if p.Calls > 0 {
		t.calls.Store(int32(min(p.Calls-1, 1<<30)))
	}
	if t.acceptedAt != 0 {
		t.acceptedAt = nanotime() - int64(p.Age)
	}
	if p.ShutWrite {
		t.txShut() // the kernel's FIN ends our direction: it never switches
	}
	if p.ShutRead {
		t.rxShut()
	}
	if p.NoPair {
		t.pair.Drop()
		t.pair = ring.PairEntry{}
		t.NoPeer()
	}
}

// Ends gives an accepted connection of a listener that goxio connecting ends know its endpoints:
// it pairs late, when its peer says so in the pairing table. Call it before the socket is shared.
func (t *TCP) Ends(local, remote netip.AddrPort) {
	if local.IsValid() && remote.IsValid() {
		t.pairEnds = [2]netip.AddrPort{local, remote}
		t.acceptedAt = nanotime()
	}
}

// BeforeData tells the connection, at each data call until it got through, that it may pair:
// late through the pairing table when the engine gave its endpoints, otherwise at once, when
// the kernel socket has a peer (a non-blocking connect may still be in progress: the call then
// goes to the kernel, and the next one looks again). A server that forks right after accept
// (one child per connection) thus never pairs in the parent, and the child, which cannot read
// rings, gets everything through the kernel.
func (t *TCP) BeforeData(fd int) {
	if t.est.Load() != estNone || t.end.closed() {
		return
	}
	local, remote := t.pairEnds[0], t.pairEnds[1]
	switch {
	case t.pair.Registered():
		if t.calls.Add(1) < int32(t.env.p.PairAfter) {
			return
		}
		t.viaTable.Store(true)
		t.establish(fd, false, local, remote)
		if t.conn.Load() != nil {
			t.pair.Ready()
		} else if t.est.Load() == estDone {
			t.pair.Drop() // no segment: the peer learns it is on its own
		}
	case t.accepted && remote.IsValid():
		p := t.env.pairTable()
		if p == nil {
			t.NoPeer()
			return
		}
		switch p.Lookup(remote, local) {
		case ring.PairReady:
			t.viaTable.Store(true)
			t.establish(fd, true, local, remote)
		case ring.PairNone:
			if t.kernRx.Load() > 0 || nanotime()-t.acceptedAt > int64(t.env.p.AttachGrace) {
				t.NoPeer() // a goxio peer registers before it sends
			}
		}
	default:
		if remote = sysc.Peername(fd); !remote.IsValid() {
			return
		}
		if local = sysc.Sockname(fd); local.IsValid() {
			t.establish(fd, t.accepted, local, remote)
		}
	}
}

// peekCall reports whether a receive call leaves its bytes in the socket (MSG_PEEK), or reads
// urgent data (MSG_OOB, outside the stream): bytes that are not the stream's consumed ones.
func peekCall(c *transport.Call) bool { return c.RecvFlags()&(unix.MSG_PEEK|unix.MSG_OOB) != 0 }
