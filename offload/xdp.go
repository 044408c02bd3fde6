package offload

import (
	"net/netip"

	"go.uber.org/zap"

	"github.com/goxio/goxio/offload/transport"
	shmtr "github.com/goxio/goxio/offload/transport/shm"
	xdptr "github.com/goxio/goxio/offload/transport/xdp"
)

// ringUDP is a UDP socket's ring transport as the engine drives it: the shared-memory transport
// (same-host goxio peers) or the AF_XDP one (a NIC). The engine tells it what the kernel socket
// learnt (Bound, Connected, Join, Leave, OptionSet, ShutWrite), sends it back to the kernel
// (GiveUp), hands its datagrams over before a fork (HandOver, SetSpill), asks it for select,
// poll and epoll (RingReady, Arrivals, Spin, Sleep, Bell, Rang, Quiet) and closes it with the
// socket's last fd.
type ringUDP interface {
	transport.Router
	Bound(fd int)
	Connected(fd int, peer netip.AddrPort)
	Join(fd int, group, source netip.Addr)
	Leave(group, source netip.Addr)
	OptionSet(fd, level, name int)
	ShutWrite()
	GiveUp(r transport.Reason)
	GaveUp() transport.Reason
	NextSize() (int, bool)
	HandOver() [][2][]byte
	SetSpill(region []byte)
	Close()

	RingReady() bool
	Arrivals() uint64
	Spin(on bool)
	Sleep(on bool)
	Bell() int
	Rang()
	Quiet()
}

var (
	_ ringUDP = (*shmtr.UDP)(nil)
	_ ringUDP = (*xdptr.UDP)(nil)
)

// ringUDP is the socket's ring transport, or nil.
func (s *Socket) ringUDP() ringUDP {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, _ := s.tr.(ringUDP)
	return u
}

// udpRings reports whether UDP sockets may get a ring transport (select, poll and epoll then
// look at their rings).
func (e *Engine) udpRings() bool { return e.cfg.SHM != nil || e.cfg.XDP != nil }

// useXDPLocked chooses the AF_XDP transport for an offloaded UDP socket whose role, local
// address and peer were just decided; s.mu is held. With only one ring transport configured
// that one serves every socket; with both, the AF_XDP transport takes the sockets whose traffic
// leaves through an interface it offloads (the route to the peer, or the interface of a
// specific bound address) and the shared-memory one everything else (wildcard and loopback
// receivers, same-host peers).
func (e *Engine) useXDPLocked(s *Socket) bool {
	if e.cfg.XDP == nil {
		return false
	}
	if e.cfg.SHM == nil {
		return true
	}
	return e.cfg.XDP.Serves(s.local, s.remote)
}

// offloadXDPLocked gives the socket the AF_XDP transport; s.mu is held. If the transport finds
// that it cannot steer the socket's traffic (the interface is busy with another XDP program,
// capabilities are missing, no offloaded interface has its address), the socket goes back to
// the kernel with that reason (xdpFallback).
func (e *Engine) offloadXDPLocked(s *Socket) {
	u := e.cfg.XDP.NewUDP(s.nonblock.Load)
	st := s.st
	u.OnRxDrop = func(bytes int) { st.CountRxDrop(bytes) }
	u.OnTxDrop = func() { st.CountTxDrop() }
	u.OnFallback = func(err error) { e.xdpFallback(s, u, err) }
	s.tr = u
	s.kind, s.reason = transport.KindXDP, transport.ReasonNone
}

// xdpFallback sends a socket of the AF_XDP transport back to the kernel for good: err says why
// no flow of it can be steered (logged once per interface by the transport).
func (e *Engine) xdpFallback(s *Socket, u *xdptr.UDP, err error) {
	r := xdptr.FallbackReason(err)
	u.GiveUp(r)
	s.mu.Lock()
	if s.tr == u {
		s.kind, s.reason = transport.KindOS, r
		s.publishLocked()
	}
	s.mu.Unlock()
	e.log.Debug("socket back to the kernel", zap.Stringer("reason", r), zap.Error(err))
}

// xdpFlush makes the kernel send the datagrams the AF_XDP transport's sends left on TX rings to
// share a kick, before any call other than a send: a receive (ping-pong), a wait, a close.
func (e *Engine) xdpFlush(c *transport.Call) {
	if e.cfg.XDP != nil && !c.Op.Send() {
		e.cfg.XDP.Flush()
	}
}

// xdpBeforeFork sends the AF_XDP transport's sockets the engine did not reach back to the
// kernel (the engine's BeforeFork handed its own over already).
func (e *Engine) xdpBeforeFork() {
	if e.cfg.XDP != nil {
		e.cfg.XDP.Flush()
		e.cfg.XDP.BeforeFork()
	}
}

// xdpShutdown makes the kernel send the datagrams left on TX rings to share a kick and publishes
// the AF_XDP rings' statistics a last time at exit. The steering
// programs and AF_XDP sockets are left to the kernel, which releases them when the process's
// fds close (as after SIGKILL): other threads may still be using the rings.
func (e *Engine) xdpShutdown() {
	if e.cfg.XDP != nil {
		e.cfg.XDP.Flush()
		e.cfg.XDP.PublishStats()
	}
}
