package shmtcp

import (
	"net/netip"

	"github.com/goxio/goxio/offload/capture"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/transport"
)

// Taps for goxio capture (offload/capture). Each direction of a connection is numbered as a TCP
// stream would be: sequence number = an initial number derived from the direction's endpoints
// (so both processes number a direction alike) + the byte's offset in the direction (its kernel
// bytes before the switch, K, then the ring's). Wireshark's "Follow TCP stream" of a capture then
// gives back the bytes the program sent, per direction. The send and receive paths call these
// behind capture.On(), one relaxed load while no capture is attached.

// capEnds is a connection's endpoints as the taps name them, looked up at the first tap.
type capEnds struct{ local, remote netip.AddrPort }

// ends returns the connection's endpoints (nil when the kernel does not know them).
func (t *TCP) ends(fd int) *capEnds {
	if e := t.capEnds.Load(); e != nil {
		return e
	}
	e := &capEnds{local: sockname(fd, false), remote: sockname(fd, true)}
	if !e.local.IsValid() || !e.remote.IsValid() {
		return nil
	}
	// A dual-stack socket talking IPv4 names v4-mapped addresses: the wire (and the sequence
	// numbers both ends derive, whatever their family) carries the IPv4 ones.
	e.local = netip.AddrPortFrom(e.local.Addr().Unmap(), e.local.Port())
	e.remote = netip.AddrPortFrom(e.remote.Addr().Unmap(), e.remote.Port())
	t.capEnds.Store(e)
	return e
}

// isn is the initial sequence number of the direction from src to dst (FNV-1a of the endpoints).
func isn(src, dst netip.AddrPort) uint32 {
	h := uint32(2166136261)
	for _, a := range [...]netip.AddrPort{src, dst} {
		for _, b := range a.Addr().AsSlice() {
			h = (h ^ uint32(b)) * 16777619
		}
		for _, b := range [...]byte{byte(a.Port() >> 8), byte(a.Port())} {
			h = (h ^ uint32(b)) * 16777619
		}
	}
	return h
}

// tapOut taps n bytes of bufs the connection sent, the first at offset pos of our direction.
func (t *TCP) tapOut(fd int, via uint8, bufs [][]byte, n int, pos uint64) {
	e := t.ends(fd)
	if e == nil {
		return
	}
	ack := isn(e.remote, e.local) + uint32(t.kernRx.Load()+t.ringRx.Load())
	capture.TCP(via, capture.Out, fd, t.peerPID(), e.local, e.remote, isn(e.local, e.remote)+uint32(pos), ack, bufs, n)
}

// tapIn taps n bytes of bufs the connection received, the first at offset pos of the peer's
// direction.
func (t *TCP) tapIn(fd int, via uint8, bufs [][]byte, n int, pos uint64) {
	e := t.ends(fd)
	if e == nil {
		return
	}
	ack := isn(e.local, e.remote) + uint32(t.kernTx.Load()+t.ringTx.Load())
	capture.TCP(via, capture.In, fd, t.peerPID(), e.remote, e.local, isn(e.remote, e.local)+uint32(pos), ack, bufs, n)
}

// tapKernelSend taps a send the kernel took before our switch (n bytes at offset pos).
func (t *TCP) tapKernelSend(c *transport.Call, n int, pos uint64) {
	var arr [maxBufs][]byte
	if d, ok := parseCall(c, arr[:0]); ok && n <= d.total {
		t.tapOut(c.FD, capture.Kernel, d.bufs, n, pos)
	}
}

// tapEarly taps a data call of n bytes that went to the kernel before a late-paired connection
// made its segment (late.go): those bytes start each direction (its K), as on a connection that
// paired at once; the offsets are the direction's kernel bytes before the call.
func (t *TCP) tapEarly(c *transport.Call, n int) {
	umem.Protect()
	defer func() { _ = umem.Fault(recover()) }() // the program's buffer went away: no record
	if c.Op.Send() {
		t.tapKernelSend(c, n, t.kernTx.Load())
		return
	}
	var arr [maxBufs][]byte
	if d, ok := parseCall(c, arr[:0]); ok && !d.discard && n <= d.total {
		t.tapIn(c.FD, capture.Kernel, d.bufs, n, t.kernRx.Load())
	}
}

// peerPID is the process at the other end of the segment (0: none, or not known yet).
func (t *TCP) peerPID() int {
	if conn := t.conn.Load(); conn != nil {
		return conn.PeerPID()
	}
	return 0
}
